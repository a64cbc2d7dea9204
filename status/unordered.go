package status

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// This file is the claim without ordered parking (`--ordering none`).

// Unordered makes Claim take due FAILED rows, oldest due first, as before
// ordered parking: a row is claimed whatever rows of its key are held
// before it (a DEAD one, a FAILED one not due). WAITING and PAUSED rows
// (parked while ordering was on, or by a topic's pause) are claimed as
// their own heads; no row of a paused topic is claimed (see Pauses).
func Unordered() Option {
	return func(s *Store) { s.unordered = true }
}

// claimUnordered returns, locked in tx, up to limit deliverable rows
// (see deliverable), the oldest due first, within the claim's bound
// (ClaimBytes); rows another transaction holds are skipped, and so are
// those of exclude (see BeginClaim). The rows that fit are chosen by
// their stored size before any is read or locked.
func (s *Store) claimUnordered(ctx context.Context, tx pgx.Tx, limit int, exclude []int64) ([]Row, error) {
	args := []any{limit + len(exclude)}
	if s.pauses != "" {
		args = append(args, s.slot)
	}
	rows, _ := tx.Query(ctx, "SELECT d.id, "+recordSize+" FROM "+s.table+" AS d WHERE "+s.deliverable()+" AND "+s.mine("d")+
		" ORDER BY d.next_attempt_at, d.id LIMIT $1", args...)
	var ids, sizes []int64
	var id, size int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &size}, func() error {
		ids, sizes = append(ids, id), append(sizes, size)
		return nil
	}); err != nil {
		return nil, err
	}
	if len(exclude) > 0 {
		keep := withoutIDs(len(ids), limit, exclude, func(i int) int64 { return ids[i] })
		for j, i := range keep {
			ids[j], sizes[j] = ids[i], sizes[i]
		}
		ids, sizes = ids[:len(keep)], sizes[:len(keep)]
	}
	args[0] = ids[:s.within(len(ids), func(i int) int64 { return sizes[i] })]
	rows, _ = tx.Query(ctx, "SELECT "+rowColumns+" FROM "+s.table+" AS d WHERE d.id = ANY($1) AND "+s.deliverable()+" AND "+s.mine("d")+
		" ORDER BY next_attempt_at, id FOR UPDATE SKIP LOCKED", args...)
	locked, err := pgx.CollectRows(rows, scanRow)
	s.ownRows(locked)
	return locked, err
}
