package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Commit commits what is open, whether due or not: at a stop, between
// transactions. It returns why it could not.
func (b *Batcher) Commit(ctx context.Context) error {
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
func (b *Batcher) commitIf(ctx context.Context, force bool) error {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	b.lockWhenParked()
	if b.broken != nil || !b.cur.begun || b.cur.open || !force && !b.dueLocked() {
		err := b.broken
		b.mu.Unlock()
		return err
	}
	txn := b.cur
	sent := b.sent + 1 // and the checkpoint record
	b.cur, b.sent, b.lastBegan = kafkaTxn{}, 0, time.Now()
	b.committing = true
	b.mu.Unlock()
	b.waitForWriteBack(ctx)

	if b.CommitHook != nil {
		b.CommitHook()
	}
	cp := b.id
	cp.LSN, cp.CommitTime = txn.lastEnd, txn.lastCommit
	b.snk.Produce(ctx, sink.CheckpointRecord(b.topic, cp), b.onCPAck)
	// Every record answered first: one that failed must keep the
	// transaction from committing without it, and so must one not
	// answered (its callback still to run) or a session that ended (a
	// record cancelled with it may not have failed yet).
	err := b.snk.Flush(ctx)
	b.fmu.Lock()
	failures := b.rejected
	b.rejected = nil
	b.fmu.Unlock()
	if acked := b.acked.Swap(0); err == nil && len(failures) == 0 && acked != int64(sent) {
		err = fmt.Errorf("%d of the transaction's %d records answered", acked, sent)
	}
	if err == nil && len(failures) == 0 && b.ProduceCtx.Err() != nil {
		err = b.ProduceCtx.Err()
	}
	if err == nil && len(failures) == 0 {
		err = b.snk.Commit(ctx)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	b.committing = false
	if err == nil && len(failures) == 0 {
		b.Metrics.KafkaTransactions.WithLabelValues("committed").Inc()
		b.account(txn.held)
		b.state.passed(uint64(txn.lastEnd))
		pending := b.pending
		b.pending = nil
		for i, it := range pending {
			if b.broken != nil {
				break
			}
			b.sendLocked(it)
			pending[i] = nil
		}
		if !b.cur.open {
			b.wakeLocked() // the next one may be due already
		}
		return b.broken
	}
	if err == nil {
		err = failures[0].err
	}
	b.Metrics.KafkaTransactions.WithLabelValues("aborted").Inc()
	b.pending = nil
	b.breakLocked(err, failures)
	return b.broken
}

// breakLocked gives up the open transaction: it learns what it can from
// the records Kafka refused (failures, and any recorded since), and ends
// the session, at once and for good if the producer was fenced or refused.
// Called with mu held.
func (b *Batcher) breakLocked(err error, failures []failure) {
	if b.broken != nil {
		return
	}
	b.broken = err
	b.fmu.Lock()
	failures = append(failures, b.rejected...)
	b.rejected = nil
	b.fmu.Unlock()
	for _, f := range failures {
		if sink.Fenced(f.err) {
			err = f.err
		}
	}
	switch {
	case sink.Fenced(err) && (errors.Is(err, kerr.ProducerFenced) || b.Leads == nil || !b.Leads(context.Background())):
		b.End(fatal.Error{Err: fmt.Errorf("Kafka fenced this relay's transactional producer %q (%w): another relay with the same transactional id "+
			"started after this one and now delivers the slot. This relay stops; nothing it had not committed is visible to read_committed consumers", b.snk.TransactionalID(), err)})
		return
	case sink.Fenced(err):
		// Still the leader: the broker ended the transaction itself (it
		// was open longer than the transaction timeout), which fenced
		// this producer's epoch. A new session starts a new producer.
		b.End(fmt.Errorf("Kafka ended the relay's transaction (%w): it was open longer than --transaction-timeout allows, or the broker lost it; "+
			"its PostgreSQL transactions are produced again", err))
		return
	case sink.ProducerRefused(err):
		b.End(fatal.Error{Err: fmt.Errorf("Kafka refuses the relay's transactional producer %q (%w): grant the relay's principal WRITE and DESCRIBE on "+
			"the transactional id, and WRITE on the topics and the checkpoint topic; check the --kafka-tls-* and --kafka-sasl-* settings", b.snk.TransactionalID(), err)})
		return
	}
	learnt := false // a record parked, or to be produced alone, from now on
	for _, f := range failures {
		switch {
		case f.it == nil:
			if !sink.MaybeTheBatch(f.err) && sink.Permanent(f.err) {
				b.End(fatal.Error{Err: fmt.Errorf("Kafka refuses the checkpoint topic %q (%w): create it (cleanup.policy=compact) or grant the relay's principal WRITE on it", b.topic, f.err)})
				return
			}
		case errors.Is(f.err, kgo.ErrAborting) || !sink.Permanent(f.err):
			// Failed because the transaction did, not for itself.
		case f.alone || !sink.MaybeTheBatch(f.err) || sink.RecordBytes(&f.it.Record) > b.snk.BatchMaxBytes():
			// Its own fault: parked, it is left out from now on. If the
			// row cannot be stored, the session ends all the same and the
			// next one meets the record again.
			// Its key is held from it on in the redo (State.holdsFrom).
			if b.ParkInOrder(f.it, b.FailedAs(f.err))() {
				learnt = b.state.add(&b.state.parked, keyOf(f.it)) || learnt
				b.state.holdFrom(&f.it.Event, keyOf(f.it))
			}
		default:
			learnt = b.state.add(&b.state.suspects, keyOf(f.it)) || learnt
		}
	}
	switch {
	case b.ProduceCtx.Err() != nil:
	case learnt:
		b.End(fmt.Errorf("%w: %v", ErrRedo, err))
	default:
		// Nothing learnt that the next try would do otherwise: a new
		// session, after the usual backoff.
		b.End(fmt.Errorf("the Kafka transaction could not commit: %w", err))
	}
}

// account counts and releases what a committed Kafka transaction held.
func (b *Batcher) account(held []*heldTxn) {
	now := time.Now()
	for _, h := range held {
		lag := max(0, now.Sub(h.pgTxn.CommitTime()).Seconds())
		for range h.events {
			b.Metrics.CommitToAck.Observe(lag)
		}
		b.Count.Events.Add(int64(h.events))
		if len(h.delivered) == 0 {
			b.Tracker.Release(h.pgTxn)
			continue
		}
		// Held until every row of it says delivered.
		w := &heldWriteBack{tracker: b.Tracker, pgTxn: h.pgTxn}
		w.left.Store(int64(len(h.delivered)))
		for _, d := range h.delivered {
			b.Outcomes.Delivered(d.table, d.id, w)
		}
	}
}

// writeBackLag is how many outcomes may wait for write-back before a
// commit waits for them: the records read meanwhile wait in flight, so the
// in-flight limits hold the reader back, and memory stays bounded while
// the database updates slower than Kafka commits.
const writeBackLag = 10000

// waitForWriteBack waits, before a commit, while more than writeBackLag
// outcomes wait to be written back, until ctx or the session ends.
func (b *Batcher) waitForWriteBack(ctx context.Context) {
	if b.Outcomes == nil {
		return
	}
	for b.Outcomes.Waiting() > writeBackLag && ctx.Err() == nil && b.ProduceCtx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-b.ProduceCtx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}
