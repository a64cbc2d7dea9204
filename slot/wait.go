package slot

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/internal/pgsession"
)

// slotWaitWarn is how long a slot's creation runs before the relay says
// which transaction it waits for: PostgreSQL creates a logical slot only
// once every transaction that holds a transaction id has ended.
const slotWaitWarn = 5 * time.Second

// slotWaitRepeat is how often the wait is logged again while it lasts.
const slotWaitRepeat = 30 * time.Second

// oldestXidHolder is the session whose transaction id is the oldest, of
// those that hold one, as far as the role may see it: every role sees
// another role's pid, role, application name and transaction id, not its
// address or transaction start (NULL: "" and -1 here) without
// pg_read_all_stats. n counts the sessions that hold one.
const oldestXidHolder = `SELECT a.pid, coalesce(a.usename::text, ''), coalesce(a.application_name, ''), coalesce(host(a.client_addr), ''),
	coalesce(extract(epoch FROM now() - a.xact_start)::bigint, -1), age(a.backend_xid),
	(SELECT count(*) FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid())
FROM pg_stat_activity a WHERE a.backend_xid IS NOT NULL AND a.pid <> pg_backend_pid()
ORDER BY age(a.backend_xid) DESC LIMIT 1`

// WatchCreation logs, once the creation of slot has run for
// slotWaitWarn and then every slotWaitRepeat until stop is called, the
// session whose open transaction it most likely waits for (the oldest
// holding a transaction id), on a connection of its own to url opened only
// then: the creation's own connection is busy. Every command that creates
// a slot (run, recover, migrate) calls it around the creation.
func WatchCreation(ctx context.Context, url, slot string, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		began := time.Now()
		wait := slotWaitWarn
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			logSlotWait(ctx, url, slot, time.Since(began), log)
			wait = slotWaitRepeat
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// logSlotWait logs that the creation of slot has waited for waited, and
// for which session.
func logSlotWait(ctx context.Context, url, slot string, waited time.Duration, log *slog.Logger) {
	msg := "creating the replication slot waits for open transactions to end: PostgreSQL creates a logical slot only once every transaction " +
		"that holds a transaction id when it starts has ended. The slot is created when the holder's transaction ends or its session is terminated " +
		"(an administrator: SELECT pg_terminate_backend(<its pid>))"
	attrs := []any{"slot", slot, "waited", waited.Round(time.Second)}
	holder, err := xidHolder(ctx, url)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		attrs = append(attrs, "holder", "could not be told ("+err.Error()+")")
	} else {
		attrs = append(attrs, "holder", holder)
	}
	log.Warn(msg, attrs...)
}

// xidHolder describes the session that holds the oldest transaction id,
// or says there is none.
func xidHolder(ctx context.Context, url string) (string, error) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgconnect.Open(qctx, url, pgconnect.Options{RuntimeParams: map[string]string{"application_name": "cdc-relay slot wait"}})
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var (
		pid, n          int64
		user, app, addr string
		seconds         int64
		age             int32
	)
	err = conn.QueryRow(qctx, oldestXidHolder).Scan(&pid, &user, &app, &addr, &seconds, &age, &n)
	if err == pgx.ErrNoRows {
		return "no session holds a transaction id now (a transaction ended meanwhile, or a prepared transaction: see pg_prepared_xacts)", nil
	}
	if err != nil {
		return "", err
	}
	s := pgsession.Session{PID: int(pid), App: app, Role: user, Addr: addr}.Quoted()
	if seconds >= 0 {
		s += fmt.Sprintf(", its transaction open for %s", (time.Duration(seconds) * time.Second).String())
	} else {
		s += fmt.Sprintf(", its transaction id %d transactions old (its start is shown to a role with pg_read_all_stats)", age)
	}
	if n > 1 {
		s += fmt.Sprintf("; %d sessions hold a transaction id in all", n)
	}
	return s, nil
}
