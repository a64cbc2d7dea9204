package e2e

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDroppedRelayTablesNameMigrate: the relay's pause and status tables
// dropped under a running relay: the stream goes on, and each failing
// line is logged once (not every status interval, 200 ms here) with
// `cdc-relay migrate` to create the tables again; migrate says which
// tables it created again, and the relay uses them without a restart.
func TestDroppedRelayTablesNameMigrate(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	relay := e.startRelay()
	insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
	e.readN(e.topic("order"), 1, 30*time.Second)

	mustExec(t, e.conn, "DROP TABLE cdc_relay_paused_topics, outbox_delivery")
	insert(t, e.conn, "order", "k", "Two", `{"n": 2}`)
	e.readN(e.topic("order"), 2, 30*time.Second)
	const paused = "could not read the paused topics"
	e.waitFor("the relay names cdc-relay migrate", 30*time.Second, func() bool {
		for _, l := range strings.Split(relay.Log(), "\n") {
			if strings.Contains(l, paused) && strings.Contains(l, "cdc-relay migrate") {
				return true
			}
		}
		return false
	})
	// Absence takes a window: 20 status intervals.
	time.Sleep(4 * time.Second)
	if n := strings.Count(relay.Log(), paused); n != 1 {
		t.Errorf("%q logged %d times in 4 s, want once:\n%s", paused, n, relay.Log())
	}
	if n := strings.Count(relay.Log(), "could not claim"); n > 1 {
		t.Errorf("the poller's failed claim logged %d times, want at most once:\n%s", n, relay.Log())
	}

	out, err := exec.Command(relayBin, "migrate", "--postgres-url", e.url, "--slot", e.slot).CombinedOutput()
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	t.Logf("migrate: %s", out)
	for _, want := range []string{"created again", `"public"."outbox_delivery"`, `"public"."cdc_relay_paused_topics"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("migrate's output does not say %q:\n%s", want, out)
		}
	}
	// The pause table is read again: a topic paused there is paused.
	mustExec(t, e.conn, "INSERT INTO cdc_relay_paused_topics (slot_name, topic) VALUES ($1, $2)", e.slot, e.topic("held"))
	e.waitFor("the relay reads the pause table again", 30*time.Second, func() bool {
		return slices.Contains(relay.status().PausedTopics, e.topic("held"))
	})
	insert(t, e.conn, "order", "k", "Three", `{"n": 3}`)
	e.readN(e.topic("order"), 3, 30*time.Second)
	if !relay.Running() {
		t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
	}
}
