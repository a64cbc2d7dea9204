package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStandbyNamesALockHolderThatIsNotARelay (adversarial pass 2, F1): a
// role with no grants waits for the slot's leadership lock and takes it
// when the relay loses its sessions; the relay, standing by, names that
// session (pid, role, application_name), says it is not a cdc-relay, and
// is not ready once the slot has had no walsender for a while. Once the
// session ends, the relay leads and delivers.
func TestStandbyNamesALockHolderThatIsNotARelay(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	role := e.slot + "_app"
	mustExec(t, e.conn, "CREATE ROLE "+role+" LOGIN")
	p := e.startRelay()
	app := mustConnect(t, strings.Replace(e.url, "postgres@", role+"@", 1)+"&application_name=app-worker")
	defer app.Close(context.Background())
	appPID := strconv.Itoa(int(app.PgConn().PID()))
	locked := make(chan error, 1)
	go func() {
		_, err := app.Exec(context.Background(), "SELECT pg_advisory_lock(hashtextextended('cdc-relay/' || $1, 0))", e.slot)
		locked <- err
	}()
	e.waitFor("the role waits for the lock", 30*time.Second, func() bool {
		var waiting bool
		mustQueryRow(t, e, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = "+appPID+" AND NOT granted)", &waiting)
		return waiting
	})
	// Any session loss: here an administrator ends the relay's sessions.
	mustExec(t, e.conn, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND usename <> $1`, role)
	select {
	case err := <-locked:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the role did not get the lock once the relay's sessions ended")
	}
	e.waitFor("the relay names the holder and says it is not a relay", 30*time.Second, func() bool {
		log := p.Log()
		return strings.Contains(log, "not a cdc-relay") && strings.Contains(log, "server process "+appPID+" (app-worker) of role "+role)
	})
	e.waitFor("the standby is not ready, saying the slot is not streamed", 30*time.Second, func() bool {
		code, body := p.call("GET", "/readyz", "")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "no walsender") && strings.Contains(body, "app-worker")
	})
	mustExec(t, e.conn, "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('order', 'k', 'After', '{}')")
	if err := app.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the relay leads again and is ready", 60*time.Second, func() bool {
		code, _ := p.call("GET", "/readyz", "")
		return code == http.StatusOK && e.slotActive()
	})
	if got := e.readN(e.topic("order"), 1, time.Minute); len(got) != 1 {
		t.Fatalf("read %d events after the holder ended, want 1", len(got))
	}
	p.stop(30 * time.Second)
}

// mustQueryRow scans one row of sql on the test's connection.
func mustQueryRow(t *testing.T, e *env, sql string, dest ...any) {
	t.Helper()
	if err := e.conn.QueryRow(context.Background(), sql).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
