package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestOptionalColumnRenamed: the id, topic and headers columns are
// optional in the mapping (a table without them is relayed without
// them), but one the table had when the relay started that a DBA renames
// while it runs must not make events go out degraded, silently: without
// their id header (the consumers' deduplication key), to the template's
// topic instead of the row's, or without their headers. The rows written
// meanwhile are parked with the reason and published correctly by
// `cdc-relay recover --since`; a column missing now stops the relay,
// naming it and its flag. On main the three events went out degraded and
// nothing was logged.
func TestOptionalColumnRenamed(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	ctx := context.Background()
	since := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	special := e.topic("special")
	relay := e.startRelay()
	topic := e.topic("order")
	insert(t, e.conn, "order", "7", "A", `{"r": 1}`)
	e.readN(topic, 1, 30*time.Second)

	// Renamed, a row written, renamed back, in one transaction each: the
	// relay reads the rows after the rename back, and parks them.
	for _, step := range []struct{ col, insert string }{
		{"id", `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('order', 7, 'IdRenamed', '{"r": 4}')`},
		{"topic", `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, renamed) VALUES ('order', 7, 'TopicRenamed', '{"r": 5}', '` + special + `')`},
		{"headers", `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, renamed) VALUES ('order', 7, 'HeadersRenamed', '{"r": 6}', '{"traceparent": "abc"}')`},
	} {
		err := pgx.BeginFunc(ctx, e.conn, func(tx pgx.Tx) error {
			for _, sql := range []string{"ALTER TABLE outbox RENAME COLUMN " + step.col + " TO renamed", step.insert,
				"ALTER TABLE outbox RENAME COLUMN renamed TO " + step.col} {
				if _, err := tx.Exec(ctx, sql); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("rename %s: %v", step.col, err)
		}
	}
	e.waitFor("the three rows are parked", 30*time.Second, func() bool { return e.statusCount("DEAD") == 3 })
	for i, want := range []string{`no column "id" (the event id)`, `no column "topic" (the topic column)`, `no column "headers" (the headers column)`} {
		p := e.parked()[i]
		if !strings.HasPrefix(p, "DEAD : ") || !strings.Contains(p, want) || !strings.Contains(p, "cdc-relay recover --since") {
			t.Fatalf("parked %q; want a DEAD row without a topic saying %q and how to publish it again", p, want)
		}
	}

	// Renamed while the relay runs, a row written: the relay stops at it,
	// naming the column and its flag.
	mustExec(t, e.conn, "ALTER TABLE outbox RENAME COLUMN id TO event_uuid")
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('order', 7, 'IdRenamedLong', '{"r": 7}')`)
	e.waitFor("the relay stops", 60*time.Second, func() bool { return !relay.Running() })
	for _, s := range []string{`no column "id" (the event id)`, "--id-column", "rename the column back"} {
		if relay.Err() == nil || !strings.Contains(relay.Log(), s) {
			t.Fatalf("the relay's error (%v) does not say %q:\n%s", relay.Err(), s, relay.Log())
		}
	}
	// A restart while it lacks the column (a supervisor restarts the
	// relay) is refused with the same message, not relayed without ids.
	refused := e.spawnRelay()
	e.waitFor("the relay refuses to start", 60*time.Second, func() bool { return !refused.Running() })
	for _, s := range []string{`no column "id" (the event id)`, "--id-column", "had it when the relay last started"} {
		if refused.Err() == nil || !strings.Contains(refused.Log(), s) {
			t.Fatalf("the relay's refusal (%v) does not say %q:\n%s", refused.Err(), s, refused.Log())
		}
	}
	mustExec(t, e.conn, "ALTER TABLE outbox RENAME COLUMN event_uuid TO id")
	relay = e.startRelay()
	e.waitFor("the fourth row is parked", 30*time.Second, func() bool { return e.statusCount("DEAD") == 4 })
	insert(t, e.conn, "order", "7", "B", `{"r": 8}`)
	e.waitFor("the next event is delivered", 30*time.Second, func() bool { return len(e.readAll(topic)) >= 2 })
	relay.stop(30 * time.Second)

	// Nothing went out degraded.
	for _, r := range append(e.readAll(topic), e.readAll(special)...) {
		if header(r, "id") == "" || header(r, "event_type") == "TopicRenamed" && r.Topic != special ||
			header(r, "event_type") == "HeadersRenamed" && header(r, "traceparent") != "abc" {
			t.Fatalf("event %s went out degraded: topic %s headers %v", header(r, "event_type"), r.Topic, r.Headers)
		}
	}

	// recover publishes the parked rows, each whole.
	out, err := exec.Command(relayBin, append([]string{"recover", "--since", since}, withoutFlag(e.relayArgs()[1:], "--metrics-addr")...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	ids := map[string]bool{}
	for _, id := range e.outboxIDs("true") {
		ids[id] = true
	}
	got := map[string]bool{}
	e.waitFor("every event arrives whole", 30*time.Second, func() bool {
		for _, r := range append(e.readAll(topic), e.readAll(special)...) {
			if !ids[header(r, "id")] {
				t.Fatalf("event %s without its id: %v", header(r, "event_type"), r.Headers)
			}
			switch header(r, "event_type") {
			case "TopicRenamed":
				if r.Topic != special {
					t.Fatalf("TopicRenamed went to %s, want %s", r.Topic, special)
				}
			case "HeadersRenamed":
				if header(r, "traceparent") != "abc" {
					t.Fatalf("HeadersRenamed without its traceparent: %v", r.Headers)
				}
			}
			got[header(r, "event_type")] = true
		}
		return len(got) == 6
	})
	for _, want := range []string{"A", "IdRenamed", "TopicRenamed", "HeadersRenamed", "IdRenamedLong", "B"} {
		if !got[want] {
			t.Fatalf("event %s never arrived: %v", want, got)
		}
	}

	// A named optional column the table never had is warned of at start.
	relay = e.startRelay("--headers-column", "no_such_column")
	e.waitFor("the start warns of the column", 30*time.Second, func() bool {
		return strings.Contains(relay.Log(), "lacks optional columns") && strings.Contains(relay.Log(), "no_such_column")
	})
	relay.stop(30 * time.Second)
}
