package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A parked event is one event of one source: two outbox tables that each
// number their rows park the same id of one transaction as two events.
// And every event of a paused topic waits, also one sent again from its
// outbox row (a team's reset, a row adopted at the switch-over), whose
// topic is known only once the row is read.

// writeConfig writes yaml to relay.yaml in a directory of the test's own
// and returns its path.
func (e *env) writeConfig(yaml string) string {
	e.t.Helper()
	path := filepath.Join(e.t.TempDir(), "relay.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// endCount is how many records topic holds, in all its partitions.
func (e *env) endCount(topic string) int64 {
	e.t.Helper()
	return sum(e.endOffsets(e.client(), topic))
}

// TestTwoTablesOneIDParkedWhilePaused: two outbox tables with their own
// bigserial ids, one topic, the topic paused; one transaction inserts id 1
// into each. Both events are parked PAUSED (the slot confirms past the
// transaction with two rows, not one), none reaches the topic, and after
// resume both arrive, once each.
func TestTwoTablesOneIDParkedWhilePaused(t *testing.T) {
	parallel(t)
	e := newEnvUnprepared(t)
	topic := e.topic("shared")
	conn := mustConnect(t, e.url)
	for _, table := range []string{"a_outbox", "b_outbox"} {
		mustExec(t, conn, "CREATE TABLE "+table+" (id bigserial PRIMARY KEY, aggregate_id text NOT NULL, payload jsonb NOT NULL)")
	}
	conn.Close(context.Background())
	var yaml string
	for _, table := range []string{"a_outbox", "b_outbox"} {
		yaml += fmt.Sprintf("  - table: public.%s\n    id: id\n    key: aggregate_id\n    value: payload\n    topic: %q\n", table, topic)
	}
	path := e.writeConfig("tables:\n" + yaml)
	e.prepare("--config", path)
	e.createTopic1(topic)
	e.pauseCmd("pause", topic)
	p := e.startRelayArgs(relayBin, e.configArgs(path)...)

	tx, err := e.conn.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"a_outbox", "b_outbox"} {
		if _, err := tx.Exec(context.Background(), "INSERT INTO "+table+" (aggregate_id, payload) VALUES ('k', jsonb_build_object('from', $1::text))", table); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitConfirmed(30 * time.Second)
	var sources []string
	rows, _ := e.conn.Query(context.Background(), "SELECT source_table FROM outbox_delivery WHERE event_id = '1' AND status = 'PAUSED' ORDER BY 1")
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(sources) != 2 || sources[0] != "public.a_outbox" || sources[1] != "public.b_outbox" {
		t.Fatalf("the transaction is confirmed with PAUSED rows of id 1 from %q; want one from each table", sources)
	}
	if n := e.endCount(topic); n != 0 {
		t.Fatalf("%d records reached the paused topic", n)
	}

	e.pauseCmd("resume", topic)
	e.waitFor("both events DELIVERED", 30*time.Second, func() bool { return e.statusCount("DELIVERED") == 2 })
	from := map[string]int{}
	for _, r := range e.readN(topic, 2, 30*time.Second) {
		if id := header(r, "id"); id != "1" {
			t.Errorf("a record with id header %q, want 1", id)
		}
		from[string(r.Value)]++
	}
	if n := e.endCount(topic); n != 2 || from[`{"from": "a_outbox"}`] != 1 || from[`{"from": "b_outbox"}`] != 1 {
		t.Fatalf("%s holds %d records, by value %v; want one from each table", topic, n, from)
	}
	p.stop(30 * time.Second)
}

// TestReloadRowsWaitWhilePaused: an outbox table with write-back and a
// pending value. A row pending before the slot existed is adopted by the
// first run while its topic is paused; a delivered row of another topic
// is reset by the team (set back to PENDING) after that topic is paused.
// Each waits, with no record in its topic and its outbox row still
// PENDING: the adopted row, whose topic was read with it, is never
// claimed; the reset one is parked PAUSED with its topic once read (the poller goes on meanwhile: a row of a
// topic not paused is delivered after them). After resume each arrives
// once more, and its row says DELIVERED.
func TestReloadRowsWaitWhilePaused(t *testing.T) {
	parallel(t)
	e := newEnvUnprepared(t)
	adopted, reset, free := e.topic("adopted"), e.topic("reset"), e.topic("free")
	conn := mustConnect(t, e.url)
	mustExec(t, conn, `CREATE TABLE outbox (id bigserial PRIMARY KEY, aggregate_type text NOT NULL, aggregate_id text NOT NULL,
		payload jsonb NOT NULL, status text NOT NULL DEFAULT 'PENDING', delivered_at timestamptz)`)
	mustExec(t, conn, "INSERT INTO outbox (aggregate_type, aggregate_id, payload) VALUES ('adopted', 'k1', '{}')") // id 1
	conn.Close(context.Background())
	path := e.writeConfig(`tables:
  - table: public.outbox
    id: id
    key: aggregate_id
    value: payload
    topic: "` + e.prefix + `.{aggregate_type}"
    write_back:
      status_column: status
      delivered: DELIVERED
      failed: FAILED
      pending: [PENDING]
      delivered_at_column: delivered_at
`)
	e.prepare("--config", path, "--no-slot")
	for _, topic := range []string{adopted, reset, free} {
		e.createTopic1(topic)
	}
	e.pauseCmd("pause", adopted)
	p := e.startRelayArgs(relayBin, e.configArgs(path)...) // creates the slot and adopts row 1, with its topic

	mustExec(t, e.conn, "INSERT INTO outbox (aggregate_type, aggregate_id, payload) VALUES ('reset', 'k2', '{}')") // id 2
	e.waitFor("row 2 delivered", 30*time.Second, func() bool { return e.outboxStatus("2") == "DELIVERED" })
	e.pauseCmd("pause", reset)
	mustExec(t, e.conn, "UPDATE outbox SET status = 'PENDING' WHERE id = 2")
	e.waitFor("the reset row parked PAUSED", 30*time.Second, func() bool { return e.reloadState("2") == "PAUSED "+reset })
	// A later row of a topic not paused is delivered by the same relay
	// and poller: the paused ones are held, not the poller stalled.
	mustExec(t, e.conn, "INSERT INTO outbox (aggregate_type, aggregate_id, payload) VALUES ('free', 'k3', '{}')") // id 3
	e.waitFor("row 3 delivered", 30*time.Second, func() bool { return e.outboxStatus("3") == "DELIVERED" })
	mustExec(t, e.conn, "UPDATE outbox SET status = 'PENDING' WHERE id = 3")
	e.waitFor("the reset of row 3, of a topic not paused, delivered", 30*time.Second, func() bool { return e.endCount(free) == 2 })
	// The adopted row knows its topic: never claimed while it is paused.
	// The reset one learnt it as the poller read its row: parked PAUSED.
	for id, want := range map[string]string{"1": "FAILED " + adopted, "2": "PAUSED " + reset} {
		if got := e.reloadState(id); got != want {
			t.Fatalf("row %s's reload row is %q, want %q", id, got, want)
		}
		if got := e.outboxStatus(id); got != "PENDING" {
			t.Fatalf("row %s says %s while its topic is paused, want PENDING", id, got)
		}
	}
	if a, r := e.endCount(adopted), e.endCount(reset); a != 0 || r != 1 {
		t.Fatalf("while paused: %d records on %s, %d on %s; want 0 and the 1 sent before the reset", a, adopted, r, reset)
	}
	if !strings.Contains(p.Log(), "their topic is paused") {
		t.Errorf("the relay's log does not say that the reset and adopted events are held for their paused topic")
	}

	e.pauseCmd("resume", adopted)
	e.pauseCmd("resume", reset)
	for _, id := range []string{"1", "2"} {
		e.waitFor("row "+id+" delivered after resume", 30*time.Second, func() bool {
			return e.outboxStatus(id) == "DELIVERED" && strings.HasPrefix(e.reloadState(id), "DELIVERED ")
		})
	}
	if a, r := e.endCount(adopted), e.endCount(reset); a != 1 || r != 2 {
		t.Fatalf("after resume: %d records on %s, %d on %s; want 1 and 2 (once each after the resume)", a, adopted, r, reset)
	}
	p.stop(30 * time.Second)
}

// reloadState is the status and topic of the newest reload row of the
// outbox row with id ("" when it has none).
func (e *env) reloadState(id string) string {
	e.t.Helper()
	var s string
	err := e.conn.QueryRow(context.Background(),
		"SELECT coalesce((SELECT status || ' ' || topic FROM outbox_delivery WHERE event_id = $1 AND reload ORDER BY id DESC LIMIT 1), '')", id).Scan(&s)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// outboxStatus is the status column of the outbox row with id.
func (e *env) outboxStatus(id string) string {
	e.t.Helper()
	var s string
	if err := e.conn.QueryRow(context.Background(), "SELECT status FROM outbox WHERE id = $1::bigint", id).Scan(&s); err != nil {
		e.t.Fatal(err)
	}
	return s
}
