package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// allButID are the outbox table's columns but its id.
const allButID = "aggregate_type, aggregate_id, event_type, topic, payload, headers, created_at"

// TestPublicationChangedUnderTheRelay: a publication changed in place so
// that PostgreSQL does not publish some inserts, or publishes them without
// a mapped column, and changed back. pgoutput decodes with the catalog of
// the time, so the slot would pass those inserts for good. The relay stops
// instead, confirming nothing past the last check that found the
// publication right, even when the change was undone before a check saw it
// (the stamp); it prints the recover command with the time filled in, and
// that command, then a restart, delivers every event.
func TestPublicationChangedUnderTheRelay(t *testing.T) {
	parallel(t)
	tests := []struct {
		name         string
		change, undo string
		eventType    string // of the inserts the change hides
		want         string // in the error when a check sees the change
		seen         bool   // undone only after the relay stopped: a check sees it
	}{
		{"publish update, undone at once", "ALTER PUBLICATION cdc_relay SET (publish = 'update')", "ALTER PUBLICATION cdc_relay SET (publish = 'insert')",
			"Hidden", "no longer publishes inserts", false},
		{"a row filter, undone at once", "ALTER PUBLICATION cdc_relay SET TABLE outbox WHERE (event_type <> 'X')", "ALTER PUBLICATION cdc_relay SET TABLE outbox",
			"X", "with a row filter", false},
		{"a column list without the id, undone at once", "ALTER PUBLICATION cdc_relay SET TABLE outbox (" + allButID + ")", "ALTER PUBLICATION cdc_relay SET TABLE outbox",
			"Hidden", "leaving out id", false},
		{"a row filter, seen by a check", "ALTER PUBLICATION cdc_relay SET TABLE outbox WHERE (event_type <> 'X')", "ALTER PUBLICATION cdc_relay SET TABLE outbox",
			"X", "with a row filter, WHERE (event_type <> 'X'::text)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			relay := e.startRelay()
			topic := e.topic("order")
			for i := range 2 {
				insert(t, e.conn, "order", "k", "Before", fmt.Sprintf(`{"n": "before %d"}`, i))
			}
			e.readN(topic, 2, 30*time.Second)
			end := e.lsn(insertLSN)
			e.waitFor("the slot confirms the first events", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })

			inserts := make([]string, 3)
			for i := range inserts {
				inserts[i] = fmt.Sprintf(`BEGIN; INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('order', 'k', '%s', '{"n": "hidden %d"}'); COMMIT`,
					tt.eventType, i)
			}
			// lost is read once the change committed, before the first
			// insert it hides: a check that vouched for a position read its
			// catalog after that position, before the change was visible,
			// so nothing past lost may be vouched for. (A position read
			// before the change is no bound: the relay may rightly vouch
			// for the WAL other sessions write until it commits.)
			changed := "SELECT set_config('cdc_relay_test.changed', pg_current_wal_insert_lsn()::text, false)"
			if tt.seen {
				mustExec(t, e.conn, "BEGIN; "+tt.change+"; COMMIT; "+changed)
				for _, sql := range inserts {
					mustExec(t, e.conn, sql)
				}
			} else {
				// One round trip: the change, three transactions, the undo,
				// in a few milliseconds, most often between two checks.
				mustExec(t, e.conn, "BEGIN; "+tt.change+"; COMMIT; "+changed+"; "+strings.Join(inserts, "; ")+"; BEGIN; "+tt.undo+"; COMMIT")
			}
			lost := e.lsn("current_setting('cdc_relay_test.changed')::pg_lsn")
			e.waitFor("the relay stops", 60*time.Second, func() bool {
				e.confirmedAtMost(lost, "the change of the publication")
				return !relay.Running()
			})
			e.confirmedAtMost(lost, "the change of the publication")
			if relay.Err() == nil {
				t.Fatalf("the relay exited 0; want an error")
			}
			log := relay.Log()
			want := []string{"confirmed nothing past", "and the same flags as run"}
			if tt.seen {
				want = append(want, tt.want, "BEGIN; ALTER PUBLICATION")
				mustExec(t, e.conn, tt.undo)
			} else if !strings.Contains(log, tt.want) {
				want = append(want, "changed since the last check") // no check fell between the change and the undo
			}
			for _, s := range want {
				if !strings.Contains(log, s) {
					t.Fatalf("the relay's error does not say %q:\n%s", s, log)
				}
			}

			for _, line := range strings.Split(log, "\n") {
				if strings.Contains(line, "confirmed nothing past") {
					t.Logf("the relay said: %s", line)
				}
			}
			e.recoverPrinted(log)
			relay = e.startRelay()
			e.waitEveryID(topic, 5)
			relay.stop(30 * time.Second)
		})
	}
}

// TestPublicationChangedWhileStopped: a change of the publication made and
// undone while no relay runs is seen at the next start, from the stamp
// the checkpoint row keeps: the relay refuses to start, and its printed
// recover command, then a start, deliver every event.
func TestPublicationChangedWhileStopped(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	relay := e.startRelay()
	topic := e.topic("order")
	for i := range 2 {
		insert(t, e.conn, "order", "k", "Before", fmt.Sprintf(`{"n": "before %d"}`, i))
	}
	e.readN(topic, 2, 30*time.Second)
	relay.stop(30 * time.Second)

	mustExec(t, e.conn, "ALTER PUBLICATION cdc_relay SET (publish = 'update')")
	for i := range 3 {
		insert(t, e.conn, "order", "k", "Hidden", fmt.Sprintf(`{"n": "hidden %d"}`, i))
	}
	mustExec(t, e.conn, "ALTER PUBLICATION cdc_relay SET (publish = 'insert')")

	refused := e.spawnRelay()
	e.waitFor("the relay refuses to start", 60*time.Second, func() bool { return !refused.Running() })
	for _, s := range []string{"changed since the last check", "the publication's own row", "cdc-relay recover --since"} {
		if refused.Err() == nil || !strings.Contains(refused.Log(), s) {
			t.Fatalf("the relay's refusal (%v) does not say %q:\n%s", refused.Err(), s, refused.Log())
		}
	}
	e.recoverPrinted(refused.Log())
	relay = e.startRelay()
	e.waitEveryID(topic, 5)
	relay.stop(30 * time.Second)
}

// recoverPrinted runs the `cdc-relay recover --since …` command with a
// time that a relay's log printed, with the relay's flags (a row parked
// without its column says `recover --since TIME`, with no time).
func (e *env) recoverPrinted(log string) {
	e.t.Helper()
	m := regexp.MustCompile("`cdc-relay recover --since ([0-9]\\S*)`").FindStringSubmatch(log) // a time, not TIME
	if m == nil {
		e.t.Fatalf("the relay's error has no recover command with a time:\n%s", log)
	}
	e.runRecover("--since", m[1])
}

// runRecover runs `cdc-relay recover` with args and the relay's flags,
// failing the test when it fails.
func (e *env) runRecover(args ...string) {
	e.t.Helper()
	recoverArgs := append(append([]string{"recover"}, args...), withoutFlag(e.relayArgs()[1:], "--metrics-addr")...)
	out, err := exec.Command(relayBin, recoverArgs...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("recover %v: %v\n%s", args, err, out)
	}
	e.t.Logf("recover %v said: %s", args, out)
}

// waitEveryID waits until the id of each of the outbox table's n rows
// arrived in topic, as the "id" header of a record.
func (e *env) waitEveryID(topic string, n int) {
	e.t.Helper()
	ids := e.outboxIDs("true")
	if len(ids) != n {
		e.t.Fatalf("%d rows in the outbox table, want %d", len(ids), n)
	}
	e.waitFor("every event arrives with its id", 30*time.Second, func() bool { return e.everyIDIn(topic) })
}
