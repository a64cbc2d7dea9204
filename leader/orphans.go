package leader

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/pgsession"
)

// Orphans are the server processes of the last session that failed: its
// walsender and the backend that held its leadership lock. When a session
// fails because the network did (a partition, a hung proxy: the stream
// reports replication.ErrSilent), the relay closes its ends of the
// connections, but the server may not learn of it for a long time, or ever
// through a proxy that keeps its sockets open. Meanwhile the walsender
// keeps the slot active, so START_REPLICATION fails, and the backend keeps
// the advisory lock, so the relay would stand by behind itself. The next
// session ends them over a new connection before it takes leadership.
//
// After a session that failed otherwise, they are normally gone already;
// ending one that is still on its way out does no harm. The zero value
// names none.
type Orphans struct {
	walsender, leader uint32    // process ids; 0 for none
	serverStart       time.Time // of the server they ran on: after a restart, ids are reused
}

// Orphans names the processes a session leaves behind if it fails: its
// walsender's (walsender, its process id) and the lock's session.
func (l *Lock) Orphans(walsender uint32) Orphans {
	return Orphans{walsender: walsender, leader: l.PID(), serverStart: l.ServerStart}
}

// End terminates the processes o names that are still what they
// were: the slot's active walsender, the holder of the slot's leadership
// lock. A process that has taken the same id since is left alone. It then
// waits, for at most timeout, until they have exited, and forgets them.
// On an error it keeps them, for the next session to try again.
func (o *Orphans) End(ctx context.Context, pool *pgxpool.Pool, slot string, timeout time.Duration, log *slog.Logger) error {
	if o.walsender == 0 && o.leader == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// pg_locks shows a bigint advisory key as its high half in classid and
	// its low half in objid, with objsubid 1. pg_terminate_backend is in
	// the select list, not in a WHERE: there the planner could run it
	// before the conditions that pick the rows.
	// Only on the server they ran on: after a restart, another relay's
	// processes may have the same ids.
	rows, _ := pool.Query(ctx, `SELECT pid, pg_terminate_backend(pid) FROM (
		SELECT active_pid AS pid FROM pg_replication_slots WHERE slot_name = $1 AND active_pid = $2
		UNION
		SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $3 AND objsubid = 1
			AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('cdc-relay/' || $1, 0)) orphan
		WHERE pg_postmaster_start_time() = $4`,
		slot, int32(o.walsender), int32(o.leader), o.serverStart)
	type result struct {
		PID   int32
		Ended bool
	}
	results, err := pgx.CollectRows(rows, pgx.RowToStructByPos[result])
	if err != nil {
		return fmt.Errorf("end the server processes of the failed session (walsender %d, leadership lock %d): %w", o.walsender, o.leader, err)
	}
	var ended []int32
	for _, r := range results {
		if r.Ended {
			ended = append(ended, r.PID)
		}
	}
	if len(ended) > 0 {
		log.Warn("ended the server processes that the failed session left behind", "slot", slot, "pids", ended)
		if err := pgsession.WaitGone(ctx, pool, ended); err != nil {
			return err
		}
	}
	*o = Orphans{}
	return nil
}
