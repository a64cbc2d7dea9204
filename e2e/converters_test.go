package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/sink"
)

// TestConvertersOnTheSlowPath: a table's converters and envelope shape
// every record alike, whichever way it leaves: an event streamed, and an
// event held in the status table behind a paused topic and sent by the
// poller after resume, carry the same bytes for the same row: the key as
// JsonConverter with schemas writes a NOT NULL integer column (the
// catalog's NOT NULL read by both paths), the value as the router's
// envelope under JsonConverter without schemas, and the trace context of
// the tracing column as the traceparent and tracestate headers.
func TestConvertersOnTheSlowPath(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	topic := e.prefix + ".orders"
	e.dropOutbox()
	mustExec(t, e.conn, `CREATE TABLE outboxevent (
		id            uuid         NOT NULL PRIMARY KEY,
		aggregatetype varchar(255) NOT NULL,
		aggregateid   int4         NOT NULL,
		type          varchar(255) NOT NULL,
		payload       jsonb,
		tracingspancontext text)`)
	yaml := fmt.Sprintf(`publication: converters_slow_path
tables:
  - table: public.outboxevent
    id: id
    key: aggregateid
    value: payload
    topic: %q
    key_converter: json-with-schema
    value_converter: json
    envelope: {eventType: type}
    tracing_span_context: tracingspancontext
`, e.prefix+".{aggregatetype}")
	path := e.migrateYAML(yaml)
	relay := e.startRelayArgs(relayBin, e.configArgs(path)...)

	// The trace context as Debezium's outbox extensions write it: Java
	// properties text.
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	context := "#Mon Nov 30 12:00:00 UTC 2026\ntraceparent=" + traceparent + "\ntracestate=congo=t61rcWkgMzE\n"
	insert := func(id string, key int, typ, payload string) {
		mustExec(t, e.conn, "INSERT INTO outboxevent VALUES ($1, 'orders', $2, $3, $4, $5)", id, key, typ, payload, context)
	}
	const (
		streamed = "00000000-0000-4000-8000-000000000001"
		held     = "00000000-0000-4000-8000-000000000002"
	)
	payload := `{"total": 1.50, "note": "Jö 😀"}`
	insert(streamed, 7, "OrderCreated", payload)
	e.readN(topic, 1, time.Minute)

	e.pauseCmd("pause", topic)
	e.waitFor("/status lists the topic as paused", 30*time.Second, func() bool { return relay.pausedOnStatus(topic) })
	insert(held, 7, "OrderCreated", payload)
	e.waitFor("the event held in the status table", 30*time.Second, func() bool { return e.statusCount("PAUSED") == 1 })
	e.pauseCmd("resume", topic)

	recs := e.readN(topic, 2, time.Minute)
	wantKey := `{"schema":{"type":"int32","optional":false},"payload":7}`
	wantValue := `{"payload":"{\"note\": \"Jö \uD83D\uDE00\", \"total\": 1.50}","eventType":"OrderCreated"}`
	seen := map[string]bool{}
	for _, r := range recs {
		id := header(r, "id")
		seen[id] = true
		if string(r.Key) != wantKey || string(r.Value) != wantValue {
			t.Errorf("record of %s:\n key   %q\n value %q\nwant\n key   %q\n value %q", id, r.Key, r.Value, wantKey, wantValue)
		}
		if p, s := header(r, "traceparent"), header(r, "tracestate"); p != traceparent || s != "congo=t61rcWkgMzE" {
			t.Errorf("record of %s: traceparent %q, tracestate %q; want the column's", id, p, s)
		}
	}
	if !seen[streamed] || !seen[held] {
		t.Fatalf("records of %v, want the streamed event's and the held one's", seen)
	}
	e.waitFor("the held event DELIVERED", 30*time.Second, func() bool { return e.statusCount("DELIVERED") == 1 })
}

// TestPartitionColumnStreamAndPoller: a table's partition column places
// each record on the partition its row names, streamed and sent by the
// poller (exactly-once, backfill, recover and reload rows place it by the
// same code: Inflight.Fill, republish, the row loader). Streamed:
// a row's record on its partition, a NULL's by its key's hash. A row that
// names a partition the topic lacks is parked, saying how to fix it, and
// the next event of its key, on another partition, is held behind it
// with its partition kept in the status table. Once the topic has the
// partitions, `failed retry` sends both, by the poller, each on its own
// partition. No order violation is counted: Kafka keeps none between
// partitions.
func TestPartitionColumnStreamAndPoller(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	topic := e.prefix + ".orders"
	e.createTopic(topic, nil) // 4 partitions
	e.dropOutbox()
	mustExec(t, e.conn, `CREATE TABLE outboxevent (
		id            uuid         NOT NULL PRIMARY KEY,
		aggregatetype varchar(255) NOT NULL,
		aggregateid   varchar(255) NOT NULL,
		type          varchar(255) NOT NULL,
		payload       jsonb,
		part          int4)`)
	yaml := fmt.Sprintf(`publication: partition_column
tables:
  - table: public.outboxevent
    id: id
    key: aggregateid
    value: payload
    topic: %q
    partition: part
`, e.prefix+".{aggregatetype}")
	path := e.migrateYAML(yaml)
	relay := e.startRelayArgs(relayBin, e.configArgs(path)...)
	insert := func(id, key string, part any) {
		mustExec(t, e.conn, "INSERT INTO outboxevent VALUES ($1, 'orders', $2, 'Created', '{}', $3)", id, key, part)
	}
	const (
		placed   = "00000000-0000-4000-8000-000000000001"
		hashed   = "00000000-0000-4000-8000-000000000002"
		beyond   = "00000000-0000-4000-8000-000000000003"
		heldBy   = "00000000-0000-4000-8000-000000000004"
		hashedOf = "k2"
	)
	insert(placed, "k1", 3)
	insert(hashed, hashedOf, nil)
	insert(beyond, "k3", 6)
	want := map[string]int32{placed: 3, hashed: int32(sink.Partition([]byte(hashedOf), 4))}
	checkPartitions := func(recs []*kgo.Record) {
		t.Helper()
		for _, r := range recs {
			id := header(r, "id")
			if p, ok := want[id]; !ok || r.Partition != p {
				t.Errorf("event %s on partition %d, want %d (known: %t)", id, r.Partition, p, ok)
			}
		}
	}
	checkPartitions(e.readN(topic, 2, time.Minute))

	e.waitFor("the event beyond the topic's partitions parked", 30*time.Second, func() bool { return e.statusCount("FAILED") == 1 })
	insert(heldBy, "k3", 1)
	e.waitFor("the next event of its key held", 30*time.Second, func() bool { return e.statusCount("WAITING") == 1 })
	for _, f := range e.failedList() {
		if f.EventID != nil && *f.EventID == beyond && !strings.Contains(f.LastError, "add partitions to the topic") {
			t.Errorf("parked with %q, want a reason that says to add partitions", f.LastError)
		}
	}
	var kept *int32
	if err := e.conn.QueryRow(context.Background(), "SELECT record_partition FROM outbox_delivery WHERE event_id = $1", heldBy).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept == nil || *kept != 1 {
		t.Fatalf("the held event's record_partition is %v, want 1", kept)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(e.client()).UpdatePartitions(ctx, 8, topic); err != nil {
		t.Fatal(err)
	}
	e.failedCmd("retry", "--all")
	want[beyond], want[heldBy] = 6, 1
	recs := e.readN(topic, 4, time.Minute)
	checkPartitions(recs)
	e.waitFor("both DELIVERED", 30*time.Second, func() bool { return e.statusCount("DELIVERED") == 2 })
	checkOrderMetrics(relay, nil)
}

// dropOutbox drops newEnv's outbox table, slot and checkpoint, for a
// test's own table: migrate --config then makes the publication and the
// relay's slot.
func (e *env) dropOutbox() {
	e.t.Helper()
	mustExec(e.t, e.conn, "DROP TABLE outbox")
	mustExec(e.t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	mustExec(e.t, e.conn, "DELETE FROM cdc_relay_checkpoint")
}

// migrateYAML writes yaml as the test's relay.yaml, runs migrate
// --config on it, and returns its path.
func (e *env) migrateYAML(yaml string) string {
	e.t.Helper()
	path := filepath.Join(e.t.TempDir(), "relay.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
	e.migrateConfig(path)
	return path
}
