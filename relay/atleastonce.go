package relay

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/sink"
)

// producer is what at-least-once delivery needs of the Kafka producer
// (*sink.Sink).
type producer interface {
	// Produce sends r asynchronously and calls done once with the outcome.
	Produce(ctx context.Context, r *kgo.Record, done func(*kgo.Record, error))
	// ProduceAlone sends r in a batch of its own and returns the outcome.
	ProduceAlone(ctx context.Context, r *kgo.Record) error
	// BatchMaxBytes is the most bytes of records in one batch: a record
	// within it, refused with its batch, may fit alone.
	BatchMaxBytes() int
}

// atLeastOnce is the default delivery: each record is produced on its own
// with the idempotent producer, and counted out of flight once Kafka acks
// it, or once it is parked in the status table when Kafka refuses it for
// good. A record refused with its batch is produced again alone, in the
// order they failed, to learn whether it was its own fault.
type atLeastOnce struct {
	*ledger
	producer    producer
	onAck       func(*kgo.Record, error) // ack, one func value for every record
	alone       *aloneQueue              // records to produce again one at a time, in stream order
	undelivered atomic.Int64
}

// newAtLeastOnce returns the delivery of l's session through producer. It
// starts the goroutine that produces records again alone, which ends with
// l.produceCtx.
func newAtLeastOnce(l *ledger, producer producer) *atLeastOnce {
	d := &atLeastOnce{ledger: l, producer: producer, alone: newAloneQueue()}
	d.onAck = d.ack
	go d.produceAlone()
	return d
}

// produce sends it, or queues it behind its key's record waiting to be
// produced alone (the pipeline marked it so).
func (d *atLeastOnce) produce(it *inflight) {
	if it.Alone {
		d.alone.push(it)
		return
	}
	d.order.IntoProducer(&it.ev, &it.Place)
	d.producer.Produce(d.produceCtx, &it.rec, d.onAck)
}

func (d *atLeastOnce) park(_ *inflight, store func() bool) { go store() }

// endTxn: each record is settled on its own; nothing waits for the end of
// its transaction.
func (d *atLeastOnce) endTxn(*checkpoint.Txn, pglogrepl.LSN) {}

// commit: every acked record is visible to consumers already.
func (d *atLeastOnce) commit(context.Context) error { return nil }

// produceAlone produces the records of d.alone one at a time, in stream
// order, each once no earlier record of its key is left in the producer,
// and acks each with its outcome, until produceCtx ends (what is left then
// stays unconfirmed and is sent again by the next session).
func (d *atLeastOnce) produceAlone() {
	ready := func(it *inflight) bool { return d.order.MayGoAlone(&it.ev) }
	for it := d.alone.next(d.produceCtx, ready); it != nil; it = d.alone.next(d.produceCtx, ready) {
		d.produceOneAlone(it)
	}
}

// produceOneAlone produces it in a batch of its own and acks it, or parks
// it: FAILED if it failed for good already (it.failed), PAUSED if its
// topic is paused, WAITING if its key became held meanwhile.
func (d *atLeastOnce) produceOneAlone(it *inflight) {
	var as parkAs
	if it.failed != nil {
		as = d.failedAs(it.failed)
	} else if d.order.TopicPaused(it.ev.Topic) {
		as = d.pausedAs()
	} else if held, head := d.order.ParkedHeld(&it.ev); held {
		as = d.waitingAs(it, head)
	} else {
		d.ack(&it.rec, d.producer.ProduceAlone(d.produceCtx, &it.rec))
		return
	}
	go d.parkInOrder(it, as)()
	d.order.DoneAlone(&it.ev)
}

// failedAs parks a record Kafka refused for good FAILED, for the poller.
func (d *atLeastOnce) failedAs(err error) parkAs {
	return parkAs{store: d.failures.Failed, reason: err, cause: sink.ErrorName(err)}
}

// ack is the producer callback of every record. It holds the key of a
// record that failed before it returns: franz-go calls back a partition's
// failed records in order, on one goroutine, so a key's records are held
// in order, and the stream parks or queues the key's later events.
func (d *atLeastOnce) ack(r *kgo.Record, err error) {
	it := r.Context.(*inflight)
	// Last, once a failure held its key: the alone queue waits for its
	// key's records to leave the producer.
	defer d.order.OutOfProducer(&it.Place)
	if it.Alone {
		// Its hold while it waited alone ends once its outcome holds the
		// key, if it failed.
		defer d.order.DoneAlone(&it.ev)
	}
	if err != nil {
		d.metrics.ProduceErrors.WithLabelValues(sink.ErrorName(err)).Inc()
	}
	switch {
	case err == nil:
		d.metrics.CommitToAck.Observe(max(0, time.Since(it.pgTxn.CommitTime()).Seconds()))
		d.count.events.Add(1)
		d.checkOrder(it)
		d.delivered(it)
	case sink.ProducerRefused(err) && d.stop != nil:
		// Every record would fail so: the event stays in flight, and the
		// session ends for the operator to fix the cause.
		if sink.AuthFailed(err) {
			d.stop(fatalError{fmt.Errorf("Kafka refuses the relay's connection (%w): "+
				"check the --kafka-tls-* and --kafka-sasl-* settings against the brokers' listener", err)})
		} else {
			d.stop(fatalError{fmt.Errorf("Kafka refuses the relay's producer (%w): "+
				"grant the relay's principal WRITE and IDEMPOTENT_WRITE on the cluster", err)})
		}
	case !it.Alone && sink.MaybeTheBatch(err) && sink.RecordBytes(r) <= d.producer.BatchMaxBytes():
		// The broker refused the batch the record was in (a topic whose
		// max.message.bytes is below the batch size, another record's
		// fault), not necessarily the record: alone, it is delivered or
		// fails for itself. Records go again one at a time, in the order
		// they failed, so a key's order holds among them.
		it.Alone = true
		d.order.HoldAlone(&it.ev, it.Seq)
		d.alone.push(it)
	case sink.Permanent(err) && !it.Alone && d.order.AloneHeld(&it.ev):
		// An earlier record of its key waits to be produced alone: it is
		// parked after that one's outcome, in the key's order.
		it.Alone, it.failed = true, err
		d.order.HoldAlone(&it.ev, it.Seq)
		d.alone.push(it)
	case sink.Permanent(err):
		go d.parkInOrder(it, d.failedAs(err))()
	default:
		// Not delivered (the producer is closing, or the session ended):
		// the event stays in flight, its transaction unconfirmed, and
		// PostgreSQL sends it again after a restart. Said once, not per
		// event.
		if d.undelivered.Add(1) == 1 {
			d.log.Warn("events not delivered; they will be sent again after a restart", "first_id", string(it.ev.ID), "err", err)
		}
	}
}

// checkOrder counts and logs a record Kafka acked while an earlier event
// of its key was parked or waiting to be produced alone: its key's order
// is broken (see DESIGN.md's gaps for how that can happen).
func (d *atLeastOnce) checkOrder(it *inflight) {
	if !d.order.Overtook(&it.ev, &it.Place) {
		return
	}
	d.metrics.OrderViolations.Inc()
	d.order.LogViolation(&it.ev)
}
