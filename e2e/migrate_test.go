package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestEventsBeforeTheFirstRunAreKept: migrate creates the slot, so an
// event committed between migrate and the relay's first run is relayed.
func TestEventsBeforeTheFirstRunAreKept(t *testing.T) {
	parallel(t)
	e := newEnv(t) // runs migrate
	insert(t, e.conn, "order", "k", "BeforeRun", `{"n": "before the first run"}`)
	relay := e.startRelay()
	insert(t, e.conn, "order", "k", "AfterRun", `{"n": "after"}`)
	recs := e.readN(e.topic("order"), 2, 30*time.Second)
	assertValues(t, recs, []string{`{"n": "before the first run"}`, `{"n": "after"}`})
	relay.stop(30 * time.Second)
}

// TestTwoRelayTableSetsInOneDatabase: a second relay with its own outbox,
// status and checkpoint tables, publication and slot in the same database
// is migrated (the migration history already lists every version) and
// relays its own table only.
func TestTwoRelayTableSetsInOneDatabase(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	slotB := e.slot + "_b"
	t.Cleanup(func() {
		_, _ = e.conn.Exec(context.Background(), "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", slotB)
	})
	tablesB := []string{"--slot", slotB, "--table", "public.billing_outbox", "--status-table", "public.billing_delivery",
		"--checkpoint-table", "public.billing_checkpoint", "--publication", "billing"}
	out, err := exec.Command(relayBin, append([]string{"migrate", "--postgres-url", e.url}, tablesB...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("migrate the second table set: %v\n%s", err, out)
	}
	for _, want := range []string{"created table public.billing_outbox", `created publication "billing"`, `created replication slot "` + slotB + `"`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("migrate did not say %q:\n%s", want, out)
		}
	}

	relayA := e.startRelay()
	// A table of another name than public.outbox says its retention,
	// even one migrate created.
	relayB := e.spawnRelayArgs(relayBin, e.relayArgs(append(tablesB, "--topic-template", e.prefix+".billing.{aggregate_type}", "--retention", "7d")...)...)
	e.waitFor("the second relay streams", 60*time.Second, func() bool {
		if !relayB.Running() {
			t.Fatalf("the second relay exited: %v\n%s", relayB.Err(), relayB.Log())
		}
		return strings.Contains(relayB.Log(), "replication started")
	})
	insert(t, e.conn, "order", "k", "A", `{"relay": "a"}`)
	mustExec(t, e.conn, `INSERT INTO billing_outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('order', 'k', 'B', '{"relay": "b"}')`)
	assertValues(t, e.readN(e.topic("order"), 1, 30*time.Second), []string{`{"relay": "a"}`})
	assertValues(t, e.readN(e.prefix+".billing.order", 1, 30*time.Second), []string{`{"relay": "b"}`})
	var rows int
	if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM billing_checkpoint WHERE slot_name = $1", slotB).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("the second relay's checkpoint table: %d rows for its slot, err %v", rows, err)
	}
	relayA.stop(30 * time.Second)
	relayB.stop(30 * time.Second)
}
