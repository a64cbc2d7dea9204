package backfill

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/republish"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Publisher is a publisher beside Kafka that the table's events go to (a
// webhook's: its lanes' ProduceWait), and the topics it takes.
type Publisher struct {
	// Name names the publisher in the log.
	Name string
	// Producer sends a batch's records and waits for each one's answer.
	// While every record's error is one the receiver may yet take
	// (Again), the records that got one are sent again, in their order,
	// until they are taken or the backfill stops; a refusal (any other
	// error) ends the backfill, naming its row's key, as Kafka's refusal
	// does.
	Producer republish.Producer
	// Again reports whether a record that got err may be taken later;
	// nil: when err is not permanent (sink.Permanent).
	Again func(err error) bool
	// Sends reports whether the table's events of topic go to the
	// publisher.
	Sends func(topic string) bool
}

// again is p.Again, or its default.
func (p Publisher) again(err error) bool {
	if p.Again != nil {
		return p.Again(err)
	}
	return !sink.Permanent(err)
}

// againAfter is the wait before a publisher's records that may be taken
// later are sent again: the lanes wait for their receiver's next probe
// too, so this only spaces the tries of a receiver that fails at once.
const againAfter = 500 * time.Millisecond

// fanOut is the backfill's producer when the table's events go to
// publishers beside Kafka: each record goes to Kafka (if Config.KafkaSends
// its topic) and to every publisher that sends its topic, all of them at
// once; a record's outcome is its first error among them, nil once every
// one took it.
type fanOut struct {
	kafka      republish.Producer
	kafkaSends func(topic string) bool
	pubs       []Publisher
	log        func(msg string, args ...any)
}

// ProduceWait produces recs to their publishers and waits for every
// answer: see fanOut.
func (f *fanOut) ProduceWait(ctx context.Context, recs []*kgo.Record) []error {
	errs := make([]error, len(recs))
	var mu sync.Mutex
	settle := func(idx []int, out []error) {
		mu.Lock()
		defer mu.Unlock()
		for j, i := range idx {
			if out[j] != nil && errs[i] == nil {
				errs[i] = out[j]
			}
		}
	}
	// Each publisher sends copies of its own, made before any send:
	// Kafka's producer writes its records (partition, offset, time).
	type part struct {
		idx  []int
		recs []*kgo.Record
	}
	parts := make([]part, len(f.pubs))
	for i, p := range f.pubs {
		idx, sub := of(recs, p.Sends)
		for j, r := range sub {
			c := *r
			sub[j] = &c
		}
		parts[i] = part{idx, sub}
	}
	var wg sync.WaitGroup
	if idx, sub := of(recs, f.kafkaSends); len(idx) > 0 {
		wg.Go(func() { settle(idx, f.kafka.ProduceWait(ctx, sub)) })
	}
	for i, p := range f.pubs {
		if pt := parts[i]; len(pt.idx) > 0 {
			wg.Go(func() { settle(pt.idx, f.untilTaken(ctx, p, pt.recs)) })
		}
	}
	wg.Wait()
	return errs
}

// of returns the records of recs whose topic sends takes (every one for
// a nil sends), and their indexes in recs.
func of(recs []*kgo.Record, sends func(topic string) bool) (idx []int, sub []*kgo.Record) {
	for i, r := range recs {
		if sends == nil || sends(r.Topic) {
			idx, sub = append(idx, i), append(sub, r)
		}
	}
	return idx, sub
}

// untilTaken sends recs to p until each is taken, or one is refused, or
// ctx ends: while every error is one to try again (Publisher.Again), the
// records that got one are sent again, in their order, after againAfter;
// the outage is logged once. A refusal stops the tries (a later record
// of its key, not sent behind it, is not sent after it either).
func (f *fanOut) untilTaken(ctx context.Context, p Publisher, recs []*kgo.Record) []error {
	errs := p.Producer.ProduceWait(ctx, recs)
	told := false
	for {
		var idx []int
		refused := false
		for i, err := range errs {
			switch {
			case err == nil:
			case p.again(err):
				idx = append(idx, i)
			default:
				refused = true
			}
		}
		if refused {
			return errs
		}
		if len(idx) == 0 || ctx.Err() != nil {
			if told && len(idx) == 0 {
				f.log("the publisher's receiver took the backfill's records again", "publisher", p.Name)
			}
			return errs
		}
		if !told {
			f.log("the publisher's receiver is not taking the backfill's records; sending them again until it does (stop with Ctrl-C, and resume with the --after the report prints)",
				"publisher", p.Name, "records", len(idx), "err", errs[idx[0]])
			told = true
		}
		select {
		case <-ctx.Done():
			return errs
		case <-time.After(againAfter):
		}
		sub := make([]*kgo.Record, len(idx))
		for j, i := range idx {
			sub[j] = recs[i]
		}
		for j, err := range p.Producer.ProduceWait(ctx, sub) {
			errs[idx[j]] = err
		}
	}
}

// sendsAny reports whether Kafka (kafkaSends, nil: every topic) or one of
// pubs takes topic: a record of no publisher's topic is not made.
func sendsAny(kafkaSends func(string) bool, pubs []Publisher) func(topic string) bool {
	return func(topic string) bool {
		if kafkaSends == nil || kafkaSends(topic) {
			return true
		}
		for _, p := range pubs {
			if p.Sends(topic) {
				return true
			}
		}
		return false
	}
}
