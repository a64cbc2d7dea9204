package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRecoverUnderRowSecurity: logical decoding publishes every row of
// the outbox table, but a plain SELECT by the relay's role sees only the
// rows a row-level security policy lets it. recover run as that role,
// after the slot is lost, must not publish the rows it sees and exit 0:
// it refuses, naming ALTER ROLE … BYPASSRLS, and once the role bypasses
// row-level security it publishes every row of the gap, of both tenants.
// (Before the fix it published the 'order' rows only and exited 0.)
func TestRecoverUnderRowSecurity(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	role := e.slot + "_rls"
	args := grantedRole(t, e, role, "")
	relay := e.startRelayArgs(relayBin, args...)
	insert(t, e.conn, "order", "k", "Delivered", `{"n": 0}`)
	e.readN(e.topic("order"), 1, 30*time.Second)
	relay.stop(30 * time.Second)
	e.waitFor("the slot is released", 30*time.Second, func() bool { return !e.slotActive() })

	// A tenant policy that does not cover the relay's role.
	mustExec(t, e.conn, "ALTER TABLE outbox ENABLE ROW LEVEL SECURITY")
	mustExec(t, e.conn, "CREATE POLICY tenant_order ON outbox USING (aggregate_type = 'order')")
	const n = 5
	for i := 1; i <= n; i++ {
		insert(t, e.conn, "order", "k", "Gap", fmt.Sprintf(`{"order": %d}`, i))
		insert(t, e.conn, "customer", "k", "Gap", fmt.Sprintf(`{"customer": %d}`, i))
	}
	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)

	recoverArgs := append([]string{"recover", "--margin", "1m"}, withoutFlag(args[1:], "--metrics-addr")...)
	out, err := exec.Command(relayBin, recoverArgs...).CombinedOutput()
	if err == nil {
		t.Fatalf("recover under a row-level security policy exited 0:\n%s", out)
	}
	for _, want := range []string{"row-level security", `ALTER ROLE "` + role + `" BYPASSRLS`, "CREATE POLICY"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("recover's refusal does not say %q:\n%s", want, out)
		}
	}
	t.Logf("recover refused:\n%s", out)

	mustExec(t, e.conn, "ALTER ROLE "+role+" BYPASSRLS")
	if out, err := exec.Command(relayBin, recoverArgs...).CombinedOutput(); err != nil {
		t.Fatalf("recover after ALTER ROLE … BYPASSRLS: %v\n%s", err, out)
	}
	var want []string
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprintf(`{"customer": %d}`, i))
	}
	assertHasValues(t, e.readN(e.topic("customer"), n, 30*time.Second), want)
	// The relay streams on from the recovered slot, row-level security or not.
	relay = e.startRelayArgs(relayBin, args...)
	defer relay.stop(30 * time.Second)
	insert(t, e.conn, "customer", "k", "After", `{"customer": 99}`)
	e.readN(e.topic("customer"), n+1, 30*time.Second)
}

// TestOnSlotLossRecoverUnderRowSecurity: the same as a running relay's
// repair (--on-slot-loss recover): it stops, saying ALTER ROLE …
// BYPASSRLS, rather than publish one tenant's rows of the gap and stream
// on; once the role bypasses row-level security, a start repairs the gap
// with both tenants' rows. (Before the fix it published the 'order' rows
// only.)
func TestOnSlotLossRecoverUnderRowSecurity(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	role := e.slot + "_rls"
	args := grantedRole(t, e, role, "", "--on-slot-loss", "recover")
	relay := e.startRelayArgs(relayBin, args...)
	insert(t, e.conn, "order", "k", "Delivered", `{"n": 0}`)
	e.readN(e.topic("order"), 1, 30*time.Second)
	relay.stop(30 * time.Second)
	e.waitFor("the slot is released", 30*time.Second, func() bool { return !e.slotActive() })

	mustExec(t, e.conn, "ALTER TABLE outbox ENABLE ROW LEVEL SECURITY")
	mustExec(t, e.conn, "CREATE POLICY tenant_order ON outbox USING (aggregate_type = 'order')")
	const n = 5
	for i := 1; i <= n; i++ {
		insert(t, e.conn, "order", "k", "Gap", fmt.Sprintf(`{"order": %d}`, i))
		insert(t, e.conn, "customer", "k", "Gap", fmt.Sprintf(`{"customer": %d}`, i))
	}
	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)

	refused := e.spawnRelayArgs(relayBin, args...)
	e.waitFor("the relay stops", 60*time.Second, func() bool { return !refused.Running() })
	if refused.Err() == nil || !strings.Contains(refused.Log(), `ALTER ROLE "`+role+`" BYPASSRLS`) {
		t.Fatalf("the relay (%v) does not stop naming ALTER ROLE … BYPASSRLS:\n%s", refused.Err(), refused.Log())
	}
	mustExec(t, e.conn, "ALTER ROLE "+role+" BYPASSRLS")
	relay = e.startRelayArgs(relayBin, args...)
	defer relay.stop(30 * time.Second)
	var want []string
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprintf(`{"customer": %d}`, i))
	}
	assertHasValues(t, e.readN(e.topic("customer"), n, 30*time.Second), want)
}
