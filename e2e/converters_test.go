package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
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
	// The env's table, slot and checkpoint give way to the table's:
	// migrate --config makes the publication and the relay's slot.
	mustExec(t, e.conn, "DROP TABLE outbox")
	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	mustExec(t, e.conn, "DELETE FROM cdc_relay_checkpoint")
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
	path := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	e.migrateConfig(path)
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
