package relay

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// standbyPoll is how often a standby relay retries the leadership lock.
const standbyPoll = 2 * time.Second

// leaderLock tries the slot's advisory lock: one relay (or `cdc-relay
// recover`) at a time leads a slot.
const leaderLock = "SELECT pg_try_advisory_lock(hashtextextended('cdc-relay/' || $1, 0))"

// tryLead takes the slot's advisory lock if no one holds it. It returns a
// release function, or nil when another session holds the lock.
func tryLead(ctx context.Context, pool *pgxpool.Pool, slot string) (release func(), err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire leadership connection: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, leaderLock, slot).Scan(&ok); err != nil {
		conn.Release()
		return nil, fmt.Errorf("take leadership lock for slot %q: %w", slot, err)
	}
	if !ok {
		conn.Release()
		return nil, nil
	}
	return func() {
		_ = conn.Conn().Close(context.Background())
		conn.Release()
	}, nil
}

// lead takes the slot's advisory lock on a connection held for the
// session's life, waiting while another relay holds it. It returns a
// function that releases the lock, or nil, nil if ctx ends while waiting.
func lead(ctx context.Context, pool *pgxpool.Pool, slot string, log *slog.Logger) (release func(), err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire leadership connection: %w", err)
	}
	warned := false
	for {
		var ok bool
		if err := conn.QueryRow(ctx, leaderLock, slot).Scan(&ok); err != nil {
			conn.Release()
			if ctx.Err() != nil {
				return nil, nil
			}
			return nil, fmt.Errorf("take leadership lock for slot %q: %w", slot, err)
		}
		if ok {
			log.Info("leadership acquired", "slot", slot)
			return func() {
				// Closing the session releases the lock.
				_ = conn.Conn().Close(context.Background())
				conn.Release()
			}, nil
		}
		if !warned {
			log.Info("another relay leads this slot; standing by", "slot", slot)
			warned = true
		}
		select {
		case <-ctx.Done():
			conn.Release()
			return nil, nil
		case <-time.After(standbyPoll):
		}
	}
}
