package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

// The paths off the happy one: topics created on demand, events parked in
// the status table and delivered in the end, retention, and a stop that a
// locked status table cannot hold up.

// statusCount counts the status table's rows in state ("" for all).
func (e *env) statusCount(state string) int {
	e.t.Helper()
	var n int
	err := e.conn.QueryRow(context.Background(),
		"SELECT count(*) FROM outbox_delivery WHERE $1 = '' OR status = $1", state).Scan(&n)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// createTopic creates topic with 4 partitions and the given configs.
func (e *env) createTopic(topic string, configs map[string]string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafkatest.CreateTopic(ctx, e.client(), topic, 4, configs); err != nil {
		e.t.Fatal(err)
	}
}

// checkOnce requires n records with distinct ids.
func checkOnce(t *testing.T, recs []*kgo.Record, n int) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range recs {
		id := header(r, "id")
		if seen[id] {
			t.Fatalf("event %s arrived twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct events, want %d", len(seen), n)
	}
}

// TestDefaultFlagsDeliverEverything: a user's first run, with only the
// connections (and the test's slot) and no topic created beforehand, on a
// broker that creates topics on demand as Kafka does by default: every
// event is delivered and nothing is parked.
func TestDefaultFlagsDeliverEverything(t *testing.T) {
	// Alone: with the default flags it serves on the default port, 127.0.0.1:7187.
	e := newEnv(t)
	p := e.startRelayArgs(relayBin, "run", "--postgres-url", e.url, "--kafka-brokers", strings.Join(e.brokers, ","), "--slot", e.slot)
	agg := strings.ReplaceAll(e.prefix, ".", "_") // the default template: outbox.event.{aggregate_type}
	for tx := 0; tx < 10; tx++ {
		mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			SELECT $1, 'k' || g, 'Created', json_build_object('n', g)::jsonb FROM generate_series(1, 10) g`, agg)
	}
	checkOnce(t, e.readN("outbox.event."+agg, 100, 60*time.Second), 100)
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last commit", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	if n := e.statusCount(""); n != 0 {
		t.Fatalf("%d events parked in the status table with default flags, want none", n)
	}
	p.stop(30 * time.Second)
}

// TestMissingTopicParkedThenDelivered: with topic creation off, events for
// a missing topic are parked while another topic flows; once the topic is
// created, the poller delivers every parked event, none lost, none twice.
func TestMissingTopicParkedThenDelivered(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.createTopic(e.topic("flowing"), nil)
	e.startRelay("--kafka-create-topics=false", "--retry-base", "200ms", "--retry-max", "1s", "--max-attempts", "1000")
	for i := 0; i < 20; i++ {
		tx, err := e.conn.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		insert(t, tx, "flowing", "k", "Flowing", fmt.Sprintf(`{"n": %d}`, i))
		insert(t, tx, "missing", "k", "Missing", fmt.Sprintf(`{"n": %d}`, i))
		if err := tx.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	checkOnce(t, e.readN(e.topic("flowing"), 20, 60*time.Second), 20)
	e.waitFor("20 events parked for the missing topic", 60*time.Second, func() bool { return e.statusCount("FAILED") == 20 })
	if n := len(e.endOffsets(e.client(), e.topic("missing"))); n != 0 {
		t.Fatalf("the missing topic exists (%d partitions): topic creation was not off", n)
	}

	e.createTopic(e.topic("missing"), nil)
	e.waitFor("the poller delivers the 20 parked events", 60*time.Second, func() bool { return e.statusCount("DELIVERED") == 20 })
	recs := e.readAll(e.topic("missing"))
	checkOnce(t, recs, 20)
	for _, r := range recs {
		if n, err := strconv.Atoi(header(r, "cdc-relay-attempts")); err != nil || n < 1 {
			t.Fatalf("re-delivered record without a cdc-relay-attempts header: %v", r.Headers)
		}
		if header(r, "cdc-relay-commit-lsn") == "" || header(r, "event_type") != "Missing" {
			t.Fatalf("re-delivered record lacks its headers: %v", r.Headers)
		}
	}
}

// TestDeadAfterMaxAttemptsThenRetried: a cause that stays makes a parked
// event DEAD after the configured attempts, each wait following the
// schedule; `cdc-relay failed retry` brings it back, and it is delivered
// once the cause is gone.
func TestDeadAfterMaxAttemptsThenRetried(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	const base, max = 300 * time.Millisecond, 1200 * time.Millisecond
	e.startRelay("--kafka-create-topics=false", "--retry-base", base.String(), "--retry-max", max.String(), "--max-attempts", "4")
	insert(t, e.conn, "nowhere", "k", "Lost", `{"n": 1}`)

	// Watch the row: after its n-th failed attempt, the next one is
	// base·2^(n-1) later, at most max, ±20%.
	waits := map[int]time.Duration{}
	e.waitFor("the parked event is DEAD", 3*time.Minute, func() bool {
		var state string
		var attempts int
		var wait time.Duration
		err := e.conn.QueryRow(context.Background(), `SELECT status, attempts, next_attempt_at - updated_at FROM outbox_delivery`).Scan(&state, &attempts, &wait)
		if err != nil {
			return false
		}
		if state == "FAILED" && attempts > 0 {
			waits[attempts] = wait
		}
		return state == "DEAD"
	})
	for n, wait := range waits {
		want := min(base<<(n-1), max)
		if wait < want*8/10-10*time.Millisecond || wait > want*12/10+10*time.Millisecond {
			t.Errorf("after attempt %d the next was %s later, want %s ±20%%", n, wait, want)
		}
	}
	if len(waits) == 0 {
		t.Fatal("never saw the row between attempts")
	}
	var attempts int
	if err := e.conn.QueryRow(context.Background(), "SELECT attempts FROM outbox_delivery").Scan(&attempts); err != nil || attempts != 4 {
		t.Fatalf("DEAD after %d attempts (%v), want 4", attempts, err)
	}

	e.createTopic(e.topic("nowhere"), nil)
	out, err := exec.Command(relayBin, "failed", "retry", "--all", "--postgres-url", e.url).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "retried 1 event") {
		t.Fatalf("failed retry --all: %v\n%s", err, out)
	}
	e.waitFor("the retried event is delivered", 60*time.Second, func() bool { return e.statusCount("DELIVERED") == 1 })
	checkOnce(t, e.readAll(e.topic("nowhere")), 1)
}

// TestInsertAndDeleteInOneTransaction: the application deletes the outbox
// row in the transaction that inserts it; the event is still relayed (the
// insert is in the WAL), and the table stays empty.
func TestInsertAndDeleteInOneTransaction(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.startRelay()
	tx, err := e.conn.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	insert(t, tx, "order", "k", "Placed", `{"n": "deleted at once"}`)
	if _, err := tx.Exec(context.Background(), "DELETE FROM outbox"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertValues(t, e.readN(e.topic("order"), 1, 30*time.Second), []string{`{"n": "deleted at once"}`})
}

// TestStopWithTheStatusTableLocked: SIGTERM while a status-table write is
// blocked behind someone else's lock exits within the stop timeout; the
// event whose row was not written stays unconfirmed and is parked after
// the restart.
func TestStopWithTheStatusTableLocked(t *testing.T) {
	// Alone: it asserts the stop time (within --stop-timeout).
	e := newEnv(t)
	p := e.startRelay("--stop-timeout", "2s")
	locker := mustConnect(t, e.url)
	defer locker.Close(context.Background())
	lock, err := locker.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(context.Background(), "LOCK TABLE outbox_delivery IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload)
		VALUES ('order', 'k', 'BadTopic', 'bad topic!*', '{"n": "poison"}')`)
	e.waitFor("the relay waits for the status table's lock", 30*time.Second, func() bool {
		var n int
		err := e.conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE l.relation = 'outbox_delivery'::regclass AND NOT l.granted AND a.query LIKE 'INSERT INTO%'`).Scan(&n)
		return err == nil && n > 0
	})
	start := time.Now()
	p.stop(10 * time.Second)
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("stop took %s with a 2s stop timeout and the status table locked", took)
	}
	if err := lock.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.statusCount(""); n != 0 {
		t.Fatalf("%d status rows while the table was locked", n)
	}
	p = e.startRelay()
	e.waitFor("the poison event is parked after the restart", 30*time.Second, func() bool { return e.statusCount("DEAD") == 1 })
	insert(t, e.conn, "order", "k", "Good", `{"n": "after"}`)
	assertValues(t, e.readN(e.topic("order"), 1, 30*time.Second), []string{`{"n": "after"}`})
	p.stop(30 * time.Second)
}

// TestBatchTooLargeForTheTopic: the broker refuses a whole batch when it
// exceeds the topic's max.message.bytes; only a record too large on its
// own is parked. Kafka's default topic limit (1048576) with a 2 MB event
// among 1,000 small ones committed together; and a topic limit far below
// the producer's batch size, where every batch is refused and each record
// fits alone. kfake enforces no size limit, so this runs on Apache Kafka.
func TestBatchTooLargeForTheTopic(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	if brokerKind() != "apache" {
		t.Skipf("needs a broker that enforces max.message.bytes (kfake does not); run with CDC_RELAY_TEST_KAFKA=apache")
	}
	e.createTopic(e.topic("default"), map[string]string{"max.message.bytes": "1048576"})
	e.createTopic(e.topic("small"), map[string]string{"max.message.bytes": "100000"})
	p := e.startRelay()
	for _, agg := range []string{"default", "small"} {
		tx, err := e.conn.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(context.Background(), `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			SELECT $1, 'k' || (g % 10), 'Small', json_build_object('n', g, 'pad', repeat('x', 250))::jsonb
			FROM generate_series(1, 1000) g`, agg); err != nil {
			t.Fatal(err)
		}
		if agg == "default" {
			if _, err := tx.Exec(context.Background(), `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
				VALUES ($1, 'k1', 'Large', json_build_object('pad', repeat('x', 2000000))::jsonb)`, agg); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, agg := range []string{"default", "small"} {
		checkOnce(t, e.readN(e.topic(agg), 1000, 120*time.Second), 1000)
	}
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past both transactions", 60*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	var n int
	var eventType string
	err := e.conn.QueryRow(context.Background(), `SELECT count(*), max(h->>'value') FROM outbox_delivery, jsonb_array_elements(headers) h
		WHERE h->>'key' = 'event_type'`).Scan(&n, &eventType)
	if err != nil || n != 1 || eventType != "Large" {
		t.Fatalf("status table holds %d rows (%q, %v), want only the 2 MB event", n, eventType, err)
	}
	p.stop(30 * time.Second)
}

// TestReservedTopicIsParked: with the default --allowed-topics, an event
// that names _schemas (Schema Registry's topic) in its topic column is
// parked DEAD with a reason that names the topic and the flag, and nothing
// is written to _schemas; the next event is delivered and the slot moves
// past both.
func TestReservedTopicIsParked(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	cl := e.client()
	before := e.totalRecords(cl, "_schemas")
	e.startRelay()
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload)
		VALUES ('order', 'k', 'Schema', '_schemas', '{"n": "schema"}')`)
	insert(t, e.conn, "order", "k", "Good", `{"n": "good"}`)

	assertValues(t, e.readN(e.topic("order"), 1, 30*time.Second), []string{`{"n": "good"}`})
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past both events", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	var status, reason string
	if err := e.conn.QueryRow(context.Background(),
		"SELECT status, last_error FROM outbox_delivery WHERE topic = '_schemas'").Scan(&status, &reason); err != nil {
		t.Fatalf("the _schemas event is not in the status table: %v", err)
	}
	if status != "DEAD" || !strings.Contains(reason, `"_schemas"`) || !strings.Contains(reason, "--allowed-topics") {
		t.Fatalf("status %s, reason %q; want DEAD and a reason naming the topic and --allowed-topics", status, reason)
	}
	if n := e.statusCount(""); n != 1 {
		t.Fatalf("%d events parked, want only the _schemas one", n)
	}
	if after := e.totalRecords(cl, "_schemas"); after != before {
		t.Fatalf("_schemas went from %d to %d records", before, after)
	}
}
