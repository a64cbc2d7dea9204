package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Exactly-once delivery. The pipeline's records go into Kafka transactions,
// each holding one or more whole PostgreSQL transactions and, in the same
// transaction, a record of the slot's position in the checkpoint topic. A
// PostgreSQL transaction is held in the checkpoint tracker (Tracker.Hold)
// until the Kafka transaction that holds it committed, so PostgreSQL is
// never told a position Kafka has not committed; Kafka's acks of single
// records only free in-flight capacity. A session starts from the later of
// the slot's position and the checkpoint topic's, and skips what ends at or
// before the latter.
//
// Anything that keeps a Kafka transaction from committing ends the session
// without aborting it at the broker: the next session's producer, started
// after it retakes leadership, aborts it, and PostgreSQL sends the same
// transactions again. A record Kafka refused for itself is parked in the
// status table first and left out the next time (eoState); a record that
// failed with its batch is produced alone the next time, to learn whose
// fault it was.

// errRedo ends a session whose Kafka transaction could not commit: the next
// session produces the same PostgreSQL transactions again, at once.
var errRedo = errors.New("the Kafka transaction could not commit; producing its PostgreSQL transactions again")

// eventKey names one copy of an event across sessions: the commit LSN of
// its transaction, its id and its topic, as the status table does.
type eventKey struct {
	commit    uint64
	id, topic string
}

func keyOf(it *inflight) eventKey {
	return eventKey{it.ev.CommitLSN, string(it.ev.ID), it.ev.Topic}
}

// eoState is what exactly-once delivery learns across sessions of one Run:
// records parked after Kafka refused them (left out from now on) and
// records that failed with their batch (produced alone next time). Both
// stay small: a record enters each at most once. After a restart of the
// process they are learnt again, at the cost of one more aborted
// transaction each.
type eoState struct {
	mu       sync.Mutex
	parked   map[eventKey]struct{}
	suspects map[eventKey]struct{}
}

func (s *eoState) add(m *map[eventKey]struct{}, k eventKey) {
	s.mu.Lock()
	if *m == nil {
		*m = map[eventKey]struct{}{}
	}
	(*m)[k] = struct{}{}
	s.mu.Unlock()
}

// lookup reports whether it was parked, or is a suspect.
func (s *eoState) lookup(it *inflight) (parked, suspect bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.parked) == 0 && len(s.suspects) == 0 {
		return false, false
	}
	k := keyOf(it)
	_, parked = s.parked[k]
	_, suspect = s.suspects[k]
	return parked, suspect
}

// heldTxn is a PostgreSQL transaction with records in the open Kafka
// transaction.
type heldTxn struct {
	tx     *checkpoint.Txn
	end    pglogrepl.LSN // set once its Commit was read
	events int           // records produced
	// delivered are the events to tell write-back about once committed.
	delivered []delivery
}

type delivery struct {
	table int
	id    []byte
}

// failure is a record Kafka did not take; it is nil for the checkpoint
// record.
type failure struct {
	it    *inflight
	err   error
	alone bool // it was produced alone
}

// txnBatcher puts one session's records into Kafka transactions. produce
// and endTxn are called by the stream's goroutine; commits happen there at
// the end of a PostgreSQL transaction once one is due, or on run's
// goroutine when the stream is between transactions (idle).
type txnBatcher struct {
	p         *pipeline
	snk       *sink.Sink // transactional, this session's
	state     *eoState
	slot      string
	topic     string // the checkpoint topic
	interval  time.Duration
	maxEvents int

	mu      sync.Mutex
	begun   bool
	began   time.Time
	events  int
	held    []*heldTxn
	open    bool  // the last held transaction is still being read
	broken  error // set once the transaction cannot commit: nothing more is produced
	lastEnd pglogrepl.LSN

	fmu      sync.Mutex
	failures []failure

	onAck      func(*kgo.Record, error)
	onCPAck    func(*kgo.Record, error)
	committed  func(held []*heldTxn) // accounting once committed (tests replace it)
	commitHook func()                // tests: called before each commit
}

func newTxnBatcher(p *pipeline, snk *sink.Sink, state *eoState, slot string, eo ExactlyOnce) *txnBatcher {
	b := &txnBatcher{p: p, snk: snk, state: state, slot: slot, topic: eo.CheckpointTopic, interval: eo.Interval, maxEvents: eo.MaxEvents}
	b.onAck = b.ack
	b.onCPAck = func(_ *kgo.Record, err error) {
		if err != nil {
			b.failed(failure{err: err})
		}
	}
	b.committed = b.account
	return b
}

// produce adds it to the open Kafka transaction, beginning one if needed.
func (b *txnBatcher) produce(it *inflight) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken != nil {
		return // the session is ending; the WAL still has it
	}
	parked, suspect := b.state.lookup(it)
	if parked {
		// Parked when an earlier transaction aborted: its status row
		// stands for it.
		b.p.tracker.Done(it.tx, it.size)
		return
	}
	if !b.begun {
		if err := b.snk.Begin(); err != nil {
			b.breakLocked(err, nil)
			return
		}
		b.begun, b.began = true, time.Now()
	}
	var h *heldTxn
	if n := len(b.held); n > 0 && b.held[n-1].tx == it.tx {
		h = b.held[n-1]
	} else {
		b.p.tracker.Hold(it.tx)
		h = &heldTxn{tx: it.tx}
		b.held = append(b.held, h)
		b.open = true
	}
	h.events++
	b.events++
	if b.p.writesBack(it.ev.Table) && (it.copies == nil || it.copies.Add(-1) == 0) {
		h.delivered = append(h.delivered, delivery{it.ev.Table, append([]byte(nil), it.ev.ID...)})
	}
	if !suspect {
		b.snk.Produce(b.p.produceCtx, &it.rec, b.onAck)
		return
	}
	// It failed with its batch before: alone in a batch, it is delivered
	// or fails for itself.
	if err := b.snk.Flush(b.p.produceCtx); err != nil {
		b.breakLocked(err, nil)
		return
	}
	if err := b.snk.ProduceWait(b.p.produceCtx, []*kgo.Record{&it.rec})[0]; err != nil {
		b.breakLocked(err, []failure{{it: it, err: err, alone: true}})
		return
	}
	b.p.tracker.Done(it.tx, it.size)
}

// endTxn is told that PostgreSQL transaction tx ended at end (after the
// tracker was); the Kafka transaction commits if it is due.
func (b *txnBatcher) endTxn(tx *checkpoint.Txn, end pglogrepl.LSN) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.held)
	if n == 0 || b.held[n-1].tx != tx {
		return // nothing of it in Kafka
	}
	b.held[n-1].end, b.lastEnd, b.open = end, end, false
	if b.events >= b.maxEvents || time.Since(b.began) >= b.interval {
		b.commitLocked(b.p.produceCtx)
	}
}

// ack is the callback of every record of the stream: Kafka's ack frees
// its capacity (the hold keeps the position back until the commit).
func (b *txnBatcher) ack(r *kgo.Record, err error) {
	it := r.Context.(*inflight)
	if err == nil {
		b.p.tracker.Done(it.tx, it.size)
		return
	}
	b.p.metrics.ProduceErrors.WithLabelValues(sink.ErrorName(err)).Inc()
	if sink.Permanent(err) {
		b.failed(failure{it: it, err: err})
	}
}

func (b *txnBatcher) failed(f failure) {
	b.fmu.Lock()
	b.failures = append(b.failures, f)
	b.fmu.Unlock()
}

// run commits the open transaction when it is due while the stream is
// between transactions, until ctx ends.
func (b *txnBatcher) run(ctx context.Context) {
	t := time.NewTicker(max(b.interval/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.mu.Lock()
		if b.begun && !b.open && time.Since(b.began) >= b.interval {
			b.commitLocked(ctx)
		}
		b.mu.Unlock()
	}
}

// commit commits what is open: at a stop, between transactions.
func (b *txnBatcher) commit(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open {
		return errors.New("a PostgreSQL transaction is still being read")
	}
	if b.begun {
		b.commitLocked(ctx)
	}
	return b.broken
}

// commitLocked writes the checkpoint record and commits the Kafka
// transaction; on success the PostgreSQL transactions it holds are
// released to the tracker. Called with mu held, between PostgreSQL
// transactions.
func (b *txnBatcher) commitLocked(ctx context.Context) {
	if b.broken != nil || !b.begun {
		return
	}
	if b.commitHook != nil {
		b.commitHook()
	}
	b.snk.Produce(ctx, sink.CheckpointRecord(b.topic, b.slot, b.lastEnd), b.onCPAck)
	// Every record answered first: one that failed must keep the
	// transaction from committing without it.
	err := b.snk.Flush(ctx)
	b.fmu.Lock()
	failures := b.failures
	b.failures = nil
	b.fmu.Unlock()
	if err == nil && len(failures) == 0 {
		err = b.snk.Commit(ctx)
	}
	if err == nil && len(failures) == 0 {
		held := b.held
		b.begun, b.events, b.held = false, 0, nil
		b.committed(held)
		return
	}
	if err == nil {
		err = failures[0].err
	}
	b.breakLocked(err, failures)
}

// breakLocked gives up the open transaction: it learns what it can from
// the records Kafka refused (failures, and any recorded since), and ends
// the session, at once and for good if the producer was fenced or refused.
// Called with mu held.
func (b *txnBatcher) breakLocked(err error, failures []failure) {
	if b.broken != nil {
		return
	}
	b.broken = err
	b.fmu.Lock()
	failures = append(failures, b.failures...)
	b.failures = nil
	b.fmu.Unlock()
	for _, f := range failures {
		if sink.Fenced(f.err) {
			err = f.err
		}
	}
	switch {
	case sink.Fenced(err):
		b.stop(fatalError{fmt.Errorf("Kafka fenced this relay's transactional producer %q (%w): another relay with the same transactional id "+
			"started after this one and now delivers the slot. This relay stops; nothing it had not committed is visible to read_committed consumers", b.snk.TransactionalID(), err)})
		return
	case sink.ProducerRefused(err):
		b.stop(fatalError{fmt.Errorf("Kafka refuses the relay's transactional producer %q (%w): grant the relay's principal WRITE and DESCRIBE on "+
			"the transactional id, and WRITE on the topics and the checkpoint topic; check the --kafka-tls-* and --kafka-sasl-* settings", b.snk.TransactionalID(), err)})
		return
	}
	for _, f := range failures {
		switch {
		case f.it == nil:
			if !sink.MaybeTheBatch(f.err) && sink.Permanent(f.err) {
				b.stop(fatalError{fmt.Errorf("Kafka refuses the checkpoint topic %q (%w): create it (cleanup.policy=compact) or grant the relay's principal WRITE on it", b.topic, f.err)})
				return
			}
		case errors.Is(f.err, kgo.ErrAborting) || !sink.Permanent(f.err):
			// Failed because the transaction did, not for itself.
		case f.alone || !sink.MaybeTheBatch(f.err) || sink.RecordBytes(&f.it.rec) > sink.BatchMaxBytes:
			// Its own fault: parked, it is left out from now on. If the
			// row cannot be stored, the session ends all the same and the
			// next one meets the record again.
			if b.p.fail(f.it, f.err, sink.ErrorName(f.err), b.p.failures.Failed) {
				b.state.add(&b.state.parked, keyOf(f.it))
			}
		default:
			b.state.add(&b.state.suspects, keyOf(f.it))
		}
	}
	if b.p.produceCtx.Err() == nil {
		b.stop(fmt.Errorf("%w: %v", errRedo, err))
	}
}

// stop ends the session with err (see pipeline.stop).
func (b *txnBatcher) stop(err error) {
	if b.p.stop != nil {
		b.p.stop(err)
	}
}

// account counts and releases what a committed Kafka transaction held.
func (b *txnBatcher) account(held []*heldTxn) {
	p := b.p
	now := time.Now()
	for _, h := range held {
		lag := max(0, now.Sub(h.tx.CommitTime()).Seconds())
		for range h.events {
			p.metrics.CommitToAck.Observe(lag)
		}
		p.count.events.Add(int64(h.events))
		if p.outcomes != nil {
			for _, d := range h.delivered {
				p.outcomes.Delivered(d.table, d.id)
			}
		}
		p.tracker.Release(h.tx)
	}
}

// startExactlyOnce starts a session's transactional producer, which fences
// any earlier one of this transactional id and aborts what it left open,
// and reads the slot's last committed position from the checkpoint topic
// (0 when there is none). It checks that position against the server's
// WAL: one beyond it was written for another database.
func (r *runner) startExactlyOnce(ctx context.Context, kcfg sink.Config, log *slog.Logger) (*sink.Sink, pglogrepl.LSN, error) {
	eo := r.cfg.ExactlyOnce
	kcfg.TransactionalID = eo.TransactionalID
	snk, err := sink.New(kcfg)
	if err != nil {
		return nil, 0, fatalError{err}
	}
	ok := false
	defer func() {
		if !ok {
			snk.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, 2*sink.DefaultTransactionTimeout)
	defer cancel()
	if !r.checkpointTopicReady {
		created, err := snk.EnsureCheckpointTopic(ctx, eo.CheckpointTopic)
		if err != nil {
			return nil, 0, err
		}
		if created {
			log.Info("checkpoint topic created", "topic", eo.CheckpointTopic, "cleanup.policy", "compact")
		}
		r.checkpointTopicReady = true
	}
	if err := snk.InitTransactions(ctx); err != nil {
		if sink.ProducerRefused(err) {
			return nil, 0, fatalError{fmt.Errorf("%w: grant the relay's principal WRITE and DESCRIBE on the transactional id %q", err, eo.TransactionalID)}
		}
		return nil, 0, err
	}
	lsn, found, err := snk.ReadCheckpoint(ctx, eo.CheckpointTopic, r.cfg.Slot)
	if err != nil {
		return nil, 0, err
	}
	if found {
		var walEnd pglogrepl.LSN
		if err := r.pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()").Scan(&walEnd); err != nil {
			return nil, 0, fmt.Errorf("read the server's WAL position: %w", err)
		}
		if lsn > walEnd {
			return nil, 0, fatalError{fmt.Errorf("the checkpoint topic %q says slot %q was delivered up to %s, beyond this server's WAL (%s): "+
				"it was written for another database. Give this relay another --checkpoint-topic and --transactional-id, or another --slot",
				eo.CheckpointTopic, r.cfg.Slot, lsn, walEnd)}
		}
		log.Info("exactly-once: last committed position read", "topic", eo.CheckpointTopic, "slot", r.cfg.Slot, "at", lsn)
	}
	ok = true
	return snk, lsn, nil
}
