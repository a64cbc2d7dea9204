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
// (see deliverable), the oldest due first; rows another transaction
// holds are skipped.
func (s *Store) claimUnordered(ctx context.Context, tx pgx.Tx, limit int) ([]Row, error) {
	args := []any{limit}
	if s.pauses != "" {
		args = append(args, s.slot)
	}
	rows, _ := tx.Query(ctx, "SELECT "+rowColumns+" FROM "+s.table+" AS d WHERE "+s.deliverable()+
		" ORDER BY next_attempt_at, id LIMIT $1 FOR UPDATE SKIP LOCKED", args...)
	return s.collectWithin(rows)
}
