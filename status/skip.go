package status

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
)

// This file is the operator giving up on events (`cdc-relay failed skip`),
// and what each row waits for.

// skippedPrefix starts the last_error of a skipped row.
const skippedPrefix = "skipped by an operator: "

// SkipOptions says which rows Skip gives up on: the rows named by IDs.
type SkipOptions struct {
	IDs []int64
}

// Skip gives up on FAILED and DEAD rows: each becomes DEAD with
// skipped_at now() and its last_error prefixed "skipped by an operator: ".
// A skipped row no longer holds its key: the WAITING rows behind it are
// released (Change.Released) and the poller delivers them in order. Its
// outbox row, when its table writes back, says dead. Rows in other states,
// and rows skipped already, are not changed. It waits for a row the poller
// has locked, and then sees its latest state.
//
// It returns the rows it changed, ordered by id. The ids it could not skip
// are reported in the error, after the others have been skipped and
// committed: errors.Is(err, ErrNotFound) for an id not in the table. The
// changes returned are valid even when the error is not nil.
func (s *Store) Skip(ctx context.Context, opts SkipOptions) ([]Change, error) {
	if len(opts.IDs) == 0 {
		return nil, errors.New("skip: give the ids to skip")
	}
	var changes []Change
	var skipped error // ids not skipped; the others still commit
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "WITH target AS (SELECT t.id, t.status FROM "+s.table+" AS t"+
			" WHERE t.id = ANY($1) AND t.status IN ('FAILED', 'DEAD') AND t.skipped_at IS NULL AND "+s.mine("t")+" FOR UPDATE)"+
			" UPDATE "+s.table+" AS d SET status = 'DEAD', skipped_at = now(), updated_at = now(), last_error = $2 || d.last_error"+
			" FROM target WHERE d.id = target.id AND "+s.mine("d")+" RETURNING "+changeColumns("d", "target.status"), opts.IDs, skippedPrefix)
		if err != nil {
			return err
		}
		var sources []source
		if changes, sources, err = collectChanges(rows); err != nil {
			return err
		}
		for _, src := range sources {
			o := outboxrow.Outcome{State: outboxrow.Dead, Reason: "given up: skipped by an operator", Attempts: -1}
			if err := s.rows.Write(ctx, tx, src.table, src.eventID, o); err != nil {
				return err
			}
		}
		if err := s.countReleased(ctx, tx, changes, sources); err != nil {
			return err
		}
		if err := notifyReleased(ctx, tx, changes); err != nil {
			return err
		}
		skipped, err = s.explainNotSkipped(ctx, tx, opts.IDs, changes)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("skip in %s: %w", s.table, err)
	}
	return changes, skipped
}

// explainNotSkipped says why each of ids missing from changes was not
// skipped, joined in notSkipped; err is a failed query.
func (s *Store) explainNotSkipped(ctx context.Context, tx pgx.Tx, ids []int64, changes []Change) (notSkipped, err error) {
	missing := missingIDs(ids, changes)
	if len(missing) == 0 {
		return nil, nil
	}
	rows, _ := tx.Query(ctx, "SELECT d.id, d.status, d.skipped_at IS NOT NULL FROM "+s.table+" AS d WHERE d.id = ANY($1) AND "+s.mine("d"), missing)
	type found struct {
		status  string
		skipped bool
	}
	present := map[int64]found{}
	var (
		id int64
		f  found
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &f.status, &f.skipped}, func() error { present[id] = f; return nil }); err != nil {
		return nil, err
	}
	var errs []error
	for _, id := range missing {
		switch f, ok := present[id]; {
		case !ok:
			errs = append(errs, s.notFound(id))
		case f.skipped:
			errs = append(errs, fmt.Errorf("id %d was skipped already", id))
		default:
			errs = append(errs, fmt.Errorf("id %d is %s: skip gives up FAILED and DEAD events only", id, f.status))
		}
	}
	return errors.Join(errs...), nil
}

// countReleased sets the Released count of each change: after it, in tx,
// the WAITING rows of its key behind it up to the next held FAILED or DEAD
// row, when no held row of its key comes before it.
func (s *Store) countReleased(ctx context.Context, tx pgx.Tx, changes []Change, sources []source) error {
	var (
		ids    []int64
		topics []string
		keys   [][]byte
	)
	for i, src := range sources {
		if src.key != nil {
			ids, topics, keys = append(ids, changes[i].ID), append(topics, src.topic), append(keys, src.key)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, _ := tx.Query(ctx, "SELECT x.id, (SELECT count(*) FROM "+s.table+" AS w WHERE w.status = 'WAITING' AND "+sameKey("w", "x")+" AND w.id > x.id AND "+s.mine("w")+
		" AND NOT EXISTS (SELECT 1 FROM "+s.table+" AS b WHERE b.status IN ('FAILED', 'DEAD') AND b.skipped_at IS NULL AND "+sameKey("b", "x")+
		" AND b.id > x.id AND b.id < w.id AND "+s.mine("b")+"))"+
		" FROM unnest($1::bigint[], $2::text[], $3::bytea[]) AS x(id, topic, record_key)"+
		" WHERE NOT EXISTS (SELECT 1 FROM "+s.table+" AS e WHERE "+heldWhere("e")+" AND "+sameKey("e", "x")+" AND e.id < x.id AND "+s.mine("e")+")", ids, topics, keys)
	released := map[int64]int{}
	var (
		id int64
		n  int
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error { released[id] = n; return nil }); err != nil {
		return err
	}
	for i := range changes {
		changes[i].Released = released[changes[i].ID]
	}
	return nil
}

// waitsFor is the column that says what a held row d waits for: the id of
// the first held row of its key when it comes after it, else 0.
func (s *Store) waitsFor() string {
	return "coalesce(CASE WHEN " + heldWhere("d") + " THEN (SELECT min(h.id) FROM " + s.table + " AS h WHERE " +
		heldWhere("h") + " AND " + sameKey("h", "d") + " AND h.id < d.id AND " + s.mine("h") + ") END, 0)"
}

// scanListed reads a Row selected with rowColumns, waitsFor and the
// publisher.
func scanListed(r pgx.CollectableRow) (Row, error) {
	var waits int64
	var publisher string
	row, err := scanRowWith(r, &waits, &publisher)
	row.WaitsFor, row.Publisher = waits, publisher
	return row, err
}

// WouldRelease counts, for each of ids (rows of s's publisher), the
// WAITING rows of its key that a Skip or Purge of it would release now:
// those behind it up to the next held FAILED or DEAD row of its key, when
// no held row of its key comes before it (the count Change.Released would
// say). An id not in the table, or without a key, counts 0. It reads
// only, in one read-only transaction.
func (s *Store) WouldRelease(ctx context.Context, ids []int64) (map[int64]int, error) {
	out := map[int64]int{}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET TRANSACTION READ ONLY"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT d.id, d.topic, d.record_key FROM "+s.table+" AS d WHERE d.id = ANY($1) AND "+s.mine("d"), ids)
		if err != nil {
			return err
		}
		var (
			changes []Change
			sources []source
			src     source
			id      int64
		)
		if _, err := pgx.ForEachRow(rows, []any{&id, &src.topic, &src.key}, func() error {
			changes, sources = append(changes, Change{ID: id}), append(sources, source{topic: src.topic, key: src.key})
			return nil
		}); err != nil {
			return err
		}
		if err := s.countReleased(ctx, tx, changes, sources); err != nil {
			return err
		}
		for _, c := range changes {
			out[c.ID] = c.Released
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count the events released in %s: %w", s.table, err)
	}
	return out, nil
}
