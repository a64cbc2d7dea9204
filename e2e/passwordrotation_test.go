package e2e

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestPasswordRotationNeedsNoRestart: the relay's role logs in with a
// password (scram-sha-256 in pg_hba.conf) read from --postgres-url-file.
// The password is rotated (ALTER ROLE … PASSWORD) and the relay's sessions
// ended: the relay says that authentication failed, not that PostgreSQL
// cannot be reached; once the new URL is written into the file, it
// reconnects without a restart and delivers the events inserted meanwhile.
// Neither password is ever logged.
func TestPasswordRotationNeedsNoRestart(t *testing.T) {
	parallel(t)
	e, _ := newEnvOwnCluster(t)
	role := e.slot + "_rot"
	const oldPass, newPass = "old-Pa55-rotated-away", "new-Pa55-rotated-in"
	grantedRole(t, e, role, "ALTER ROLE "+role+" PASSWORD '"+oldPass+"';")
	requirePassword(t, e, role)
	roleURL := func(pass string) string {
		u, err := url.Parse(e.url)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(role, pass)
		return u.String()
	}
	waitRefused(t, e, roleURL("not-the-password"))

	file := filepath.Join(t.TempDir(), "postgres-url")
	writeURL := func(u string) {
		if err := os.WriteFile(file, []byte(u+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeURL(roleURL(oldPass))
	args := append(withoutFlag(e.relayArgs(), "--postgres-url"), "--postgres-url-file", file)
	relay := e.startRelayArgs(relayBin, args...)
	insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
	e.readN(e.topic("order"), 1, 30*time.Second)

	mustExec(t, e.conn, "ALTER ROLE "+role+" PASSWORD '"+newPass+"'")
	mustExec(t, e.conn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role)
	insert(t, e.conn, "order", "k", "Two", `{"n": 2}`)
	e.waitFor("the relay says that authentication failed", 60*time.Second, func() bool {
		if !relay.Running() {
			t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
		}
		return strings.Contains(relay.Log(), "PostgreSQL refused the relay's login: authentication failed")
	})
	if code, _ := relay.call("GET", "/readyz", ""); code == 200 {
		t.Errorf("/readyz is 200 while the relay cannot log in")
	}

	writeURL(roleURL(newPass))
	insert(t, e.conn, "order", "k", "Three", `{"n": 3}`)
	// At least once: the first event may come twice (the session that
	// lost its login could not save its final checkpoint).
	e.waitFor("every event, the ones inserted while the login failed among them, is delivered", 60*time.Second, func() bool {
		seen := map[string]bool{}
		for _, r := range e.readAll(e.topic("order")) {
			seen[string(r.Value)] = true
		}
		return seen[`{"n": 1}`] && seen[`{"n": 2}`] && seen[`{"n": 3}`]
	})
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last insert", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	if !relay.Running() {
		t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
	}
	relay.stop(30 * time.Second)
	log := relay.Log()
	if strings.Contains(log, "cannot be reached") {
		t.Errorf("the relay called a refused login an outage:\n%s", log)
	}
	for _, secret := range []string{oldPass, newPass} {
		if strings.Contains(log, secret) {
			t.Errorf("the relay logged a password")
		}
	}
}

// requirePassword makes role log in with its password (scram-sha-256)
// over TCP, for sessions and replication, in e's cluster's pg_hba.conf.
func requirePassword(t *testing.T, e *env, role string) {
	t.Helper()
	var hba string
	if err := e.conn.QueryRow(context.Background(), "SHOW hba_file").Scan(&hba); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(hba)
	if err != nil {
		t.Fatal(err)
	}
	lines := "host all " + role + " 127.0.0.1/32 scram-sha-256\nhost replication " + role + " 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(hba, append([]byte(lines), old...), 0o600); err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.conn, "SELECT pg_reload_conf()")
}

// waitRefused waits until a connection to url fails its authentication:
// pg_hba.conf's reload took effect.
func waitRefused(t *testing.T, e *env, url string) {
	t.Helper()
	e.waitFor("pg_hba.conf asks for the password", 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, url)
		if err == nil {
			c.Close(ctx)
			return false
		}
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == "28P01"
	})
}
