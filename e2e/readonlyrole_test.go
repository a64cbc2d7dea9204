package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestReadOnlyRoleNamesTheSetting: a role whose sessions are read-only by
// default (ALTER ROLE … SET default_transaction_read_only = on) cannot
// save the checkpoint; the relay keeps running, not ready, and its error
// names the setting and how to undo it, not only SQLSTATE 25006. Once
// undone, the event inserted meanwhile is delivered without a restart.
func TestReadOnlyRoleNamesTheSetting(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	role := e.slot + "_ro"
	args := grantedRole(t, e, role, "ALTER ROLE "+role+" SET default_transaction_read_only = on;")
	relay := e.spawnRelayArgs(relayBin, args...)
	insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
	const fix = "ALTER ROLE <role> SET default_transaction_read_only = off"
	e.waitFor("the relay's error names default_transaction_read_only", 60*time.Second, func() bool {
		if !relay.Running() {
			t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
		}
		return strings.Contains(relay.status().LastError, fix)
	})
	if code, _ := relay.call("GET", "/readyz", ""); code == 200 {
		t.Errorf("/readyz is 200 while the role's sessions are read-only")
	}
	mustExec(t, e.conn, "ALTER ROLE "+role+" RESET default_transaction_read_only")
	e.readN(e.topic("order"), 1, 60*time.Second)
}
