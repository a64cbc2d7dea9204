package e2e

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// onCluster moves the test's database to the database postgres of c, a
// cluster of the test's own, and migrates it for the test's slot.
func (e *env) onCluster(c *pgtemp.Cluster) {
	e.t.Helper()
	e.reconnect(c.URL("postgres"))
	out, err := exec.Command(relayBin, "migrate", "--postgres-url", e.url, "--slot", e.slot).CombinedOutput()
	if err != nil {
		e.t.Fatalf("migrate: %v\n%s", err, out)
	}
}

// reconnect points the test at url, with a new connection.
func (e *env) reconnect(url string) {
	e.t.Helper()
	e.conn.Close(context.Background())
	e.url = url
	e.conn = mustConnect(e.t, url)
}

// streamID is the stream id of the test slot's checkpoint row.
func (e *env) streamID() string {
	e.t.Helper()
	var id *string
	if err := e.conn.QueryRow(context.Background(), "SELECT stream_id FROM cdc_relay_checkpoint WHERE slot_name = $1", e.slot).Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	if id == nil {
		return ""
	}
	return *id
}

// padWALPast writes WAL that is no event (rows of a table outside the
// publication) until the server's WAL is past lsn.
func (e *env) padWALPast(lsn string) {
	e.t.Helper()
	mustExec(e.t, e.conn, "CREATE TABLE IF NOT EXISTS wal_padding (v text)")
	for i := 0; ; i++ {
		var past bool
		if err := e.conn.QueryRow(context.Background(), "SELECT pg_current_wal_lsn() > $1::pg_lsn", lsn).Scan(&past); err != nil {
			e.t.Fatal(err)
		}
		if past {
			return
		}
		if i == 1000 {
			e.t.Fatalf("the WAL is not past %s after %d batches of padding", lsn, i)
		}
		mustExec(e.t, e.conn, "INSERT INTO wal_padding SELECT repeat('x', 1000) FROM generate_series(1, 1000)")
	}
}

// TestExactlyOnceCloneStartsFromItsOwnSlot: a database copied from another
// (a restored backup, a clone: the same system identifier and database
// name, no slot) whose relay uses the same slot name and checkpoint topic
// does not take the other database's Kafka position for its own. The
// original, its checkpoint row without a stream id as an earlier version
// left it, delivers events, is copied, and delivers many more (its Kafka
// position far ahead of the copy's WAL; its restarted relay takes that
// position, its own stream's). On the copy, the slot is created again as
// a user would after a restore, and the copy commits 10 events of its own,
// which its relay sends from its slot, with a warning: a read_committed
// consumer sees every event of both databases once. Restarted, the copy's
// relay takes its own stream's position from the checkpoint topic.
//
// By recover: the slot exists before the copy's events and before its WAL
// passes the original's position, so taking that position would skip
// them. By run --accept-slot-loss: the slot is created with the copy's WAL
// behind the original's position.
func TestExactlyOnceCloneStartsFromItsOwnSlot(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name      string
		slotAgain func(e *env, origEnd string) *relayProc // creates the copy's slot, commits its events, starts its relay
	}{
		{"recover", func(e *env, origEnd string) *relayProc {
			// --since: nothing of the original's to publish again.
			recoverArgs := append([]string{"recover"}, withoutFlag(e.relayArgs()[1:], "--metrics-addr")...)
			since := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
			if out, err := exec.Command(relayBin, append(recoverArgs, "--since", since)...).CombinedOutput(); err != nil {
				e.t.Fatalf("recover on the copy: %v\n%s", err, out)
			}
			e.insertClone()
			e.padWALPast(origEnd)
			return e.startRelay(exactlyOnce...)
		}},
		{"run --accept-slot-loss", func(e *env, _ string) *relayProc {
			relay := e.startRelay(append(exactlyOnce, "--accept-slot-loss")...)
			e.insertClone()
			return relay
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { cloneStartsFromItsOwnSlot(t, tc.slotAgain) })
	}
}

// insertClone commits 10 events of the key "clone".
func (e *env) insertClone() {
	e.t.Helper()
	for i := range 10 {
		insert(e.t, e.conn, "order", "clone", "Clone", `{"n": `+strconv.Itoa(i)+`}`)
	}
}

func cloneStartsFromItsOwnSlot(t *testing.T, slotAgain func(e *env, origEnd string) *relayProc) {
	e := newEnv(t)
	orig := pgtemptest.StartT(t, pgtemp.Options{})
	e.onCluster(orig)
	topic := e.topic("order")

	// A row of an earlier version, without a stream id: the relay gives
	// it one.
	mustExec(t, e.conn, "UPDATE cdc_relay_checkpoint SET stream_id = NULL")
	relay := e.startRelay(exactlyOnce...)
	for i := range 10 {
		insert(t, e.conn, "order", "before", "Before", `{"n": `+strconv.Itoa(i)+`}`)
	}
	e.waitConfirmed(60 * time.Second)
	relay.stop(30 * time.Second)
	origStream := e.streamID()
	if origStream == "" {
		t.Fatal("the relay left its checkpoint row without a stream id")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.conn.Close(ctx) // the copy stops the original
	clone, err := orig.Copy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = clone.Stop() })
	e.conn = mustConnect(t, e.url)

	relay = e.startRelay(exactlyOnce...)
	if !strings.Contains(relay.Log(), "exactly-once: last committed position read") {
		t.Fatalf("the original's relay, restarted, did not take its own stream's position from the checkpoint topic:\n%s", relay.Log())
	}
	for range 30 {
		mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			SELECT 'order', 'after', 'After', jsonb_build_object('n', n) FROM generate_series(1, 10) n`)
	}
	e.waitConfirmed(60 * time.Second)
	relay.stop(30 * time.Second)
	origEnd := e.lsn(currentLSN).String()
	want := e.outboxIDs("true")

	e.reconnect(clone.URL("postgres"))
	relay = slotAgain(e, origEnd)
	if s := e.streamID(); s == "" || s == origStream {
		t.Fatalf("the copy's new slot has stream id %q, the original's %q: want a new one", s, origStream)
	}
	want = append(want, e.outboxIDs("aggregate_id = 'clone'")...)
	e.waitConfirmed(60 * time.Second)
	requireEachOnce(t, topic, e.countCommitted(topic, len(want), 30*time.Second), want)
	if !strings.Contains(relay.Log(), "written by another stream") || !strings.Contains(relay.Log(), origStream) {
		t.Errorf("the copy's relay did not warn that the checkpoint topic's position is the original's (stream %s):\n%s", origStream, relay.Log())
	}
	relay.stop(30 * time.Second)

	relay = e.startRelay(exactlyOnce...)
	if !strings.Contains(relay.Log(), "exactly-once: last committed position read") || !strings.Contains(relay.Log(), e.streamID()) {
		t.Fatalf("the copy's relay, restarted, did not take its own stream's position from the checkpoint topic:\n%s", relay.Log())
	}
	insert(t, e.conn, "order", "clone", "Clone", `{"n": "last"}`)
	want = append(want, e.outboxIDs("payload->>'n' = 'last'")...)
	e.waitConfirmed(60 * time.Second)
	requireEachOnce(t, topic, e.countCommitted(topic, len(want), 30*time.Second), want)
	relay.stop(30 * time.Second)
}
