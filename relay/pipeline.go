package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/sink"
)

// producer is what the pipeline needs of the Kafka producer (*sink.Sink).
type producer interface {
	// Produce sends r asynchronously and calls done once with the outcome.
	Produce(ctx context.Context, r *kgo.Record, done func(*kgo.Record, error))
	// ProduceAlone sends r in a batch of its own and returns the outcome.
	ProduceAlone(ctx context.Context, r *kgo.Record) error
}

// failureStore parks events the fast path cannot deliver (*status.Store):
// Failed for the poller to try again, Dead for an operator. When either
// returns nil the row is durable.
type failureStore interface {
	Failed(ctx context.Context, ev *decoder.Event, reason error) error
	Dead(ctx context.Context, ev *decoder.Event, reason error) error
}

// outcomes is told each event's outcome, for the tables that write it
// back to their rows (*writeback.Writer behind an index map). Its methods
// never block.
type outcomes interface {
	// Delivered: every copy of the event is in Kafka.
	Delivered(table int, id []byte)
	// Failed: the event was parked in the status table.
	Failed(table int, id []byte, reason string)
}

// counters count what a relay read and delivered over its life, across
// sessions.
type counters struct {
	read   atomic.Int64 // events read from the slot
	events atomic.Int64 // acked by Kafka
	failed atomic.Int64 // recorded in the status table
}

// pipeline handles one replication session's messages in stream order:
// transaction boundaries go to the tracker; each event is counted in flight,
// then produced, or parked in the status table when it can never be a
// Kafka record. The tracker lets the checkpoint pass an event once Kafka
// acked it or its status row is committed.
type pipeline struct {
	log      *slog.Logger
	causes   *causeLog // undeliverable events, by cause
	producer producer
	failures failureStore
	count    *counters
	metrics  *metrics.Metrics // nil: newPipeline makes some of its own
	dec      *decoder.Decoder
	tracker  *checkpoint.Tracker
	// relation, if set, judges each Relation message for an outbox
	// table (a new OID, columns that do not fit); an error ends the stream.
	relation func(context.Context, decoder.Relation) error
	// outcomes, if set, is told the outcome of each event of the tables
	// writeBack marks (by table index).
	outcomes  outcomes
	writeBack []bool
	// tableNames name the tables by index, for the metrics.
	tableNames []string

	// failCtx bounds status-table writes; produceCtx is the records'
	// context, cancelled when the session ends so that nothing stays
	// blocked in the producer.
	failCtx, produceCtx context.Context
	retryBase           time.Duration // first wait between status-table attempts
	// stop, if set, ends the session with err at once: for a status table
	// that refuses every write for a reason retries cannot fix.
	stop func(err error)

	// txn, in exactly-once delivery, puts the records into Kafka
	// transactions; nil is at-least-once.
	txn *txnBatcher
	// skipBelow, in exactly-once delivery, is the position the checkpoint
	// topic holds: transactions that end at or before it are in Kafka
	// already, and are skipped (skipping says the one being read is).
	skipBelow pglogrepl.LSN
	skipping  bool

	onAck       func(*kgo.Record, error) // p.ack, one func value for every record
	alone       fifo                     // records to produce again one at a time
	tx          *checkpoint.Txn          // the transaction being read
	undelivered atomic.Int64
	// unrouted counts the events that matched no route since it was
	// last logged, at unroutedLogged (the stream's goroutine only).
	unrouted       int
	unroutedLogged time.Time
}

// newPipeline returns a pipeline; p's dependencies must be set. It starts
// the goroutine that produces records again alone, which ends with
// produceCtx.
func newPipeline(p *pipeline) *pipeline {
	p.onAck = p.ack
	if p.metrics == nil {
		p.metrics = metrics.New("", nil)
	}
	p.alone.wake = make(chan struct{}, 1)
	go p.produceAlone()
	if p.causes == nil {
		p.causes = newCauseLog(p.log, time.Minute)
	}
	if p.retryBase == 0 {
		p.retryBase = 100 * time.Millisecond
	}
	return p
}

// handle decodes one pgoutput message and applies it.
func (p *pipeline) handle(start pglogrepl.LSN, data []byte) error {
	msg, err := p.dec.Decode(data)
	if err != nil {
		return fmt.Errorf("decode pgoutput message at %s: %w", start, err)
	}
	return p.apply(start, msg)
}

// apply acts on one decoded message.
func (p *pipeline) apply(start pglogrepl.LSN, msg decoder.Message) error {
	switch msg.Kind {
	case decoder.KindBegin:
		p.tx = p.tracker.Begin(msg.CommitTime)
		p.skipping = pglogrepl.LSN(msg.CommitLSN) < p.skipBelow
	case decoder.KindCommit:
		if p.tx == nil {
			return fmt.Errorf("commit at %s without a begin", start)
		}
		p.tracker.Commit(p.tx, pglogrepl.LSN(msg.EndLSN))
		if p.txn != nil {
			p.txn.endTxn(p.tx, pglogrepl.LSN(msg.EndLSN))
		}
		p.tx = nil
	case decoder.KindRelation:
		if p.relation != nil {
			return p.relation(p.produceCtx, msg.Relation)
		}
	case decoder.KindEvent:
		if p.tx == nil {
			return fmt.Errorf("insert at %s outside a transaction", start)
		}
		if p.skipping {
			return nil // in Kafka already, committed by an earlier session
		}
		p.count.read.Add(1)
		if !msg.Routed || msg.Poison != nil {
			p.produce(&msg, msg.Event.Topic, nil)
			return nil
		}
		switch len(msg.Routes) {
		case 0:
			p.noRoute(&msg.Event)
		case 1:
			p.produce(&msg, msg.Routes[0], nil)
		default:
			// One copy per route: the tracker counts each, so the
			// transaction is confirmed once every copy is acked.
			copies := new(atomic.Int32)
			copies.Store(int32(len(msg.Routes)))
			for _, topic := range msg.Routes {
				p.produce(&msg, topic, copies)
			}
		}
	}
	return nil
}

// produce counts one copy of the event in flight and produces it to topic,
// or parks it when it is poison. copies, shared by the copies of a
// fanned-out event, counts those not yet acked (nil for a single copy).
func (p *pipeline) produce(msg *decoder.Message, topic string, copies *atomic.Int32) {
	it := &inflight{Context: p.produceCtx, tx: p.tx, ev: msg.Event, copies: copies}
	it.ev.Topic = topic
	it.ev.Headers = append(it.evHeaders[:0], msg.Event.Headers...)
	it.size = it.ev.Size() + int(unsafe.Sizeof(inflight{}))
	p.tracker.Add(it.tx, it.size)
	if msg.Poison != nil {
		// The row cannot become its record: trying again would not help.
		go p.fail(it, msg.Poison, invalidRow, p.failures.Dead)
		return
	}
	sink.Fill(&it.rec, it.recHeaders[:0], &it.ev)
	it.rec.Context = it
	if p.txn != nil {
		p.txn.produce(it)
		return
	}
	p.producer.Produce(p.produceCtx, &it.rec, p.onAck)
}

// noRoute counts an event that matched none of its table's routes: it goes
// nowhere, by design, and is logged at most once a minute with a count.
func (p *pipeline) noRoute(ev *decoder.Event) {
	p.metrics.EventsUnrouted.WithLabelValues(p.tableName(ev.Table)).Inc()
	p.unrouted++
	if now := time.Now(); now.Sub(p.unroutedLogged) >= time.Minute {
		p.log.Info("events matched no route and were sent nowhere", "events", p.unrouted, "table", p.tableName(ev.Table), "last_id", string(ev.ID))
		p.unrouted, p.unroutedLogged = 0, now
	}
}

// tableName names table i for the metrics and the log.
func (p *pipeline) tableName(i int) string {
	if i < len(p.tableNames) {
		return p.tableNames[i]
	}
	return strconv.Itoa(i)
}

// delivered tells outcomes that a copy of it was acked; the event is
// delivered once every copy is.
func (p *pipeline) delivered(it *inflight) {
	if p.outcomes == nil || !p.writesBack(it.ev.Table) {
		return
	}
	if it.copies == nil || it.copies.Add(-1) == 0 {
		p.outcomes.Delivered(it.ev.Table, it.ev.ID)
	}
}

// parked tells outcomes that a copy of it was parked: the event is not
// delivered, whatever becomes of its other copies.
func (p *pipeline) parked(it *inflight, reason error) {
	if p.outcomes == nil || !p.writesBack(it.ev.Table) {
		return
	}
	if it.copies != nil {
		it.copies.Store(math.MinInt32) // never reaches 0 again
	}
	p.outcomes.Failed(it.ev.Table, it.ev.ID, reason.Error())
}

func (p *pipeline) writesBack(table int) bool { return table < len(p.writeBack) && p.writeBack[table] }

// produceAlone produces the records of p.alone one at a time, in order,
// and acks each with its outcome, until produceCtx ends (what is left then
// stays unconfirmed and is sent again by the next session).
func (p *pipeline) produceAlone() {
	for {
		select {
		case <-p.produceCtx.Done():
			return
		case <-p.alone.wake:
		}
		for it := p.alone.pop(); it != nil; it = p.alone.pop() {
			p.ack(&it.rec, p.producer.ProduceAlone(p.produceCtx, &it.rec))
		}
	}
}

// fifo is an unbounded queue of events, safe for concurrent use; push
// never blocks (it runs on the producer's callback goroutines).
type fifo struct {
	mu    sync.Mutex
	items []*inflight
	wake  chan struct{} // has a token while items may be waiting
}

func (q *fifo) push(it *inflight) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *fifo) pop() *inflight {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil
	}
	it := q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	return it
}

// inflight is one event on its way to Kafka, in one allocation: the record,
// room for its headers, and what the checkpoint needs once Kafka answers.
// The record's Context is the inflight itself (it embeds the session's
// produce context, so cancellation works as for any record), which lets one
// callback serve every record without a closure per event.
type inflight struct {
	context.Context
	rec        kgo.Record
	recHeaders [4]kgo.RecordHeader
	ev         decoder.Event // kept for the status table
	evHeaders  [4]decoder.Header
	tx         *checkpoint.Txn
	size       int
	alone      bool          // produced again in a batch of its own (see ack)
	copies     *atomic.Int32 // the copies of a fanned-out event not yet acked; nil for one copy
}

// ack is the producer callback of every record.
func (p *pipeline) ack(r *kgo.Record, err error) {
	it := r.Context.(*inflight)
	if err != nil {
		p.metrics.ProduceErrors.WithLabelValues(sink.ErrorName(err)).Inc()
	}
	switch {
	case err == nil:
		p.metrics.CommitToAck.Observe(max(0, time.Since(it.tx.CommitTime()).Seconds()))
		p.count.events.Add(1)
		p.delivered(it)
		p.tracker.Done(it.tx, it.size)
	case sink.ProducerRefused(err) && p.stop != nil:
		// Every record would fail so: the event stays in flight, and the
		// session ends for the operator to fix the cause.
		if sink.AuthFailed(err) {
			p.stop(fatalError{fmt.Errorf("Kafka refuses the relay's connection (%w): "+
				"check the --kafka-tls-* and --kafka-sasl-* settings against the brokers' listener", err)})
		} else {
			p.stop(fatalError{fmt.Errorf("Kafka refuses the relay's producer (%w): "+
				"grant the relay's principal WRITE and IDEMPOTENT_WRITE on the cluster", err)})
		}
	case !it.alone && sink.MaybeTheBatch(err) && sink.RecordBytes(r) <= sink.BatchMaxBytes:
		// The broker refused the batch the record was in (a topic whose
		// max.message.bytes is below the batch size, another record's
		// fault), not necessarily the record: alone, it is delivered or
		// fails for itself. Records go again one at a time, in the order
		// they failed, so a key's order holds among them.
		it.alone = true
		p.alone.push(it)
	case sink.Permanent(err):
		go p.fail(it, err, sink.ErrorName(err), p.failures.Failed)
	default:
		// Not delivered (the producer is closing, or the session ended):
		// the event stays in flight, its transaction unconfirmed, and
		// PostgreSQL sends it again after a restart. Said once, not per
		// event.
		if p.undelivered.Add(1) == 1 {
			p.log.Warn("events not delivered; they will be sent again after a restart", "first_id", string(it.ev.ID), "err", err)
		}
	}
}

// invalidRow is the parked-events metric's reason for a row that cannot
// become a record.
const invalidRow = "invalid_row"

// fail parks an undeliverable event in the status table with park,
// retrying with backoff until it is stored, then lets the checkpoint pass
// it; cause names the reason in the metrics. It reports whether the event
// is stored. If failCtx ends first, the event stays in flight:
// unconfirmed, it is sent again after a restart.
func (p *pipeline) fail(it *inflight, reason error, cause string, park func(context.Context, *decoder.Event, error) error) bool {
	ev := &it.ev
	p.causes.add("event cannot be delivered; recording it in the status table", sink.Cause(reason), string(ev.ID), ev.Topic, reason)
	backoff := p.retryBase
	for {
		err := park(p.failCtx, ev, reason)
		if err == nil {
			break
		}
		if p.failCtx.Err() != nil {
			p.log.Warn("stopped before a failed event was recorded; it will be sent again after a restart", "id", string(ev.ID))
			return false
		}
		if refused(err) && p.stop != nil {
			// A missing table or privilege: every retry would fail, and
			// the stream would stall behind this event.
			p.stop(fatalError{fmt.Errorf("the status table refuses to record an undeliverable event (%w): "+
				"run `cdc-relay migrate` with the same table flags if it was dropped, or grant the relay's role INSERT and UPDATE on it", err)})
			return false
		}
		p.causes.add("could not record an undeliverable event in the status table; retrying", storeCause(err), string(ev.ID), ev.Topic, err)
		select {
		case <-time.After(backoff):
		case <-p.failCtx.Done():
		}
		backoff = min(2*backoff, 10*time.Second)
	}
	p.count.failed.Add(1)
	p.parked(it, reason)
	p.metrics.EventsParked.WithLabelValues(cause).Inc()
	if cause == invalidRow {
		p.metrics.EventsDead.Inc()
	}
	p.tracker.Done(it.tx, it.size)
	return true
}

// refused reports whether a status-table error will not go away by
// itself: SQLSTATE class 42 (a missing table or column, a missing
// privilege).
func refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && len(pgErr.Code) == 5 && pgErr.Code[:2] == "42"
}

// storeCause names a status-table error for the cause log: its SQLSTATE,
// or the connection (never anything of the event, which would make every
// event a cause of its own).
func storeCause(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return "status table: SQLSTATE " + pgErr.Code
	}
	return "status table: no connection"
}
