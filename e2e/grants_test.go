package e2e

import (
	"context"
	"fmt"
	"net/http"
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

// TestRoleWithoutGrantsIsToldAndNotReady: the relay run as a role with
// LOGIN and REPLICATION but none of the grants `migrate --print-grants`
// prints (a new user's first try) keeps running, is not ready, and logs
// the command that prints the fix with the role's own name, a few times
// at most however long it lasts; once an administrator runs the printed
// grants, it becomes ready without a restart and delivers every event
// inserted meanwhile. `migrate` run as that role says to run it as the
// database's administrator.
func TestRoleWithoutGrantsIsToldAndNotReady(t *testing.T) {
	parallel(t)
	e := newEnv(t) // migrate as the superuser
	role := e.slot + "_bare"
	mustExec(t, e.conn, "CREATE ROLE "+role+" LOGIN REPLICATION")
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = e.conn.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = e.conn.Exec(ctx, "DROP ROLE "+role)
	})
	roleURL := urlAs(t, e.url, role)
	args := e.relayArgs()
	for i, a := range args {
		if a == e.url {
			args[i] = roleURL
		}
	}
	relay := e.spawnRelayArgs(relayBin, args...)
	insert(t, e.conn, "order", "k", "One", `{"n": 1}`)

	fix := "cdc-relay migrate --print-grants " + role
	var body string
	e.waitFor("the relay says which command prints the grants, and is not ready", 60*time.Second, func() bool {
		if !relay.Running() {
			t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
		}
		var code int
		code, body = relay.call("GET", "/readyz", "")
		return code == http.StatusServiceUnavailable && strings.Contains(body, fix) && strings.Contains(relay.Log(), fix)
	})
	t.Logf("GET /readyz: %s", body)
	insert(t, e.conn, "order", "k", "Two", `{"n": 2}`)
	// It lasts: still running, still not ready, and said once.
	failedAt := map[time.Time]bool{}
	e.waitFor("three more sessions fail", 30*time.Second, func() bool {
		if st := relay.status(); !st.LastErrorAt.IsZero() {
			failedAt[st.LastErrorAt] = true
		}
		return len(failedAt) >= 4
	})
	if !relay.Running() {
		t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
	}
	if code, _ := relay.call("GET", "/readyz", ""); code == http.StatusOK {
		t.Fatalf("/readyz is 200 while the role lacks its grants")
	}
	if n := strings.Count(relay.Log(), "lacks a privilege it needs"); n != 1 {
		t.Errorf("the missing privilege was logged %d times, want once while it lasts:\n%s", n, relay.Log())
	}
	if !strings.Contains(relay.Log(), `GRANT SELECT, INSERT, UPDATE ON \"public\".\"cdc_relay_checkpoint\" TO \"`+role+`\";`) {
		t.Errorf("the log does not name the checkpoint table's GRANT to %s:\n%s", role, relay.Log())
	}

	out, err := exec.Command(relayBin, "migrate", "--postgres-url", roleURL, "--slot", e.slot).CombinedOutput()
	t.Logf("migrate as %s: %v\n%s", role, err, out)
	if err == nil || !strings.Contains(string(out), "administrator") || !strings.Contains(string(out), fix) {
		t.Errorf("migrate as %s: %v\n%s\nwant an error saying to run it as the database's administrator, then %q", role, err, out, fix)
	}

	out, err = exec.Command(relayBin, "migrate", "--print-grants", role).CombinedOutput()
	if err != nil {
		t.Fatalf("migrate --print-grants: %v\n%s", err, out)
	}
	if _, err := e.conn.PgConn().Exec(context.Background(), string(out)).ReadAll(); err != nil {
		t.Fatalf("run the printed grants: %v\n%s", err, out)
	}
	e.waitFor("the relay is ready once granted", 60*time.Second, func() bool {
		code, _ := relay.call("GET", "/readyz", "")
		return code == http.StatusOK
	})
	insert(t, e.conn, "order", "k", "Three", `{"n": 3}`)
	assertValues(t, e.readN(e.topic("order"), 3, 60*time.Second), []string{`{"n": 1}`, `{"n": 2}`, `{"n": 3}`})
	if !relay.Running() || !strings.Contains(relay.Log(), "has the privileges it lacked") {
		t.Fatalf("the relay exited, or did not say it has the privileges now:\n%s", relay.Log())
	}
}

// TestRoleWithoutReplicationIsToldAndNotReady: the relay run as a role
// with the printed grants but without the REPLICATION attribute keeps
// running, not ready, and logs once the ALTER ROLE that fixes it; once a
// superuser runs it, the relay streams without a restart and delivers the
// event inserted meanwhile.
func TestRoleWithoutReplicationIsToldAndNotReady(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	args, role := standbyRole(t, e) // the grants, without REPLICATION
	relay := e.spawnRelayArgs(relayBin, args...)
	insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
	fix := `ALTER ROLE \"` + role + `\" WITH REPLICATION;`
	e.waitFor("the relay names the ALTER ROLE, and is not ready", 60*time.Second, func() bool {
		if !relay.Running() {
			t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
		}
		code, body := relay.call("GET", "/readyz", "")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "REPLICATION") && strings.Contains(relay.Log(), fix)
	})
	mustExec(t, e.conn, "ALTER ROLE "+role+" REPLICATION")
	e.waitFor("the relay is ready once the role has REPLICATION", 60*time.Second, func() bool {
		code, _ := relay.call("GET", "/readyz", "")
		return code == http.StatusOK
	})
	assertValues(t, e.readN(e.topic("order"), 1, 60*time.Second), []string{`{"n": 1}`})
	if n := strings.Count(relay.Log(), "lacks a privilege it needs"); n != 1 || !relay.Running() {
		t.Errorf("the missing attribute was logged %d times, want once; running %v:\n%s", n, relay.Running(), relay.Log())
	}
}

// urlAs is the PostgreSQL URL raw with role as its user.
func urlAs(t *testing.T, raw, role string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// TestRevokedGrantsAreToldAndNotReady: grants revoked from a running
// relay's role (INSERT and UPDATE on the status table, UPDATE on the
// checkpoint table) stop it streaming with the GRANTs that fix it, logged
// once, not ready, still running; once granted again it streams without
// a restart: the event inserted meanwhile delivered, the poison row
// parked, and the slot confirmed past both.
func TestRevokedGrantsAreToldAndNotReady(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	role := e.slot + "_revoked"
	relay := e.startRelayArgs(relayBin, grantedRole(t, e, role, "")...)
	insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
	e.readN(e.topic("order"), 1, 30*time.Second)

	mustExec(t, e.conn, fmt.Sprintf("REVOKE INSERT, UPDATE ON outbox_delivery FROM %[1]s; REVOKE UPDATE ON cdc_relay_checkpoint FROM %[1]s", role))
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload) VALUES ('order', 'k', 'Bad', 'bad topic!*', '{}')`)
	insert(t, e.conn, "order", "k", "Two", `{"n": 2}`)
	grants := []string{
		`GRANT INSERT, UPDATE ON \"public\".\"outbox_delivery\" TO \"` + role + `\";`,
		`GRANT UPDATE ON \"public\".\"cdc_relay_checkpoint\" TO \"` + role + `\";`,
	}
	e.waitFor("the relay names the GRANTs, and is not ready", 60*time.Second, func() bool {
		if !relay.Running() {
			t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
		}
		code, _ := relay.call("GET", "/readyz", "")
		return code == http.StatusServiceUnavailable && strings.Contains(relay.Log(), grants[0]) && strings.Contains(relay.Log(), grants[1])
	})
	failedAt := map[time.Time]bool{}
	e.waitFor("two more sessions fail", 30*time.Second, func() bool {
		if st := relay.status(); !st.LastErrorAt.IsZero() {
			failedAt[st.LastErrorAt] = true
		}
		return len(failedAt) >= 3
	})
	if n := strings.Count(relay.Log(), "lacks a privilege it needs"); n != 1 {
		t.Errorf("the missing privileges were logged %d times, want once while they last:\n%s", n, relay.Log())
	}
	for _, bad := range []string{"could not save the checkpoint", "stopping at once"} {
		if strings.Contains(relay.Log(), bad) {
			t.Errorf("the relay logged %q, which the missing privilege's line speaks for:\n%s", bad, relay.Log())
		}
	}

	mustExec(t, e.conn, fmt.Sprintf("GRANT INSERT, UPDATE ON outbox_delivery TO %[1]s; GRANT UPDATE ON cdc_relay_checkpoint TO %[1]s", role))
	e.waitFor("the relay is ready once granted again", 60*time.Second, func() bool {
		code, _ := relay.call("GET", "/readyz", "")
		return code == http.StatusOK
	})
	e.waitFor("the event inserted meanwhile arrives", 60*time.Second, func() bool {
		for _, r := range e.readAll(e.topic("order")) {
			if string(r.Value) == `{"n": 2}` {
				return true
			}
		}
		return false
	})
	end := e.lsn(insertLSN)
	e.waitFor("the poison row is parked and the slot confirms past the last insert", 60*time.Second, func() bool {
		return e.statusCount("DEAD") == 1 && e.lsn(slotLSN) >= end
	})
	if !relay.Running() {
		t.Fatalf("the relay exited:\n%s", relay.Log())
	}
}
