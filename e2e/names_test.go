package e2e

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPublicationNameWithCapitals: `cdc-relay migrate` creates the
// publication under the exact name it is given (a quoted identifier), and
// the relay must ask pgoutput for that name, not for the name folded to
// lower case or split at its comma.
func TestPublicationNameWithCapitals(t *testing.T) {
	parallel(t)
	for _, pub := range []string{"MyPub", `Outbox "Events", v2`} {
		t.Run(pub, func(t *testing.T) {
			e := newEnv(t)
			// pgoutput looks a publication up as of the WAL it decodes, so
			// the slot newEnv's migrate made, older than this publication,
			// would never see it: migrate makes them again, in order.
			mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
			mustExec(t, e.conn, "DELETE FROM cdc_relay_checkpoint WHERE slot_name = $1", e.slot)
			if out, err := exec.Command(relayBin, "migrate", "--postgres-url", e.url, "--slot", e.slot, "--publication", pub).CombinedOutput(); err != nil {
				t.Fatalf("migrate --publication %q: %v\n%s", pub, err, out)
			}
			relay := e.startRelay("--publication", pub)
			insert(t, e.conn, "order", "k", "OrderPlaced", `{"n": 1}`)
			recs := e.readN(e.topic("order"), 1, 30*time.Second)
			assertValues(t, recs, []string{`{"n": 1}`})
			relay.stop(30 * time.Second)
		})
	}
}

// TestSlotNameWithCapitalsIsRefused: PostgreSQL keeps no capitals in a slot
// name (the replication commands fold them), so a slot given as MySlot
// would be created as myslot and never found again under its own name. The
// relay refuses the name at start, says which names PostgreSQL takes, and
// creates nothing.
func TestSlotNameWithCapitalsIsRefused(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args := append(e.relayArgs(), "--slot", "MySlot") // the last --slot wins
	out, err := exec.CommandContext(ctx, relayBin, args...).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("the relay ran with slot name MySlot (%v), want a usage error (exit 2):\n%s", err, out)
	}
	want := `--slot: replication slot name "MySlot" has 'M'; PostgreSQL allows only lower-case letters, digits and underscores (use "myslot")`
	if !strings.Contains(string(out), want) {
		t.Errorf("the error does not say what is wrong with the name:\n%s\nwant %s", out, want)
	}
	var n int
	if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_replication_slots WHERE lower(slot_name) = 'myslot'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a slot was created for the refused name")
	}
}
