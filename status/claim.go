package status

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
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
	// RetryIn is how long after now to try again (when neither Delivered
	// nor Dead).
	RetryIn time.Duration
}

// Claim locks up to limit FAILED rows that are due (next_attempt_at has
// passed), oldest due first, skipping rows another transaction holds; it
// passes them to deliver and writes the outcomes deliver returns, in the
// same transaction: each answered row counts one attempt more and becomes
// DELIVERED (with delivered_at), DEAD, or FAILED with its next attempt
// time and last error. Rows deliver does not answer for are left as they
// were. Claim returns how many rows it claimed.
func (s *Store) Claim(ctx context.Context, limit int, deliver func(context.Context, []Row) []Outcome) (int, error) {
	var claimed int
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, "SELECT "+rowColumns+" FROM "+s.table+
			" WHERE status = 'FAILED' AND next_attempt_at <= now() ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED", limit)
		due, err := pgx.CollectRows(rows, scanRow)
		if err != nil {
			return fmt.Errorf("claim due rows of %s: %w", s.table, err)
		}
		claimed = len(due)
		if claimed == 0 {
			return nil
		}
		var b pgx.Batch
		for _, o := range deliver(ctx, due) {
			switch {
			case o.Delivered:
				b.Queue("UPDATE "+s.table+" SET status = 'DELIVERED', attempts = attempts + 1, delivered_at = clock_timestamp(), updated_at = clock_timestamp() WHERE id = $1", o.ID)
			case o.Dead:
				b.Queue("UPDATE "+s.table+" SET status = 'DEAD', attempts = attempts + 1, last_error = $2, updated_at = clock_timestamp() WHERE id = $1", o.ID, sanitize(o.Err.Error()))
			default:
				b.Queue("UPDATE "+s.table+" SET attempts = attempts + 1, last_error = $2, next_attempt_at = clock_timestamp() + $3::interval,"+
					" updated_at = clock_timestamp() WHERE id = $1", o.ID, sanitize(o.Err.Error()), o.RetryIn)
			}
		}
		if b.Len() == 0 {
			return nil
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("record delivery attempts in %s: %w", s.table, err)
		}
		return nil
	})
	return claimed, err
}
