package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/replication"
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

// add adds k to the set m, and reports whether it is new there.
func (s *eoState) add(m *map[eventKey]struct{}, k eventKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *m == nil {
		*m = map[eventKey]struct{}{}
	}
	if _, ok := (*m)[k]; ok {
		return false
	}
	(*m)[k] = struct{}{}
	return true
}

// isParked reports whether it was parked when a transaction aborted.
func (s *eoState) isParked(it *inflight) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return has(s.parked, it)
}

// isSuspect reports whether it failed with its batch before.
func (s *eoState) isSuspect(it *inflight) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return has(s.suspects, it)
}

func has(m map[eventKey]struct{}, it *inflight) bool {
	if len(m) == 0 {
		return false
	}
	_, ok := m[keyOf(it)]
	return ok
}

// heldTxn is a PostgreSQL transaction with records in the open Kafka
// transaction.
type heldTxn struct {
	tx     *checkpoint.Txn
	events int // records produced
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
// and endTxn are called by the stream's goroutine and never wait for
// Kafka; run commits on a goroutine of its own. While a commit is under
// way, the records read meanwhile wait in pending (counted in flight, so
// the in-flight limits bound them) and are produced into the next
// transaction once it ends: franz-go must not produce during a commit.
type txnBatcher struct {
	p         *pipeline
	snk       *sink.Sink // transactional, this session's
	state     *eoState
	id        sink.Checkpoint // the slot and its database, for the checkpoint records
	topic     string          // the checkpoint topic
	interval  time.Duration
	maxEvents int
	due       chan struct{} // endTxn tells run a commit is due

	cmu sync.Mutex // one commit at a time: run's, or the final one

	mu         sync.Mutex
	cur        kafkaTxn    // the transaction records go to
	committing bool        // a commit is under way: records wait in pending
	pending    []*inflight // read during a commit, produced after it
	broken     error       // set once a transaction cannot commit: nothing more is produced

	fmu      sync.Mutex
	failures []failure
	// sent counts the records produced into the transaction under way
	// (under mu), acked those Kafka acknowledged: it commits only when
	// they agree and nothing failed.
	sent  int
	acked atomic.Int64
	// parking counts poison rows being written to the status table
	// (under mu); a commit waits for them, or the checkpoint topic could
	// pass a row that is in neither Kafka nor the status table.
	parking int
	parked  *sync.Cond // on mu: parking went down
	// leads reports whether this relay still holds the slot's lock: a
	// producer the broker fenced without it was replaced by another relay.
	leads func(context.Context) bool

	onAck      func(*kgo.Record, error)
	onCPAck    func(*kgo.Record, error)
	commitHook func() // tests: called before each commit
}

// kafkaTxn is the Kafka transaction that records go to.
type kafkaTxn struct {
	begun   bool // Begin was called (its first record was produced)
	began   time.Time
	events  int
	held    []*heldTxn
	open    bool          // the last held transaction is still being read
	lastEnd pglogrepl.LSN // the end of the last held transaction read to its end
}

func newTxnBatcher(p *pipeline, snk *sink.Sink, state *eoState, id sink.Checkpoint, eo ExactlyOnce) *txnBatcher {
	b := &txnBatcher{p: p, snk: snk, state: state, id: id, topic: eo.CheckpointTopic, interval: eo.Interval,
		maxEvents: eo.MaxEvents, due: make(chan struct{}, 1)}
	b.parked = sync.NewCond(&b.mu)
	b.onAck = b.ack
	b.onCPAck = func(_ *kgo.Record, err error) {
		if err != nil {
			b.failed(failure{err: err})
			return
		}
		b.acked.Add(1)
	}
	return b
}

// produce adds it to the Kafka transaction: produced now, or after the
// commit under way.
func (b *txnBatcher) produce(it *inflight) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken != nil {
		return // the session is ending; the WAL still has it
	}
	if b.state.isParked(it) {
		// Parked when an earlier transaction aborted: its status row
		// stands for it.
		b.p.tracker.Done(it.tx, it.size)
		return
	}
	var h *heldTxn
	if n := len(b.cur.held); n > 0 && b.cur.held[n-1].tx == it.tx {
		h = b.cur.held[n-1]
	} else {
		b.p.tracker.Hold(it.tx)
		h = &heldTxn{tx: it.tx}
		b.cur.held = append(b.cur.held, h)
		b.cur.open = true
	}
	h.events++
	b.cur.events++
	if b.p.writesBack(it.ev.Table) && (it.copies == nil || it.copies.Add(-1) == 0) {
		h.delivered = append(h.delivered, delivery{it.ev.Table, append([]byte(nil), it.ev.ID...)})
	}
	if b.committing {
		b.pending = append(b.pending, it)
		return
	}
	b.sendLocked(it)
}

// sendLocked produces it, beginning the transaction if it is the first
// record. Called with mu held, never during a commit.
func (b *txnBatcher) sendLocked(it *inflight) {
	if !b.cur.begun {
		if err := b.snk.Begin(); err != nil {
			b.breakLocked(err, nil)
			return
		}
		b.cur.begun, b.cur.began = true, time.Now()
	}
	b.sent++
	if !b.state.isSuspect(it) {
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
	b.acked.Add(1)
	b.p.tracker.Done(it.tx, it.size)
}

// park parks a poison row, one that cannot become a record, in the status
// table, as at-least-once delivery does, and holds every commit until the
// row is stored.
func (b *txnBatcher) park(it *inflight, reason error) {
	b.mu.Lock()
	b.parking++
	b.mu.Unlock()
	go func() {
		b.p.fail(it, reason, invalidRow, b.p.failures.Dead)
		b.mu.Lock()
		b.parking--
		b.parked.Broadcast()
		b.mu.Unlock()
	}()
}

// endTxn is told that PostgreSQL transaction tx ended at end (after the
// tracker was), and tells run when a commit is due.
func (b *txnBatcher) endTxn(tx *checkpoint.Txn, end pglogrepl.LSN) {
	b.mu.Lock()
	n := len(b.cur.held)
	if n == 0 || b.cur.held[n-1].tx != tx {
		b.mu.Unlock()
		return // nothing of it in Kafka
	}
	b.cur.lastEnd, b.cur.open = end, false
	due := b.dueLocked()
	b.mu.Unlock()
	if due {
		select {
		case b.due <- struct{}{}:
		default:
		}
	}
}

// dueLocked reports whether the transaction should commit, once no
// PostgreSQL transaction in it is still being read.
func (b *txnBatcher) dueLocked() bool {
	return b.cur.begun && (b.cur.events >= b.maxEvents || time.Since(b.cur.began) >= b.interval)
}

// ack is the callback of every record of the stream: Kafka's ack frees
// its capacity (the hold keeps the position back until the commit).
func (b *txnBatcher) ack(r *kgo.Record, err error) {
	it := r.Context.(*inflight)
	if err == nil {
		b.acked.Add(1)
		b.p.tracker.Done(it.tx, it.size)
		return
	}
	b.p.metrics.ProduceErrors.WithLabelValues(sink.ErrorName(err)).Inc()
	// Whatever the error, the transaction must not commit without it.
	b.failed(failure{it: it, err: err})
}

func (b *txnBatcher) failed(f failure) {
	b.fmu.Lock()
	b.failures = append(b.failures, f)
	b.fmu.Unlock()
}

// run commits the transaction when it is due and no PostgreSQL transaction
// in it is being read, until ctx ends.
func (b *txnBatcher) run(ctx context.Context) {
	t := time.NewTicker(max(b.interval/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.due:
		}
		b.commitIf(ctx, false)
	}
}

// commit commits what is open, whether due or not: at a stop, between
// transactions. It returns why it could not.
func (b *txnBatcher) commit(ctx context.Context) error {
	b.mu.Lock()
	open := b.cur.open
	b.mu.Unlock()
	if open {
		return errors.New("a PostgreSQL transaction is still being read")
	}
	return b.commitIf(ctx, true)
}

// commitIf commits the transaction if it is due (or force) and no
// PostgreSQL transaction in it is being read: it writes the checkpoint
// record, waits for every record to be answered, and commits only if none
// failed; then it releases the PostgreSQL transactions it holds to the
// tracker and produces what was read meanwhile into the next one. It
// returns the error that broke the batcher, if any.
func (b *txnBatcher) commitIf(ctx context.Context, force bool) error {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	b.mu.Lock()
	for b.parking > 0 && b.p.produceCtx.Err() == nil {
		b.parked.Wait() // a park gives up when produceCtx ends
	}
	if b.broken != nil || !b.cur.begun || b.cur.open || !force && !b.dueLocked() {
		err := b.broken
		b.mu.Unlock()
		return err
	}
	txn := b.cur
	sent := b.sent + 1 // and the checkpoint record
	b.cur, b.sent = kafkaTxn{}, 0
	b.committing = true
	b.mu.Unlock()

	if b.commitHook != nil {
		b.commitHook()
	}
	cp := b.id
	cp.LSN = txn.lastEnd
	b.snk.Produce(ctx, sink.CheckpointRecord(b.topic, cp), b.onCPAck)
	// Every record answered first: one that failed must keep the
	// transaction from committing without it, and so must one not
	// answered (its callback still to run) or a session that ended (a
	// record cancelled with it may not have failed yet).
	err := b.snk.Flush(ctx)
	b.fmu.Lock()
	failures := b.failures
	b.failures = nil
	b.fmu.Unlock()
	if acked := b.acked.Swap(0); err == nil && len(failures) == 0 && acked != int64(sent) {
		err = fmt.Errorf("%d of the transaction's %d records answered", acked, sent)
	}
	if err == nil && len(failures) == 0 && b.p.produceCtx.Err() != nil {
		err = b.p.produceCtx.Err()
	}
	if err == nil && len(failures) == 0 {
		err = b.snk.Commit(ctx)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	b.committing = false
	if err == nil && len(failures) == 0 {
		b.p.metrics.KafkaTransactions.WithLabelValues("committed").Inc()
		b.account(txn.held)
		pending := b.pending
		b.pending = nil
		for i, it := range pending {
			if b.broken != nil {
				break
			}
			b.sendLocked(it)
			pending[i] = nil
		}
		if !b.cur.open && b.dueLocked() {
			select { // the next one is due already
			case b.due <- struct{}{}:
			default:
			}
		}
		return b.broken
	}
	if err == nil {
		err = failures[0].err
	}
	b.p.metrics.KafkaTransactions.WithLabelValues("aborted").Inc()
	b.pending = nil
	b.breakLocked(err, failures)
	return b.broken
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
	case sink.Fenced(err) && (errors.Is(err, kerr.ProducerFenced) || b.leads == nil || !b.leads(context.Background())):
		b.stop(fatalError{fmt.Errorf("Kafka fenced this relay's transactional producer %q (%w): another relay with the same transactional id "+
			"started after this one and now delivers the slot. This relay stops; nothing it had not committed is visible to read_committed consumers", b.snk.TransactionalID(), err)})
		return
	case sink.Fenced(err):
		// Still the leader: the broker ended the transaction itself (it
		// was open longer than the transaction timeout), which fenced
		// this producer's epoch. A new session starts a new producer.
		b.stop(fmt.Errorf("Kafka ended the relay's transaction (%w): it was open longer than --transaction-timeout allows, or the broker lost it; "+
			"its PostgreSQL transactions are produced again", err))
		return
	case sink.ProducerRefused(err):
		b.stop(fatalError{fmt.Errorf("Kafka refuses the relay's transactional producer %q (%w): grant the relay's principal WRITE and DESCRIBE on "+
			"the transactional id, and WRITE on the topics and the checkpoint topic; check the --kafka-tls-* and --kafka-sasl-* settings", b.snk.TransactionalID(), err)})
		return
	}
	learnt := false // a record parked, or to be produced alone, from now on
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
				learnt = b.state.add(&b.state.parked, keyOf(f.it)) || learnt
			}
		default:
			learnt = b.state.add(&b.state.suspects, keyOf(f.it)) || learnt
		}
	}
	switch {
	case b.p.produceCtx.Err() != nil:
	case learnt:
		b.stop(fmt.Errorf("%w: %v", errRedo, err))
	default:
		// Nothing learnt that the next try would do otherwise: a new
		// session, after the usual backoff.
		b.stop(fmt.Errorf("the Kafka transaction could not commit: %w", err))
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
// (found false when there is none). Before it starts the producer, it
// checks that the topic's position for this slot, if any, was written for
// this database: a relay of another database with the same slot name would
// share the transactional id too, and the two would fence each other. A
// position beyond the server's WAL is refused for the same reason.
func (r *runner) startExactlyOnce(ctx context.Context, repl *replication.Conn, log *slog.Logger) (*sink.Sink, sink.Checkpoint, error) {
	eo, slot := r.cfg.ExactlyOnce, r.cfg.Slot
	var none sink.Checkpoint
	kcfg := r.kafka
	kcfg.TransactionalID, kcfg.TransactionTimeout = eo.TransactionalID, eo.TransactionTimeout
	snk, err := sink.New(kcfg)
	if err != nil {
		return nil, none, fatalError{err}
	}
	ok := false
	defer func() {
		if !ok {
			snk.Close()
		}
	}()
	sys, err := repl.IdentifySystem(ctx)
	if err != nil {
		return nil, none, fmt.Errorf("identify the database: %w", err)
	}
	ours := sink.Checkpoint{Slot: slot, SystemID: sys.SystemID, Database: sys.DBName}
	ctx, cancel := context.WithTimeout(ctx, 2*eo.TransactionTimeout)
	defer cancel()
	if !r.checkpointTopicReady {
		created, err := snk.EnsureCheckpointTopic(ctx, eo.CheckpointTopic)
		if err != nil {
			return nil, none, err
		}
		if created {
			log.Info("checkpoint topic created", "topic", eo.CheckpointTopic, "cleanup.policy", "compact")
		}
		r.checkpointTopicReady = true
	}
	foreign := func(cp sink.Checkpoint) error {
		return fatalError{fmt.Errorf("the checkpoint topic %q holds a position of slot %q written by a relay of another database "+
			"(system %s, database %q; this one is system %s, database %q): two relays must not share a slot name, a checkpoint topic and a transactional id. "+
			"Give this relay its own --slot, or its own --checkpoint-topic and --transactional-id",
			eo.CheckpointTopic, slot, cp.SystemID, cp.Database, ours.SystemID, ours.Database)}
	}
	// Uncommitted too, and before the producer starts: this never waits,
	// and never fences the other relay.
	if cp, found, err := snk.ReadCheckpoint(ctx, eo.CheckpointTopic, slot, false); err != nil {
		return nil, none, err
	} else if found && !cp.SameDatabase(ours) {
		return nil, none, foreign(cp)
	}
	if err := snk.InitTransactions(ctx); err != nil {
		if sink.ProducerRefused(err) {
			return nil, none, fatalError{fmt.Errorf("%w: grant the relay's principal WRITE and DESCRIBE on the transactional id %q", err, eo.TransactionalID)}
		}
		return nil, none, err
	}
	cp, found, err := snk.ReadCheckpoint(ctx, eo.CheckpointTopic, slot, true)
	switch {
	case err != nil:
		return nil, none, err
	case !found:
		ours.LSN = 0
	case !cp.SameDatabase(ours):
		return nil, none, foreign(cp)
	case cp.LSN > sys.XLogPos:
		return nil, none, fatalError{fmt.Errorf("the checkpoint topic %q says slot %q was delivered up to %s, beyond this server's WAL (%s): "+
			"it was written for another database, or before a restore. Give this relay another --checkpoint-topic and --transactional-id, or another --slot",
			eo.CheckpointTopic, slot, cp.LSN, sys.XLogPos)}
	default:
		ours.LSN = cp.LSN
		log.Info("exactly-once: last committed position read", "topic", eo.CheckpointTopic, "slot", slot, "at", cp.LSN)
	}
	ok = true
	return snk, ours, nil
}
