package e2e

import (
	"context"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestLeastPrivilegeRole: the role that `migrate --print-grants` describes
// is enough for `cdc-relay run` on the default path, and for each side of
// it: events delivered and confirmed, a poison row parked in the status
// table, the checkpoint saved, retention allowed to delete, /status's
// reading of the slot and the status table; no privilege error in the
// relay's log.
func TestLeastPrivilegeRole(t *testing.T) {
	parallel(t)
	e := newEnv(t) // migrate as the superuser
	args := grantedRole(t, e, e.slot+"_role", "", "--retention", "1h", "--cleanup-interval", "1s")
	// A row older than --retention, for retention to delete.
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at) VALUES ('old', 'k', 'Old', '{}', now() - interval '2 hours')`)
	relay := e.startRelayArgs(relayBin, args...)
	insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload) VALUES ('order', 'k', 'Bad', 'bad topic!*', '{}')`)
	insert(t, e.conn, "order", "k", "Two", `{"n": 2}`)
	assertValues(t, e.readN(e.topic("order"), 2, 30*time.Second), []string{`{"n": 1}`, `{"n": 2}`})
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last insert", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	e.waitFor("the poison row is parked", 30*time.Second, func() bool { return e.statusCount("DEAD") == 1 })
	e.waitFor("retention deletes the old row", 30*time.Second, func() bool {
		var n int
		if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox WHERE aggregate_type = 'old'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	// What /status and the metrics read from the database needs no more.
	e.waitFor("/status counts the DEAD row and the WAL the slot keeps", 30*time.Second, func() bool {
		st := relay.status()
		return st.Dead == 1 && st.WALRetainedBytes >= 0 && st.LagBytes >= 0
	})
	relay.stop(30 * time.Second)
	for _, bad := range []string{"permission denied", "must be", "SQLSTATE 42501"} {
		if strings.Contains(relay.Log(), bad) {
			t.Fatalf("the relay lacked a privilege (%q):\n%s", bad, relay.Log())
		}
	}
}

// grantedRole creates role with the grants `migrate --print-grants` prints,
// followed by then (more SQL, or ""), drops it when the test ends, and
// returns the relay's arguments (beside extra) with the role in the
// PostgreSQL URL instead of the superuser.
func grantedRole(t *testing.T, e *env, role, then string, extra ...string) []string {
	t.Helper()
	out, err := exec.Command(relayBin, "migrate", "--print-grants", role).CombinedOutput()
	if err != nil {
		t.Fatalf("migrate --print-grants: %v\n%s", err, out)
	}
	if _, err := e.conn.PgConn().Exec(context.Background(), string(out)+then).ReadAll(); err != nil {
		t.Fatalf("run the printed grants, then %q: %v\n%s", then, err, out)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = e.conn.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = e.conn.Exec(ctx, "DROP ROLE "+role)
	})
	u, err := url.Parse(e.url)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	args := e.relayArgs(extra...)
	for i, a := range args {
		if a == e.url {
			args[i] = u.String()
		}
	}
	return args
}
