package status

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
)

// This file is what operators do to the status table: list and read rows,
// make them due again, delete them.

// ErrNotFound means the status table has no row with an id that Get, Retry
// or Purge was given. Test for it with errors.Is.
var ErrNotFound = errors.New("not found")

// ErrHeld means Retry was given the id of a WAITING or PAUSED row: it is
// delivered in its key's order once the row it waits for is retried,
// skipped or purged, or once its topic is resumed. Test for it with
// errors.Is.
var ErrHeld = errors.New("held behind")

// ErrDelivered means Retry was given the id of a DELIVERED row: the event
// reached Kafka, and retrying it would send it twice. Test for it with
// errors.Is.
var ErrDelivered = errors.New("already delivered")

// ErrTopicRefused means Retry was given a new topic (RetryOptions.Topic)
// that is not a legal Kafka topic name, or that the relay does not allow
// (the caller's check). Test for it with errors.Is.
var ErrTopicRefused = errors.New("refused as a topic")

// ErrTopicTaken means Retry was given a new topic for an event that has a
// row for that topic already (an event routed to several topics): retry or
// purge that row instead. Test for it with errors.Is.
var ErrTopicTaken = errors.New("topic taken")

// ErrTopicKept means Retry was given a new topic for a row whose topic
// cannot or need not change: a reload row (sent as its outbox row is now:
// correct the outbox row), or a row already for that topic (retry it
// without a topic). Test for it with errors.Is.
var ErrTopicKept = errors.New("topic not changed")

// ListOptions says which rows List returns.
type ListOptions struct {
	// Status keeps the rows in this state (Failed, Delivered, Dead,
	// Waiting or Paused); "" keeps every state.
	Status string
	// Topic keeps the rows of this topic, compared exactly; "" keeps every
	// topic.
	Topic string
	// Limit is the most rows returned; 0 or less returns them all.
	Limit int
}

// List returns the rows that match opts, newest first (by id, which grows
// with every row recorded), each with what it waits for (Row.WaitsFor).
// It reads only.
func (s *Store) List(ctx context.Context, opts ListOptions) ([]Row, error) {
	var (
		where = []string{s.mine("d")}
		args  []any
	)
	if opts.Status != "" {
		if err := checkState(opts.Status); err != nil {
			return nil, err
		}
		args = append(args, opts.Status)
		where = append(where, fmt.Sprintf("d.status = $%d", len(args)))
	}
	if opts.Topic != "" {
		args = append(args, opts.Topic)
		where = append(where, fmt.Sprintf("d.topic = $%d", len(args)))
	}
	sql := "SELECT " + rowColumns + ", " + s.waitsFor() + ", d.publisher FROM " + s.table + " AS d WHERE " + strings.Join(where, " AND ") + " ORDER BY d.id DESC"
	if opts.Limit > 0 {
		args = append(args, opts.Limit)
		sql += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.table, err)
	}
	list, err := pgx.CollectRows(rows, scanListed)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.table, err)
	}
	return list, nil
}

// Get returns the row with id, with what it waits for (Row.WaitsFor). An id that is not in the table is an error
// for which errors.Is(err, ErrNotFound) is true. It reads only.
func (s *Store) Get(ctx context.Context, id int64) (Row, error) {
	rows, err := s.db.Query(ctx, "SELECT "+rowColumns+", "+s.waitsFor()+", d.publisher FROM "+s.table+" AS d WHERE d.id = $1 AND "+s.mine("d"), id)
	if err != nil {
		return Row{}, fmt.Errorf("read id %d from %s: %w", id, s.table, err)
	}
	row, err := pgx.CollectExactlyOneRow(rows, scanListed)
	if errors.Is(err, pgx.ErrNoRows) {
		return Row{}, s.notFound(id)
	}
	if err != nil {
		return Row{}, fmt.Errorf("read id %d from %s: %w", id, s.table, err)
	}
	return row, nil
}

// Change is a row that Retry, Purge or Skip acted on.
type Change struct {
	ID int64
	// Was is the row's state before: Failed or Dead for Retry and Skip,
	// any state for Purge.
	Was string
	// Released, for Purge, Skip and a Retry that corrects the topic, is
	// how many WAITING events of the row's key (its topic before the
	// correction) it released: those behind it, up to the next held
	// FAILED or DEAD row of the key, when it was the first held row of its
	// key.
	Released int
}

// RetryOptions says which rows Retry makes due again: the rows named by
// IDs, or with All every FAILED and DEAD row (only those of Status when it
// is set). Give IDs or All, not both.
type RetryOptions struct {
	IDs []int64
	All bool
	// Status narrows All to Failed or Dead rows; "" takes both.
	Status string
	// Topic, with exactly one id, corrects the row's topic before it is
	// retried: the row is delivered to Topic, and keeps the topic it was
	// parked for in original_topic (see retopic.go). Retry checks only
	// that Topic is a legal Kafka topic name; the caller checks that the
	// relay allows it (decoder.Mapping.TopicCheck).
	Topic string
	// Hold, with Topic, is called inside the change's transaction, before
	// it commits, with the row's new topic and key when the row is ordered
	// (it has a key and is not a reload row): the running relay holds the
	// key's later events behind the row from then on. The function it
	// returns is called if the change then fails to commit.
	Hold func(Key) (undo func())
}

// Retry puts rows back to FAILED with attempts 0 and next_attempt_at and
// updated_at now(), so that the poller tries each at once, with its full
// number of attempts. It changes only the rows selected by opts, and of
// those only FAILED and DEAD rows: a DELIVERED row is never changed (its
// event reached Kafka). The columns that hold the record and last_error
// are left as they are. It waits for a row the poller has locked, and
// then sees its latest state.
//
// It returns the rows it changed, ordered by id. With IDs, the ids it
// could not retry are reported in the error, after the others have been
// retried and committed: errors.Is(err, ErrNotFound) for an id not in the
// table, errors.Is(err, ErrDelivered) for a DELIVERED row. The changes
// returned are valid even when the error is not nil. With All, nothing to
// retry is an empty result and no error.
func (s *Store) Retry(ctx context.Context, opts RetryOptions) ([]Change, error) {
	if opts.Topic != "" {
		return s.retryToTopic(ctx, opts)
	}
	cond, arg, err := retryTarget(opts)
	if err != nil {
		return nil, err
	}
	var changes []Change
	var skipped error // ids not retried; the others still commit
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		// The CTE locks the rows and, for a row another transaction
		// changed meanwhile, checks its state again before the update.
		rows, err := tx.Query(ctx, "WITH target AS (SELECT t.id, t.status FROM "+s.table+" AS t WHERE "+cond+" AND "+s.mine("t")+" FOR UPDATE)"+
			" UPDATE "+s.table+" AS d SET status = 'FAILED', attempts = 0, next_attempt_at = now(), updated_at = now(), skipped_at = NULL"+
			" FROM target WHERE d.id = target.id AND "+s.mine("d")+" RETURNING "+changeColumns("d", "target.status"), arg)
		if err != nil {
			return err
		}
		var sources []source
		if changes, sources, err = collectChanges(rows); err != nil {
			return err
		}
		if err := s.writeRetried(ctx, tx, sources); err != nil {
			return err
		}
		if len(changes) > 0 {
			if err := notifyDue(ctx, tx); err != nil {
				return err
			}
		}
		if !opts.All {
			skipped, err = s.explainSkipped(ctx, tx, opts.IDs, changes)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("retry in %s: %w", s.table, err)
	}
	return changes, skipped
}

// writeRetried tells the outbox rows of retried rows, in tx, that they
// failed again, due now, their attempts counted afresh: the fast path's
// failure, unless sent as the row is now.
func (s *Store) writeRetried(ctx context.Context, tx pgx.Tx, sources []source) error {
	for _, src := range sources {
		o := outboxrow.Outcome{State: outboxrow.Failed, Attempts: 1, NextAttempt: src.next}
		if src.reload {
			o.Attempts = 0
		}
		if err := s.rows.Write(ctx, tx, src.table, src.eventID, o); err != nil {
			return err
		}
	}
	return nil
}

// retryTarget is the condition, with its argument $1, that selects the
// rows opts names, of the row t.
func retryTarget(opts RetryOptions) (cond string, arg any, err error) {
	switch {
	case len(opts.IDs) > 0 && opts.All:
		return "", nil, errors.New("retry: give ids or All, not both")
	case len(opts.IDs) == 0 && !opts.All:
		return "", nil, errors.New("retry: give the ids to retry, or All")
	case opts.Status != "" && !opts.All:
		return "", nil, errors.New("retry: Status narrows All; with ids, each named row is retried")
	case !opts.All:
		return "t.id = ANY($1) AND t.status IN ('FAILED', 'DEAD')", opts.IDs, nil
	}
	states := []string{Failed, Dead}
	switch opts.Status {
	case "":
	case Failed, Dead:
		states = []string{opts.Status}
	case Delivered:
		return "", nil, errors.New("retry: DELIVERED events are never retried: they reached Kafka")
	case Waiting, Paused:
		return "", nil, fmt.Errorf("retry: %s events are not retried: they follow the first held event of their key (retry, skip or purge that one), or their topic's resume", opts.Status)
	default:
		return "", nil, checkState(opts.Status)
	}
	return "t.status = ANY($1)", states, nil
}

// explainSkipped says why each of ids missing from changes was not
// retried, joined in skipped; err is a failed query.
func (s *Store) explainSkipped(ctx context.Context, tx pgx.Tx, ids []int64, changes []Change) (skipped, err error) {
	missing := missingIDs(ids, changes)
	if len(missing) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, "SELECT d.id, d.status, d.delivered_at, d.topic, "+s.waitsFor()+" FROM "+s.table+" AS d WHERE d.id = ANY($1) AND "+s.mine("d"), missing)
	if err != nil {
		return nil, err
	}
	type found struct {
		status, topic string
		delivered     *time.Time
		waitsFor      int64
	}
	present := map[int64]found{}
	var (
		id int64
		f  found
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &f.status, &f.delivered, &f.topic, &f.waitsFor}, func() error {
		present[id] = f
		return nil
	}); err != nil {
		return nil, err
	}
	var errs []error
	for _, id := range missing {
		f, ok := present[id]
		switch {
		case !ok:
			errs = append(errs, s.notFound(id))
		case f.waitsFor != 0:
			errs = append(errs, fmt.Errorf("id %d is %s, %w id %d of its key: retry, skip or purge id %d, and its key's events follow it in order",
				id, f.status, ErrHeld, f.waitsFor, f.waitsFor))
		case f.status == Paused:
			errs = append(errs, fmt.Errorf("id %d is PAUSED, %w its topic's pause: resume topic %q (cdc-relay resume --topic), and its events are delivered in order",
				id, ErrHeld, f.topic))
		case f.status == Delivered && f.delivered != nil:
			errs = append(errs, fmt.Errorf("id %d %w at %s: retry sends FAILED and DEAD events only",
				id, ErrDelivered, f.delivered.UTC().Format(time.RFC3339)))
		default:
			errs = append(errs, fmt.Errorf("id %d %w: retry sends FAILED and DEAD events only", id, ErrDelivered))
		}
	}
	return errors.Join(errs...), nil
}

// PurgeOptions says which rows Purge deletes: the rows named by IDs,
// whatever their state, or with Dead every DEAD row (only those last
// updated more than OlderThan ago when it is more than 0). Give IDs or
// Dead, not both.
type PurgeOptions struct {
	IDs       []int64
	Dead      bool
	OlderThan time.Duration
}

// Purge deletes rows from the status table. Deleting the first held row
// of a key releases the WAITING rows behind it (Change.Released): the
// poller delivers them in order. It deletes only the rows
// selected by opts: a row named by id is deleted in any state, FAILED
// included (the caller named it; the returned Change says what it was);
// with Dead, only DEAD rows, never FAILED or DELIVERED ones. For a DEAD
// row, updated_at is when it was marked DEAD unless it was changed since.
//
// It returns the rows it deleted, ordered by id. With IDs, the ids that
// are not in the table are reported in the error (errors.Is(err,
// ErrNotFound)) after the others have been deleted; the changes returned
// are valid even when the error is not nil. With Dead, nothing to delete
// is an empty result and no error.
func (s *Store) Purge(ctx context.Context, opts PurgeOptions) ([]Change, error) {
	var (
		sql  = "DELETE FROM " + s.table + " AS d WHERE "
		args []any
	)
	switch {
	case len(opts.IDs) > 0 && opts.Dead:
		return nil, errors.New("purge: give ids or Dead, not both")
	case len(opts.IDs) == 0 && !opts.Dead:
		return nil, errors.New("purge: give the ids to purge, or Dead")
	case opts.OlderThan < 0:
		return nil, fmt.Errorf("purge: OlderThan %s is negative", opts.OlderThan)
	case opts.OlderThan > 0 && !opts.Dead:
		return nil, errors.New("purge: OlderThan narrows Dead; with ids, each named row is deleted")
	case opts.Dead:
		sql += "d.status = 'DEAD'"
		if opts.OlderThan > 0 {
			sql += " AND d.updated_at < now() - $1::bigint * interval '1 microsecond'"
			args = append(args, opts.OlderThan.Microseconds())
		}
	default:
		sql += "d.id = ANY($1)"
		args = append(args, opts.IDs)
	}
	sql += " AND " + s.mine("d")
	var changes []Change
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql+" RETURNING "+changeColumns("d", "d.status"), args...)
		if err != nil {
			return err
		}
		var sources []source
		if changes, sources, err = collectChanges(rows); err != nil {
			return err
		}
		// An event purged before it was delivered is given up on: its row
		// says dead. A dead one already does; a delivered one keeps its
		// delivered status.
		for i, src := range sources {
			if changes[i].Was != Failed && changes[i].Was != Waiting && changes[i].Was != Paused {
				continue
			}
			o := outboxrow.Outcome{State: outboxrow.Dead, Reason: "given up: purged from the status table by an operator", Attempts: -1}
			if err := s.rows.Write(ctx, tx, src.table, src.eventID, o); err != nil {
				return err
			}
		}
		if err := s.countReleased(ctx, tx, changes, sources); err != nil {
			return err
		}
		return notifyReleased(ctx, tx, changes)
	})
	if err != nil {
		return nil, fmt.Errorf("purge from %s: %w", s.table, err)
	}
	var errs []error
	for _, id := range missingIDs(opts.IDs, changes) {
		errs = append(errs, s.notFound(id))
	}
	return changes, errors.Join(errs...)
}

// source is the outbox row a changed status row stands for, and its key.
type source struct {
	table, eventID string    // "" when not recorded
	next           time.Time // the status row's next attempt
	reload         bool      // sent as its outbox row is now
	topic          string
	key            []byte // nil for NULL
}

// changeColumns are the columns collectChanges reads, of the changed row
// alias and with was as its state before.
func changeColumns(alias, was string) string {
	return alias + ".id, " + was + ", coalesce(" + alias + ".source_table, ''), coalesce(" + alias + ".event_id, ''), " +
		alias + ".next_attempt_at, " + alias + ".reload, " + alias + ".topic, " + alias + ".record_key"
}

// collectChanges reads rows of changeColumns, ordered by id, and the
// source of each.
func collectChanges(rows pgx.Rows) ([]Change, []source, error) {
	type changed struct {
		Change
		source
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (changed, error) {
		var c changed
		err := r.Scan(&c.ID, &c.Was, &c.table, &c.eventID, &c.next, &c.reload, &c.topic, &c.key)
		return c, err
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(all, func(a, b changed) int { return cmp.Compare(a.ID, b.ID) })
	changes, sources := make([]Change, len(all)), make([]source, len(all))
	for i, c := range all {
		changes[i], sources[i] = c.Change, c.source
	}
	return changes, sources, nil
}

// missingIDs returns the ids, each once and in the order given, that
// changes lacks.
func missingIDs(ids []int64, changes []Change) []int64 {
	done := make(map[int64]bool, len(changes))
	for _, c := range changes {
		done[c.ID] = true
	}
	var missing []int64
	for _, id := range ids {
		if !done[id] {
			missing = append(missing, id)
			done[id] = true
		}
	}
	return missing
}

func (s *Store) notFound(id int64) error {
	return fmt.Errorf("id %d %w in %s", id, ErrNotFound, s.table)
}

// checkState returns an error unless state is one a row can have.
func checkState(state string) error {
	switch state {
	case Failed, Delivered, Dead, Waiting, Paused:
		return nil
	}
	return fmt.Errorf("status %q: want %s, %s, %s, %s or %s", state, Failed, Dead, Waiting, Paused, Delivered)
}
