package atleastonce

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
)

// aloneQueue holds the records to produce again beside the stream (see
// Delivery.ack), and the events the stream queued behind them: each
// key's in stream order (by Inflight.Seq), whatever order they were
// pushed in, so that a record franz-go fails after the stream queued a
// later event of its key still goes first. Safe for concurrent use; push
// and nudge never block (they run on the producer's callback goroutine).
type aloneQueue struct {
	mu    sync.Mutex
	byKey map[string][]*delivery.Inflight // topic and key → its items, by Seq
	loose []*delivery.Inflight            // items without a key, never ordered
	n     atomic.Int32                    // items queued, read without mu
	wake  chan struct{}                   // has a token while items may be ready
	// keyOf is the key an event is ordered by (keyorder.Order.OrderKey):
	// its record key, or, ordering by topic, one key for its topic.
	keyOf func(*decoder.Event) []byte
}

// aloneRound is the most records one round takes.
const aloneRound = 4096

// aloneSafety is how long take waits, with items queued, for a push or a
// nudge before it looks again all the same.
const aloneSafety = 50 * time.Millisecond

func newAloneQueue(keyOf func(*decoder.Event) []byte) *aloneQueue {
	return &aloneQueue{byKey: map[string][]*delivery.Inflight{}, wake: make(chan struct{}, 1), keyOf: keyOf}
}

// aloneKey names it's topic and order key (keyOf) in byKey, and reports
// whether it has one (ok false: never ordered).
func aloneKey(it *delivery.Inflight, keyOf func(*decoder.Event) []byte) (k string, ok bool) {
	key := keyOf(&it.Event)
	if key == nil {
		return "", false
	}
	return it.Event.Topic + "\x00" + string(key), true
}

func (q *aloneQueue) push(it *delivery.Inflight) {
	q.mu.Lock()
	if k, ok := aloneKey(it, q.keyOf); !ok {
		q.loose = append(q.loose, it)
	} else {
		items := append(q.byKey[k], it)
		for i := len(items) - 1; i > 0 && items[i-1].Seq > items[i].Seq; i-- {
			items[i-1], items[i] = items[i], items[i-1] // pushed after a later one of its key
		}
		q.byKey[k] = items
	}
	q.n.Add(1)
	q.mu.Unlock()
	q.nudge()
}

// nudge wakes take: an item may have become ready (its key's last record
// left the producer).
func (q *aloneQueue) nudge() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// waiting reports whether items are queued.
func (q *aloneQueue) waiting() bool { return q.n.Load() > 0 }

// take returns the next round, in stream order: for each key whose
// earliest item ready says may go (no earlier record of its key can
// still join the queue), its items, and every ready item without a key;
// at most aloneRound. It waits until there is one, woken by push and
// nudge; nil once ctx ends. A key's items go together, in order, into
// its one partition: the idempotent producer keeps a partition's order,
// and fails every record behind one the broker refuses, so none of them
// reaches Kafka before an earlier one is settled; one refused is parked,
// and those behind it, produced again, are parked behind it.
func (q *aloneQueue) take(ctx context.Context, ready func(*delivery.Inflight) bool) []*delivery.Inflight {
	for {
		if took := q.round(ready); len(took) > 0 {
			return took
		}
		var safety <-chan time.Time
		if q.waiting() {
			safety = time.After(aloneSafety)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-q.wake:
		case <-safety:
		}
	}
}

// round takes the items of the next round out of the queue: it asks
// ready of each key's earliest item only, not of every item queued.
func (q *aloneQueue) round(ready func(*delivery.Inflight) bool) []*delivery.Inflight {
	q.mu.Lock()
	defer q.mu.Unlock()
	var took []*delivery.Inflight
	for k, items := range q.byKey {
		if len(took) >= aloneRound {
			break
		}
		if !ready(items[0]) {
			continue
		}
		n := min(len(items), aloneRound-len(took))
		took = append(took, items[:n]...)
		if n == len(items) {
			delete(q.byKey, k)
		} else {
			clear(items[:n])
			q.byKey[k] = items[n:]
		}
	}
	kept := q.loose[:0]
	for _, it := range q.loose {
		if len(took) < aloneRound && ready(it) {
			took = append(took, it)
		} else {
			kept = append(kept, it)
		}
	}
	clear(q.loose[len(kept):])
	q.loose = kept
	q.n.Add(-int32(len(took)))
	slices.SortFunc(took, func(a, b *delivery.Inflight) int { return cmp.Compare(a.Seq, b.Seq) })
	return took
}
