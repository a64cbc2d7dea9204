package atleastonce

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Producer is what at-least-once delivery needs of the Kafka producer
// (*sink.Sink).
type Producer interface {
	// Produce sends r asynchronously and calls done once with the outcome.
	Produce(ctx context.Context, r *kgo.Record, done func(*kgo.Record, error))
	// ProduceAlone sends r in a batch of its own and returns the outcome.
	ProduceAlone(ctx context.Context, r *kgo.Record) error
	// ProduceGroup sends recs beside the stream, each partition's in
	// order, and returns each one's outcome.
	ProduceGroup(ctx context.Context, recs []*kgo.Record) []error
	// BatchMaxBytes is the most bytes of records in one batch: a record
	// within it, refused with its batch, may fit alone.
	BatchMaxBytes() int
	// Refuses returns the error Kafka would refuse r with, known before
	// producing it (too large for the batch limit or its topic), or nil.
	Refuses(r *kgo.Record) error
	// SizeRefused is told that Kafka refused a record of topic as too
	// large: the topic's limit may have changed.
	SizeRefused(topic string)
}

// Delivery is the default delivery: each record is produced on its own
// with the idempotent producer, and counted out of flight once Kafka acks
// it, or once it is parked in the status table when Kafka refuses it for
// good. A record refused with its batch is produced again beside the
// stream, each key's in the order they failed, and alone if it is refused
// again, to learn whether it was its own fault.
type Delivery struct {
	*delivery.Ledger
	producer    Producer
	onAck       func(*kgo.Record, error) // ack, one func value for every record
	alone       *aloneQueue              // records to produce again beside the stream, each key's in stream order
	undelivered atomic.Int64
}

// New returns the delivery of l's session through producer. It starts
// the goroutine that produces records again alone, which ends with
// l.ProduceCtx.
func New(l *delivery.Ledger, producer Producer) *Delivery {
	d := &Delivery{Ledger: l, producer: producer, alone: newAloneQueue(l.Order.OrderKey)}
	d.onAck = d.ack
	// A key's events that waited for the poller's drain of its held rows
	// may go once it ended.
	d.order().OnDrained(d.alone.nudge)
	go d.produceAlone()
	return d
}

// refusedKey is it's aloneKey, "" for an event not ordered.
func (d *Delivery) refusedKey(it *delivery.Inflight) string {
	k, _ := aloneKey(it, d.order().OrderKey)
	return k
}

// order is the session's key order (the Ledger's): what the callbacks and
// the alone queue consult for every record. Named here, keyorder is
// imported directly, and the compiler inlines its small methods here
// (it does not from packages imported only through another).
func (d *Delivery) order() *keyorder.Order { return d.Order }

// Produce sends it, or queues it behind its key's record waiting to be
// produced alone (the pipeline marked it so), or parks it without
// producing it when the producer says Kafka would refuse it (refused).
func (d *Delivery) Produce(it *delivery.Inflight) {
	if it.Alone {
		d.alone.push(it)
		return
	}
	if err := d.producer.Refuses(&it.Record); err != nil {
		d.refused(it, err)
		return
	}
	d.order().IntoProducer(&it.Event, &it.Place)
	d.producer.Produce(d.ProduceCtx, &it.Record, d.onAck)
}

// refused parks it, a record Kafka would refuse (err), as Kafka's
// refusal would have, but without producing it, so that no later record
// of its key can reach Kafka before it is held: FAILED at once (its key
// held from now on, before the stream reads on) when no record of its
// key is in the producer; otherwise through the alone queue, after
// those, any of which may yet fail and must be parked before it.
func (d *Delivery) refused(it *delivery.Inflight, err error) {
	d.Metrics.ProduceErrors.WithLabelValues(sink.ErrorName(err)).Inc()
	if d.order().MayGoAlone(&it.Event) {
		go d.ParkInOrder(it, d.FailedAs(err))()
		return
	}
	it.Alone, it.Failed = true, err
	d.order().HoldAlone(&it.Event, it.Seq)
	d.alone.push(it)
}

// Park runs store, a park, beside the stream.
func (d *Delivery) Park(_ *delivery.Inflight, store func() bool) { go store() }

// EndTxn: each record is settled on its own; nothing waits for the end of
// its transaction.
func (d *Delivery) EndTxn(*checkpoint.Txn, pglogrepl.LSN) {}

// Commit: every acked record is visible to consumers already.
func (d *Delivery) Commit(context.Context) error { return nil }

// produceAlone produces the records of d.alone again, round after
// round (aloneQueue.take: each key's queued records once no earlier
// record of its key is left in the producer), and acks each with its
// outcome, until ProduceCtx ends (what is left then stays unconfirmed and
// is sent again by the next session).
func (d *Delivery) produceAlone() {
	ready := func(it *delivery.Inflight) bool { return d.order().MayGoAlone(&it.Event) }
	for round := d.alone.take(d.ProduceCtx, ready); round != nil; round = d.alone.take(d.ProduceCtx, ready) {
		d.produceRound(round)
	}
}

// produceRound parks the records of one round that must be parked
// (parkAs), in stream order, and produces the others together
// (produceTogether), each key's in stream order into its partition.
func (d *Delivery) produceRound(round []*delivery.Inflight) {
	d.produceTogether(d.unparked(round))
}

// unparked parks those of items that must be parked (parkAs), in order,
// and returns the others, each key's in order. Once a key has a record
// to send, its later items go with it, asked only whether the producer
// would refuse them (Refuses): the broker fails every record behind one
// of the partition's it refuses (and parkAs asks again of those before
// they go again). But one that failed for good already (it.Failed), or
// that the producer would refuse before sending it (it would fail alone,
// and the records behind it go on), goes back to the queue with those
// behind it, for a later round, to be parked once the records before it
// are settled.
func (d *Delivery) unparked(items []*delivery.Inflight) []*delivery.Inflight {
	send := make([]*delivery.Inflight, 0, len(items))
	var sending, deferred map[string]bool // by aloneKey
	for _, it := range items {
		k, _ := aloneKey(it, d.order().OrderKey)
		switch {
		case k != "" && (deferred[k] || sending[k] && it.Failed != nil):
			if deferred == nil {
				deferred = map[string]bool{}
			}
			deferred[k] = true
			d.alone.push(it) // its hold stays: settled in a later round
			continue
		case k != "" && sending[k]:
			if err := d.producer.Refuses(&it.Record); err != nil {
				// The producer fails it before sending it, but not the
				// records behind it: it and they wait for a later
				// round, once those before it are settled.
				d.Metrics.ProduceErrors.WithLabelValues(sink.ErrorName(err)).Inc()
				it.Failed = err
				if deferred == nil {
					deferred = map[string]bool{}
				}
				deferred[k] = true
				d.alone.push(it)
				continue
			}
			send = append(send, it)
			continue
		}
		if as, park := d.parkAs(it); park {
			go d.ParkInOrder(it, as)()
			d.order().DoneAlone(&it.Event)
			continue
		}
		if k != "" {
			if sending == nil {
				sending = map[string]bool{}
			}
			sending[k] = true
		}
		send = append(send, it)
	}
	return send
}

// produceTogether produces send, each key's records in stream order,
// together (ProduceGroup), one alone, and acks each that Kafka answered
// for itself; those refused with their batch go again in halves, down to
// a record alone, so that one refused record costs a few produces of its
// round, not one per record of its batch. A record refused for good
// holds its key (ack parks it); its key's later records, which the
// producer fails behind it, are parked behind it (WAITING) rather than
// for its error.
func (d *Delivery) produceTogether(send []*delivery.Inflight) {
	switch len(send) {
	case 0:
		return
	case 1:
		d.produceOneAlone(send[0])
		return
	}
	recs := make([]*kgo.Record, len(send))
	for i, it := range send {
		recs[i] = &it.Record
	}
	var again, behind []*delivery.Inflight
	var refused map[string]bool // the keys of the records refused for good, by aloneKey
	for i, err := range d.producer.ProduceGroup(d.ProduceCtx, recs) {
		it := send[i]
		switch {
		case err != nil && goesAgain(err):
			again = append(again, it)
		case err != nil && refused[d.refusedKey(it)]:
			behind = append(behind, it)
		default:
			if err != nil && sink.Permanent(err) {
				if k := d.refusedKey(it); k != "" {
					if refused == nil {
						refused = map[string]bool{}
					}
					refused[k] = true
				}
			}
			d.ack(recs[i], err)
		}
	}
	d.produceTogether(d.unparked(behind))
	half := (len(again) + 1) / 2
	d.produceTogether(d.unparked(again[:half]))
	d.produceTogether(d.unparked(again[half:]))
}

// parkAs says how it, taken from the alone queue, is parked instead of
// produced: FAILED if it failed for good already (it.Failed) or Kafka
// would refuse it, PAUSED if its topic is paused, WAITING if its key
// became held meanwhile.
func (d *Delivery) parkAs(it *delivery.Inflight) (delivery.ParkAs, bool) {
	if it.Failed != nil {
		return d.FailedAs(it.Failed), true
	}
	if d.order().TopicPaused(it.Event.Topic) {
		return d.PausedAs(), true
	}
	if held, head := d.order().ParkedHeld(&it.Event); held {
		return d.WaitingAs(it, head), true
	}
	if err := d.producer.Refuses(&it.Record); err != nil {
		d.Metrics.ProduceErrors.WithLabelValues(sink.ErrorName(err)).Inc()
		return d.FailedAs(err), true
	}
	return delivery.ParkAs{}, false
}

// produceOneAlone produces it in a batch of its own and acks it, or parks
// it (parkAs).
func (d *Delivery) produceOneAlone(it *delivery.Inflight) {
	if as, park := d.parkAs(it); park {
		go d.ParkInOrder(it, as)()
		d.order().DoneAlone(&it.Event)
		return
	}
	d.ack(&it.Record, d.producer.ProduceAlone(d.ProduceCtx, &it.Record))
}

// ack is the producer callback of every record. It holds the key of a
// record that failed before it returns: franz-go calls back a partition's
// failed records in order, on one goroutine, so a key's records are held
// in order, and the stream parks or queues the key's later events.
func (d *Delivery) ack(r *kgo.Record, err error) {
	it := delivery.InflightOf(r)
	// Last, once a failure held its key: the alone queue waits for its
	// key's records to leave the producer.
	defer d.outOfProducer(it)
	if it.Alone {
		// Its hold while it waited alone ends once its outcome holds the
		// key, if it failed.
		defer d.order().DoneAlone(&it.Event)
	}
	if err != nil {
		d.Metrics.ProduceErrors.WithLabelValues(sink.ErrorName(err)).Inc()
		if sink.TooLarge(err) {
			d.producer.SizeRefused(r.Topic)
		}
	}
	switch {
	case err == nil:
		d.Metrics.CommitToAck.Observe(max(0, time.Since(it.Txn().CommitTime()).Seconds()))
		d.Count.Events.Add(1)
		d.checkOrder(it)
		d.Delivered(it)
	case sink.ProducerRefused(err) && d.Stop != nil && !delivery.FromPublisher(err):
		// Every record would fail so: the event stays in flight, and the
		// session ends for the operator to fix the cause.
		if sink.AuthFailed(err) {
			d.Stop(fatal.Error{Err: fmt.Errorf("Kafka refuses the relay's connection (%w): "+
				"check the --kafka-tls-* and --kafka-sasl-* settings against the brokers' listener", err)})
		} else {
			d.Stop(fatal.Error{Err: fmt.Errorf("Kafka refuses the relay's producer (%w): "+
				"grant the relay's principal WRITE and IDEMPOTENT_WRITE on the cluster", err)})
		}
	case !it.Alone && d.goesAlone(r, err):
		// The broker refused the batch the record was in (a topic whose
		// max.message.bytes is below the batch size, another record's
		// fault), not necessarily the record, or a publisher's lanes did
		// not send it behind its key's refused record: alone, it is
		// delivered, fails for itself, or is parked behind that one. Records go again in the order they failed,
		// each key's together in stream order, so a key's order holds
		// among them.
		it.Alone = true
		d.order().HoldAlone(&it.Event, it.Seq)
		d.alone.push(it)
	case sink.Permanent(err) && !it.Alone && d.order().AloneHeld(&it.Event):
		// An earlier record of its key waits to be produced alone: it is
		// parked after that one's outcome, in the key's order.
		it.Alone, it.Failed = true, err
		d.order().HoldAlone(&it.Event, it.Seq)
		d.alone.push(it)
	case sink.Permanent(err):
		go d.ParkInOrder(it, d.FailedAs(err))()
	default:
		// Not delivered (the producer is closing, or the session ended):
		// the event stays in flight, its transaction unconfirmed, and
		// PostgreSQL sends it again after a restart. Said once, not per
		// event.
		if d.undelivered.Add(1) == 1 {
			d.Log.Warn("events not delivered; they will be sent again after a restart", "first_id", string(it.Event.ID), "err", err)
		}
	}
}

// outOfProducer counts it out of the producer, and wakes the alone queue
// when that may have made one of its records ready.
func (d *Delivery) outOfProducer(it *delivery.Inflight) {
	if d.order().OutOfProducer(&it.Place) && d.alone.waiting() {
		d.alone.nudge()
	}
}

// checkOrder counts and logs a record Kafka acked while an earlier event
// of its key was parked or waiting to be produced alone: its key's order
// is broken (see DESIGN.md's gaps for how that can happen).
func (d *Delivery) checkOrder(it *delivery.Inflight) {
	if !d.order().Overtook(&it.Event, &it.Place) {
		return
	}
	d.Metrics.OrderViolations.Inc()
	d.order().LogViolation(&it.Event)
}

// goesAgain reports whether a record that failed with err goes again
// alone: Kafka may have refused its batch rather than it
// (sink.MaybeTheBatch), or a publisher's lanes did not send it behind its
// key's refused record (delivery.ErrNotSent) or had it refused with its
// request (delivery.ErrSendAgain). Asked only of a failure.
func goesAgain(err error) bool {
	return sink.MaybeTheBatch(err) || errors.Is(err, delivery.ErrNotSent) || errors.Is(err, delivery.ErrSendAgain)
}

// goesAlone reports whether r, which failed with err, goes again alone:
// a publisher did not send it, or had it refused with its request; or
// Kafka may have refused its batch, and r alone is within a batch's size.
func (d *Delivery) goesAlone(r *kgo.Record, err error) bool {
	if errors.Is(err, delivery.ErrNotSent) || errors.Is(err, delivery.ErrSendAgain) {
		return true
	}
	return sink.MaybeTheBatch(err) && sink.RecordBytes(r) <= d.producer.BatchMaxBytes()
}
