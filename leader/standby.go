package leader

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/pgsession"
)

// leaderAppName is the application_name the relay gives the session that
// holds a slot's leadership lock, so that a standby can tell a relay from
// any other session holding it: pg_advisory_lock is callable by PUBLIC,
// and the key can be computed from the slot's name.
const leaderAppName = "cdc-relay leader"

// StandbyInactiveMin is the least time a standby lets the slot go without
// a walsender before it is not ready: a leader's start (its checks, its
// replication connection) takes a few seconds.
const StandbyInactiveMin = 10 * time.Second

// leaderHolder is the session that holds slot $1's leadership lock, as far
// as the role may see it (address NULL, "" here, without
// pg_read_all_stats), and whether a walsender streams the slot (NULL
// without the slot). objsubid 1 is a lock taken by one bigint key.
const leaderHolder = `SELECT a.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), ''), coalesce(a.usename::text, ''),
	coalesce((SELECT s.active FROM pg_replication_slots s WHERE s.slot_name = $1), false)
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended('cdc-relay/' || $1, 0)`

// markLeader names conn's session leaderAppName (or app) for the
// standbys; the lock's session is closed, never returned to the pool.
func markLeader(ctx context.Context, conn *pgxpool.Conn, app string) error {
	_, err := conn.Exec(ctx, "SELECT set_config('application_name', $1, false)", app)
	return err
}

// StandbyWatch follows, while this relay stands by, who holds the slot's
// lock and whether the slot is streamed: it logs the holder each time it
// changes (warning when it is not a relay), and reports a problem when
// the slot has had no walsender for longer than inactiveAfter: the
// holder does not stream, and the WAL grows.
type StandbyWatch struct {
	slot          string
	log           *slog.Logger
	inactiveAfter time.Duration
	problem       func(string) // nil-safe: "" when there is none
	pid           int          // the holder last logged; 0 before
	inactiveSince time.Time    // zero while the slot is streamed
	reported      bool         // the problem was reported
}

// NewStandbyWatch returns the watch of slot for a relay standing by: it
// logs to log, and tells problem a problem when the slot has had no
// walsender for longer than inactiveAfter, and "" once it has one again
// (problem may be nil).
func NewStandbyWatch(slot string, log *slog.Logger, inactiveAfter time.Duration, problem func(string)) *StandbyWatch {
	return &StandbyWatch{slot: slot, log: log, inactiveAfter: inactiveAfter, problem: problem}
}

// check reads the holder and the slot's activity on conn, once.
func (w *StandbyWatch) check(ctx context.Context, conn *pgxpool.Conn) {
	var (
		pid             int
		app, addr, user string
		active          bool
	)
	err := conn.QueryRow(ctx, leaderHolder, w.slot).Scan(&pid, &app, &addr, &user, &active)
	if err == pgx.ErrNoRows {
		return // released meanwhile: the next try takes it
	}
	if err != nil {
		if ctx.Err() == nil && w.pid == 0 {
			w.log.Info("another session leads this slot; standing by (its session could not be told)", "slot", w.slot, "err", err)
			w.pid = -1
		}
		return
	}
	if pid != w.pid {
		w.pid = pid
		w.logHolder(pid, app, addr, user)
	}
	w.follow(active, describeHolder(pid, app, addr, user), time.Now())
}

// logHolder says who holds the lock: a relay at info, any other session
// at warn, with how to end it.
func (w *StandbyWatch) logHolder(pid int, app, addr, user string) {
	holder := describeHolder(pid, app, addr, user)
	if strings.HasPrefix(app, "cdc-relay") {
		w.log.Info("another relay leads this slot; standing by", "slot", w.slot, "holder", holder)
		return
	}
	w.log.Warn("a session that is not a cdc-relay holds this slot's leadership lock (any role may take an advisory lock); this relay stands by until it is released. "+
		"If it is not a relay of an earlier version, end it as an administrator: SELECT pg_terminate_backend(<its pid>)",
		"slot", w.slot, "holder", holder)
}

// follow records whether the slot is streamed at now, and reports a
// problem once it has not been for longer than inactiveAfter.
func (w *StandbyWatch) follow(active bool, holder string, now time.Time) {
	if active {
		if w.reported {
			w.log.Info("the slot is streamed again; this standby is ready", "slot", w.slot)
			w.report("")
		}
		w.inactiveSince, w.reported = time.Time{}, false
		return
	}
	if w.inactiveSince.IsZero() {
		w.inactiveSince = now
	}
	if w.reported || now.Sub(w.inactiveSince) <= w.inactiveAfter {
		return
	}
	w.reported = true
	problem := fmt.Sprintf("the slot's leadership lock is held by %s, but no walsender has streamed the slot for %s: nothing is delivered and the WAL grows. "+
		"End that session as an administrator (SELECT pg_terminate_backend(<its pid>)) if it is not a relay", holder, w.inactiveAfter.Round(time.Second))
	w.log.Warn("the leader does not stream the slot: this standby is not ready", "slot", w.slot, "problem", problem)
	w.report(problem)
}

// report hands problem to w.problem, if set.
func (w *StandbyWatch) report(problem string) {
	if w.problem != nil {
		w.problem(problem)
	}
}

// describeHolder describes a session holding a lock, as backfill's lock
// does for its own.
func describeHolder(pid int, app, addr, user string) string {
	return pgsession.Session{PID: pid, App: app, Role: user, Addr: addr}.String()
}
