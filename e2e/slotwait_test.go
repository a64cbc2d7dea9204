package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRecoverSaysWhichTransactionTheSlotWaitsFor (adversarial pass 2,
// F10): with the slot gone and a role with no grants holding a
// transaction id, `cdc-relay recover` names that session (pid, role,
// application_name) and what ends the wait within seconds, then creates
// the slot and finishes once the transaction ends.
func TestRecoverSaysWhichTransactionTheSlotWaitsFor(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	role := e.slot + "_app"
	mustExec(t, e.conn, "CREATE ROLE "+role+" LOGIN")
	p := e.startRelay()
	mustExec(t, e.conn, "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('order', 'k', 'Before', '{}')")
	e.readN(e.topic("order"), 1, time.Minute)
	p.stop(30 * time.Second)
	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)

	app := mustConnect(t, strings.Replace(e.url, "postgres@", role+"@", 1)+"&application_name=app-worker")
	defer app.Close(context.Background())
	tx, err := app.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), "SELECT txid_current()"); err != nil {
		t.Fatal(err)
	}
	appPID := strconv.Itoa(int(app.PgConn().PID()))
	rec := e.spawnRelayArgs(relayBin, append([]string{"recover", "--since", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)},
		withoutFlag(e.relayArgs()[1:], "--metrics-addr")...)...)
	e.waitFor("recover names the session its slot waits for", 30*time.Second, func() bool {
		if !rec.Running() {
			t.Fatalf("recover ended while a transaction held an id: %v\n%s", rec.Err(), rec.Log())
		}
		log := rec.Log()
		return strings.Contains(log, "server process "+appPID) && strings.Contains(log, "app-worker") &&
			strings.Contains(log, "of role "+role) && strings.Contains(log, "its session is terminated")
	})
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rec.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("recover did not finish once the transaction ended\n%s", rec.Log())
	}
	if err := rec.Err(); err != nil {
		t.Fatalf("recover: %v\n%s", err, rec.Log())
	}
	if !e.slotExists() {
		t.Fatal("recover finished without the slot")
	}
}
