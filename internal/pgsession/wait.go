package pgsession

import (
	"context"
	"fmt"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// WaitGone waits until none of pids is a server process any more, or ctx
// ends (an error then, naming them).
func WaitGone(ctx context.Context, q pgdb.DB, pids []int32) error {
	for {
		var left int
		err := q.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)", pids).Scan(&left)
		switch {
		case err != nil:
			return fmt.Errorf("wait for the server processes %v to exit: %w", pids, err)
		case left == 0:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server processes %v did not exit: %w", pids, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
