package status

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// DueChannel is the PostgreSQL notification channel on which the changes
// that make parked events deliverable at once (Retry, Skip, Purge,
// ResumeTopic: `cdc-relay failed retry`, `skip`, `purge`, `resume`, and
// the admin endpoints; and the reset trigger's function, when a runbook
// sets an outbox row back to a pending value) tell the poller to look now
// rather than at its next interval. They notify in their own transaction, so the poller
// hears of a change only once it committed. A runbook that makes rows due
// with its own SQL can do the same: NOTIFY cdc_relay_due. The payload is
// not read; a notification only makes the poller look sooner.
const DueChannel = "cdc_relay_due"

// notifyDue tells the listening pollers, when tx commits, that rows may be
// due now.
func notifyDue(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", DueChannel)
	return err
}

// ListenDue listens on DueChannel with conn, which it uses alone until it
// returns, and calls woken for each notification (several that arrive
// together may be heard as one). It returns when ctx ends or conn fails,
// with the error; conn is then left to the caller to close, as a
// notification's wait that ctx ended leaves it unusable.
func ListenDue(ctx context.Context, conn *pgx.Conn, woken func()) error {
	if _, err := conn.Exec(ctx, "LISTEN "+DueChannel); err != nil {
		return fmt.Errorf("listen on %s: %w", DueChannel, err)
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("wait for a notification on %s: %w", DueChannel, err)
		}
		woken()
	}
}

// notifyReleased notifies DueChannel, in tx, when one of changes released
// rows held behind it (Change.Released).
func notifyReleased(ctx context.Context, tx pgx.Tx, changes []Change) error {
	for _, c := range changes {
		if c.Released > 0 {
			return notifyDue(ctx, tx)
		}
	}
	return nil
}
