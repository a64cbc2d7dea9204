package backfill

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgsession"
)

// The lock of a table's backfill: an advisory lock of its own (not the
// relay's slot lock, so a backfill runs beside the relay), keyed by the
// table's OID, held by the backfill's session.
const (
	tryLock = "SELECT pg_try_advisory_lock(hashtextextended('cdc-relay backfill/' || $1::regclass::oid::text, 0))"

	// The holder's session as far as the role may see it: every role sees
	// another role's session's pid, role and application name (so a
	// relay's /status, which finds a running backfill by its pid and
	// application name, shows another role's backfill too), but not its
	// address or start (NULL: empty here) without pg_read_all_stats.
	// objsubid 1 is a lock taken by one bigint key.
	lockHolder = `SELECT a.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), ''), coalesce(a.usename::text, ''),
	coalesce(to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), '')
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended('cdc-relay backfill/' || $1::regclass::oid::text, 0)`
)

// ErrBusy says another backfill of the table is running.
var ErrBusy = errors.New("another backfill of the table is running")

// lock takes the table's backfill lock on conn's session, or returns an
// error wrapping ErrBusy that says which session holds it.
func lock(ctx context.Context, conn *pgx.Conn, table string) error {
	var ok bool
	if err := conn.QueryRow(ctx, tryLock, table).Scan(&ok); err != nil {
		return fmt.Errorf("take the backfill lock of %s: %w", table, err)
	}
	if ok {
		return nil
	}
	return fmt.Errorf("%w: %s; wait for it to end, or stop it (Ctrl-C where it runs, which says how to resume it); "+
		"if its client is gone but the session lingers, end the session as an administrator: SELECT pg_terminate_backend(<its pid>)", ErrBusy, holder(ctx, conn, table))
}

// holder describes the session that holds table's backfill lock, as far
// as the role may see it.
func holder(ctx context.Context, conn *pgx.Conn, table string) string {
	var (
		pid                    int
		app, addr, user, since string
	)
	err := conn.QueryRow(ctx, lockHolder, table).Scan(&pid, &app, &addr, &user, &since)
	if err != nil {
		return "its session could not be told (" + err.Error() + ")"
	}
	s := pgsession.Session{PID: pid, App: app, Role: user, Addr: addr}.String()
	if since != "" {
		s += ", connected since " + since
	}
	return s
}
