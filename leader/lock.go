package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/tick"
)

// standbyPoll is how often a standby relay retries the leadership lock.
const standbyPoll = 2 * time.Second

// TryLockSQL tries the slot's advisory lock, the slot's name as $1, and
// returns whether it took it: one relay (or `cdc-relay recover`, or
// `migrate` while it creates the slot) at a time leads a slot, and only
// its leader creates a slot that adopts rows, or creates again one whose
// creator stopped.
const TryLockSQL = "SELECT pg_try_advisory_lock(hashtextextended('cdc-relay/' || $1, 0))"

// stillLeader reports whether this session still holds the slot's lock.
const stillLeader = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND granted
	AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('cdc-relay/' || $1, 0))`

// Lock is the slot's advisory lock, held by one session for as long
// as the relay leads.
type Lock struct {
	mu   sync.Mutex // one query at a time on conn
	conn *pgxpool.Conn
	slot string
	// ServerStart is pg_postmaster_start_time() when the lock was taken:
	// a process id means the same process only while it is unchanged.
	ServerStart time.Time
}

// Release ends the lock's session, which releases the lock.
func (l *Lock) Release() {
	_ = l.conn.Conn().Close(context.Background())
	l.conn.Release()
}

// ErrLost says the leader's lock session ended or stopped
// answering: another relay may lead the slot now.
var ErrLost = errors.New("lost the leadership lock")

// Watch checks every interval, until ctx ends, that the lock's session
// still holds the lock, waiting at most timeout for an answer. When it does
// not (a terminated session releases its locks at once, and a session that
// does not answer may be gone), another relay may lead: watch calls lost
// once, with the reason, and returns.
func (l *Lock) Watch(ctx context.Context, every, timeout time.Duration, lost func(error)) {
	tick.Every(ctx, every, func(ctx context.Context) bool {
		held, err := l.Check(ctx, timeout)
		switch {
		case ctx.Err() != nil:
			return false
		case err != nil:
			lost(fmt.Errorf("%w on slot %q: its session failed: %w", ErrLost, l.slot, err))
			return false
		case !held:
			lost(fmt.Errorf("%w on slot %q: its session no longer holds it", ErrLost, l.slot))
			return false
		}
		return true
	})
}

// Check asks the lock's session whether it still holds the lock, waiting
// at most timeout for the answer.
func (l *Lock) Check(ctx context.Context, timeout time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	var held bool
	err := l.conn.QueryRow(ctx, stillLeader, l.slot).Scan(&held)
	return held, err
}

// TryLead takes the slot's advisory lock if no one holds it. It returns
// nil, nil when another session holds the lock.
func TryLead(ctx context.Context, pool *pgxpool.Pool, slot string) (*Lock, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire leadership connection: %w", err)
	}
	// Named before the lock is taken, as lead does.
	if err := markLeader(ctx, conn, "cdc-relay recover"); err != nil {
		conn.Release()
		return nil, fmt.Errorf("name the leadership session: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, TryLockSQL, slot).Scan(&ok); err != nil {
		conn.Release()
		return nil, fmt.Errorf("take leadership lock for slot %q: %w", slot, err)
	}
	if !ok {
		conn.Release()
		return nil, nil
	}
	return &Lock{conn: conn, slot: slot}, nil
}

// Lead takes the slot's advisory lock on a connection held for the
// session's life, waiting while another relay holds it (standby, if set, is
// called when the wait begins). It returns nil, nil if ctx ends while
// waiting.
func Lead(ctx context.Context, pool *pgxpool.Pool, slot string, log *slog.Logger, standby func(), watch *StandbyWatch) (*Lock, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire leadership connection: %w", err)
	}
	// Named before the lock is taken, so that a standby never sees the
	// lock held by a session without the name (it would take a relay for
	// another session).
	if err := markLeader(ctx, conn, leaderAppName); err != nil {
		conn.Release()
		if ctx.Err() != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("name the leadership session: %w", err)
	}
	warned := false
	for {
		var ok bool
		if err := conn.QueryRow(ctx, TryLockSQL, slot).Scan(&ok); err != nil {
			conn.Release()
			if ctx.Err() != nil {
				return nil, nil
			}
			return nil, fmt.Errorf("take leadership lock for slot %q: %w", slot, err)
		}
		if ok {
			l := &Lock{conn: conn, slot: slot}
			if err := conn.QueryRow(ctx, "SELECT pg_postmaster_start_time()").Scan(&l.ServerStart); err != nil {
				l.Release()
				return nil, fmt.Errorf("read the server's start time: %w", err)
			}
			return l, nil
		}
		if !warned {
			warned = true
			if standby != nil {
				standby()
			}
		}
		if watch == nil {
			watch = &StandbyWatch{slot: slot, log: log}
		}
		watch.check(ctx, conn)
		select {
		case <-ctx.Done():
			conn.Release()
			return nil, nil
		case <-time.After(standbyPoll):
		}
	}
}

// PID is the process id of the lock session's server process.
func (l *Lock) PID() uint32 { return l.conn.Conn().PgConn().PID() }

// CheckTimeout bounds the leader's check of its lock session: one
// that does not answer for this long may be gone, and its lock with it.
const CheckTimeout = 10 * time.Second
