package status

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
)

// Outcome is what became of one claimed row; see Store.Claim.
type Outcome struct {
	// ID is the row's id.
	ID int64
	// Delivered: Kafka acknowledged the event; the row becomes DELIVERED.
	Delivered bool
	// Dead: the attempt failed and no more are allowed; the row becomes DEAD.
	Dead bool
	// Err is why the attempt failed, for last_error (when not Delivered).
	Err error
	// Loaded, for a Reload row, is the record read from its outbox row:
	// stored in the status row when the row stays held (FAILED, DEAD,
	// PAUSED), so that list and show have it. A row Delivered keeps only
	// the topic it was sent to: its outbox row is the record, and leaving
	// the copy out makes a switch-over's bulk update about a third the
	// size. The row stays a Reload row: each attempt reads the outbox row
	// again.
	Loaded *Row
	// Paused: a Reload row whose record, loaded, is for a topic that is
	// paused: the row becomes PAUSED with that record (Loaded), counting
	// no attempt, and its outbox row stays as it is; the topic's resume
	// makes it WAITING (ResumeTopic), and it is delivered then.
	Paused bool
	// RetryIn is how long after now to try again (when neither Delivered
	// nor Dead).
	RetryIn time.Duration
}

// Claim locks up to limit rows that are deliverable in order, passes
// them to deliver, ordered by id, and writes the outcomes deliver returns,
// in the same transaction: each answered row counts one attempt more and
// becomes DELIVERED (with delivered_at), DEAD, or FAILED with its next
// attempt time and last error (a WAITING or PAUSED row that fails becomes
// FAILED: the head of its key). Rows deliver does not answer for are left
// as they were. Claim returns how many rows it claimed.
//
// A row is deliverable when it is FAILED and due (next_attempt_at has
// passed), WAITING, or PAUSED while its topic is not paused (see Pauses),
// and it is the first held row of its topic and key, or follows it
// without a gap: every earlier held row of its key is claimed in the same
// call. Rows with a NULL key are each their own key; a reload row is of
// the key its row holds (none for a reset row not read yet). No row of a
// paused topic is claimed. A key whose first held row another
// transaction holds is skipped as a whole, not waited for. With
// Unordered, a row's key does not matter, and the rows go oldest due
// first; with ByTopic, the key is the topic.
func (s *Store) Claim(ctx context.Context, limit int, deliver func(context.Context, []Row) []Outcome) (int, error) {
	c, err := s.BeginClaim(ctx, limit, nil)
	if err != nil {
		return 0, err
	}
	defer c.Abort(ctx) // after Finish's commit, a no-op; else (deliver panics) the rows are let go
	if len(c.Rows) == 0 {
		return 0, c.Finish(ctx, nil)
	}
	return len(c.Rows), c.Finish(ctx, deliver(ctx, c.Rows))
}

// Claimed is a claim that BeginClaim began: its rows, locked in a
// transaction of its own until Finish or Abort.
type Claimed struct {
	s  *Store
	tx pgx.Tx
	// Rows are the rows claimed, ordered by id; none when nothing was
	// deliverable.
	Rows []Row
}

// BeginClaim locks up to limit rows deliverable in order, as Claim does,
// in a transaction of its own, and returns them for Finish (or Abort).
// It leaves out the rows whose ids are in exclude: those of an earlier
// claim whose every row Kafka acknowledged, and whose outcomes another
// transaction is writing. Until it commits they read as they were, and
// the rows of their keys after them are deliverable; it must commit
// before this claim's rows are produced, and if it does not, this claim
// is to be aborted (its rows may come after rows that stay held).
func (s *Store) BeginClaim(ctx context.Context, limit int, exclude []int64) (*Claimed, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("claim due rows of %s: %w", s.table, err)
	}
	claim := s.claimInOrder
	if s.unordered {
		claim = s.claimUnordered
	}
	due, err := claim(ctx, tx, limit, exclude)
	if err != nil {
		s.rollback(ctx, tx)
		return nil, fmt.Errorf("claim due rows of %s: %w", s.table, err)
	}
	return &Claimed{s: s, tx: tx, Rows: due}, nil
}

// Abort ends the claim without writing anything: its rows stay as they
// were.
func (c *Claimed) Abort(ctx context.Context) { c.s.rollback(ctx, c.tx) }

// rollback rolls tx back, within the outcome timeout, also after ctx
// ended; after a commit, a no-op.
func (s *Store) rollback(ctx context.Context, tx pgx.Tx) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.outcomeTimeout)
	defer cancel()
	_ = tx.Rollback(rctx)
}

// Finish writes outcomes, what became of the claimed rows (see Claim),
// and commits: rows without an outcome stay as they were. What Kafka
// answered is written even when ctx ended meanwhile (a stop): rolling it
// back would send delivered events again; its time counts from here.
func (c *Claimed) Finish(ctx context.Context, outcomes []Outcome) (err error) {
	s, tx, due := c.s, c.tx, c.Rows
	defer s.rollback(ctx, tx)
	if len(due) == 0 {
		return tx.Commit(ctx)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.outcomeTimeout)
	defer cancel()
	if err := s.lockSharedRows(wctx, tx, due, outcomes); err != nil {
		return fmt.Errorf("lock the outbox rows of %s's outcomes: %w", s.table, err)
	}
	outcomes, err = s.dropSuperseded(wctx, tx, due, outcomes)
	if err != nil {
		return fmt.Errorf("record delivery attempts in %s: %w", s.table, err)
	}
	if err := s.recordOutcomes(wctx, tx, outcomes); err != nil {
		return fmt.Errorf("record delivery attempts in %s: %w", s.table, err)
	}
	if err := s.writeOutcomes(wctx, tx, due, outcomes); err != nil {
		return fmt.Errorf("write the outcomes of %s to their outbox rows: %w", s.table, err)
	}
	if err := tx.Commit(wctx); err != nil {
		return fmt.Errorf("record delivery attempts in %s: %w", s.table, err)
	}
	return nil
}

// withoutIDs returns the first limit of ids's candidates that are not in
// exclude (see BeginClaim), in their order; ids are read by id(i) of n.
func withoutIDs(n, limit int, exclude []int64, id func(i int) int64) []int {
	skip := make(map[int64]bool, len(exclude))
	for _, x := range exclude {
		skip[x] = true
	}
	var keep []int
	for i := 0; i < n && len(keep) < limit; i++ {
		if !skip[id(i)] {
			keep = append(keep, i)
		}
	}
	return keep
}

// dropSuperseded finds the claimed rows of tables with reset triggers
// whose attempt did not deliver (failed, given up on, or parked for its
// topic's pause) and whose event a runbook reset while they were claimed:
// the reset trigger, which skips a locked row rather than wait for it,
// added a reload row for the event after this one (a higher id), which
// sends the row as it is now. Such a row's attempt is superseded: it must
// neither be tried again nor given up on (a second copy in the old place,
// a DEAD row), nor write the failed or dead value over the reset. It is
// deleted, and its outcome dropped. The outbox rows are locked first, so
// that a reset still in flight (a runbook's open transaction) is waited
// for and its reload row seen. A delivered attempt is left as it is: its
// DELIVERED is the truth of the copy it sent. It returns the outcomes
// still to record and write back.
func (s *Store) dropSuperseded(ctx context.Context, tx pgx.Tx, due []Row, outcomes []Outcome) ([]Outcome, error) {
	if !slices.ContainsFunc(outcomes, func(o Outcome) bool { return !o.Delivered }) {
		return outcomes, nil // the common claim: nothing to look at, no map to build
	}
	byID := make(map[int64]*Row, len(due))
	for i := range due {
		byID[due[i].ID] = &due[i]
	}
	var ids []int64
	events := map[string][]string{} // by source table
	var tables []string
	for _, o := range outcomes {
		r := byID[o.ID]
		if o.Delivered || r == nil || r.EventID == "" || !s.rows.Resets(r.SourceTable) {
			continue
		}
		if events[r.SourceTable] == nil {
			tables = append(tables, r.SourceTable)
		}
		ids, events[r.SourceTable] = append(ids, o.ID), append(events[r.SourceTable], r.EventID)
	}
	if len(ids) == 0 {
		return outcomes, nil
	}
	for _, t := range tables {
		if err := s.rows.Lock(ctx, tx, t, events[t]); err != nil {
			return nil, err
		}
	}
	rows, _ := tx.Query(ctx, "SELECT o.id FROM "+s.table+" AS o WHERE o.id = ANY($1) AND "+s.mine("o")+" AND EXISTS (SELECT 1 FROM "+s.table+" AS n"+
		" WHERE n.source_table = o.source_table AND n.event_id = o.event_id AND n.id > o.id AND n.reload AND "+s.mine("n")+")", ids)
	superseded, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(superseded) == 0 {
		return outcomes, err
	}
	gone := make(map[int64]bool, len(superseded))
	for _, id := range superseded {
		gone[id] = true
	}
	if _, err := tx.Exec(ctx, "DELETE FROM "+s.table+" AS d WHERE d.id = ANY($1) AND "+s.mine("d"), superseded); err != nil {
		return nil, err
	}
	kept := make([]Outcome, 0, len(outcomes))
	for _, o := range outcomes {
		if !gone[o.ID] {
			kept = append(kept, o)
		}
	}
	return kept, nil
}

// recordOutcomes writes each outcome to its status row, in tx: one
// statement per kind of outcome, whatever the number of rows (the ids, and
// each row's own values, as arrays), all sent in one round trip. A loaded
// record is stored before its row's outcome; a loaded row delivered gets
// its topic with its outcome instead (one update of the row, the bulk of
// a switch-over's), and no copy of the record.
func (s *Store) recordOutcomes(ctx context.Context, tx pgx.Tx, outcomes []Outcome) error {
	var (
		loaded               loadedRecords
		sent                 sentTopics // loaded and delivered
		paused, delivered    []int64
		deadIDs, failedIDs   []int64
		deadErrs, failedErrs []string
		failedIn             []int64 // microseconds
	)
	for _, o := range outcomes {
		if o.Loaded != nil && o.Delivered && !o.Paused {
			sent.ids, sent.topics = append(sent.ids, o.ID), append(sent.topics, sanitize(o.Loaded.Topic))
			continue
		}
		if o.Loaded != nil {
			loaded.add(o.ID, o.Loaded)
		}
		switch {
		case o.Paused:
			paused = append(paused, o.ID)
		case o.Delivered:
			delivered = append(delivered, o.ID)
		case o.Dead:
			deadIDs, deadErrs = append(deadIDs, o.ID), append(deadErrs, sanitize(o.Err.Error()))
		default:
			failedIDs, failedErrs = append(failedIDs, o.ID), append(failedErrs, sanitize(o.Err.Error()))
			failedIn = append(failedIn, o.RetryIn.Microseconds())
		}
	}
	var b pgx.Batch
	loaded.queue(&b, s.table, s.mine("s"))
	sent.queue(&b, s.table, s.mine("s"))
	if len(paused) > 0 {
		b.Queue("UPDATE "+s.table+" AS s SET status = 'PAUSED', last_error = $2, updated_at = clock_timestamp() WHERE s.id = ANY($1) AND "+s.mine("s"),
			paused, pausedReason)
	}
	if len(delivered) > 0 {
		b.Queue("UPDATE "+s.table+" AS s SET "+deliveredSet+" WHERE s.id = ANY($1) AND "+s.mine("s"), delivered)
	}
	if len(deadIDs) > 0 {
		b.Queue("UPDATE "+s.table+" AS s SET status = 'DEAD', attempts = s.attempts + 1, last_error = u.err, updated_at = clock_timestamp()"+
			" FROM unnest($1::bigint[], $2::text[]) AS u(id, err) WHERE s.id = u.id AND "+s.mine("s"), deadIDs, deadErrs)
	}
	if len(failedIDs) > 0 {
		b.Queue("UPDATE "+s.table+" AS s SET status = 'FAILED', attempts = s.attempts + 1, last_error = u.err, updated_at = t.now,"+
			" next_attempt_at = t.now + u.us * interval '1 microsecond'"+
			" FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS u(id, err, us), (SELECT clock_timestamp() AS now) AS t"+
			" WHERE s.id = u.id AND "+s.mine("s"), failedIDs, failedErrs, failedIn)
	}
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, &b).Close()
}

// sentTopics are the topics loaded Reload rows were delivered to, for
// one UPDATE over unnest of them that also makes the rows DELIVERED.
type sentTopics struct {
	ids    []int64
	topics []string
}

// queue queues on b the update that makes each row of table DELIVERED
// with its topic, of the rows s that mine (the store's publisher's)
// holds of; nothing without rows.
func (t *sentTopics) queue(b *pgx.Batch, table, mine string) {
	if len(t.ids) == 0 {
		return
	}
	b.Queue("UPDATE "+table+" AS s SET topic = u.topic, "+deliveredSet+
		" FROM unnest($1::bigint[], $2::text[]) AS u(id, topic) WHERE s.id = u.id AND "+mine, t.ids, t.topics)
}

// loadedRecords are the records of loaded Reload rows, as columns of the
// status table, for one UPDATE over unnest of them.
type loadedRecords struct {
	ids          []int64
	topics       []string
	keys, values [][]byte
	headers      []*string    // JSON text, or nil
	timestamps   []*time.Time // nil: none
	partitions   []*int32     // nil: not placed
}

// deliveredSet is the SET list of a status row s that a claim delivered.
const deliveredSet = "status = 'DELIVERED', attempts = s.attempts + 1, delivered_at = clock_timestamp(), updated_at = clock_timestamp()"

// queue queues on b the update that stores each record in its row of
// table, of the rows s that mine (the store's publisher's) holds of;
// nothing without records.
func (l *loadedRecords) queue(b *pgx.Batch, table, mine string) {
	if len(l.ids) == 0 {
		return
	}
	b.Queue("UPDATE "+table+" AS s SET topic = u.topic, record_key = u.k, record_value = u.v, headers = u.h::jsonb, record_timestamp = u.ts, record_partition = u.p"+
		" FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::bytea[], $5::text[], $6::timestamptz[], $7::integer[]) AS u(id, topic, k, v, h, ts, p)"+
		" WHERE s.id = u.id AND "+mine, l.ids, l.topics, l.keys, l.values, l.headers, l.timestamps, l.partitions)
}

// add appends row id's record r.
func (l *loadedRecords) add(id int64, r *Row) {
	var ts *time.Time
	if !r.Timestamp.IsZero() {
		ts = &r.Timestamp
	}
	var headers *string
	if h := encodeHeaders(r.Headers); h != nil {
		s := string(h)
		headers = &s
	}
	l.ids = append(l.ids, id)
	l.topics = append(l.topics, sanitize(r.Topic))
	l.keys = append(l.keys, r.Key)
	l.values = append(l.values, r.Value)
	l.headers = append(l.headers, headers)
	l.timestamps = append(l.timestamps, ts)
	var p *int32
	if r.Placed {
		p = &r.Partition
	}
	l.partitions = append(l.partitions, p)
}

// defaultOutcomeTimeout bounds writing a claim's outcomes once its
// delivery ended, also after a stop began.
const defaultOutcomeTimeout = 10 * time.Second

// writeOutcomes writes the poller's outcomes to the outbox rows of the
// tables that write back, in tx, after the status rows took them: the
// attempts that failed so far (the fast path's, then the poller's), and
// the next attempt's time as the status row has it. Each table's rows go
// in one OutboxRows.WriteMany, in the order of outcomes.
func (s *Store) writeOutcomes(ctx context.Context, tx pgx.Tx, due []Row, outcomes []Outcome) error {
	byID := make(map[int64]*Row, len(due))
	var again []int64 // rows to try again: their next attempt is read back
	for i := range due {
		byID[due[i].ID] = &due[i]
	}
	for _, o := range outcomes {
		if r := byID[o.ID]; r != nil && s.rows.Writes(r.SourceTable) && !o.Delivered && !o.Dead {
			again = append(again, o.ID)
		}
	}
	next := map[int64]time.Time{}
	if len(again) > 0 {
		rows, _ := tx.Query(ctx, "SELECT d.id, d.next_attempt_at FROM "+s.table+" AS d WHERE d.id = ANY($1) AND "+s.mine("d"), again)
		var id int64
		var at time.Time
		if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error { next[id] = at; return nil }); err != nil {
			return err
		}
	}
	byTable := map[string][]outboxrow.RowOutcome{}
	var tables []string // in the order of outcomes
	for _, o := range outcomes {
		r := byID[o.ID]
		if r == nil || !s.rows.Writes(r.SourceTable) || o.Paused {
			continue // a row parked for its topic's pause was not sent: its outbox row stays pending
		}
		if byTable[r.SourceTable] == nil {
			tables = append(tables, r.SourceTable)
		}
		byTable[r.SourceTable] = append(byTable[r.SourceTable], outboxrow.RowOutcome{ID: r.EventID, O: outboxOutcome(r, o, next[o.ID])})
	}
	for _, t := range tables {
		if err := s.rows.WriteMany(ctx, tx, t, byTable[t]); err != nil {
			return err
		}
	}
	return nil
}

// outboxOutcome is what the outbox row of r is to say of o, the poller's
// outcome, next the row's next attempt (o failed).
func outboxOutcome(r *Row, o Outcome, next time.Time) outboxrow.Outcome {
	// The poller's attempts before this one failed, and so did the fast
	// path's, unless the row is sent again as it is now (a reset, an
	// adopted row: no attempt failed before) or was parked behind its key
	// or its topic's pause without an attempt.
	failed := r.Attempts + 1
	if r.Reload || r.Status == Waiting || r.Status == Paused {
		failed = r.Attempts
	}
	switch {
	case o.Dead:
		return outboxrow.Outcome{State: outboxrow.Dead, Reason: o.Err.Error(), Attempts: failed + 1, Attempted: true}
	case !o.Delivered:
		return outboxrow.Outcome{State: outboxrow.Failed, Reason: o.Err.Error(), Attempts: failed + 1, NextAttempt: next, Attempted: true}
	}
	return outboxrow.Outcome{State: outboxrow.Delivered, Attempts: failed, Attempted: true}
}
