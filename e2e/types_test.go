package e2e

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestByteaPayloadAndHeaderClash: a bytea payload (a Protobuf message,
// with bytes 0x00 and 0xff) arrives byte for byte, not as PostgreSQL's \x
// hex text; and a headers-column key named like the relay's own id header
// does not make the record carry "id" twice: the row's id wins.
func TestByteaPayloadAndHeaderClash(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	mustExec(t, e.conn, `ALTER TABLE outbox ALTER COLUMN payload TYPE bytea USING convert_to(payload::text, 'UTF8')`)
	p := e.startRelay()
	proto := []byte{0x0a, 0x05, 'o', '-', '4', '2', 0x00, 0x10, 0x96, 0x01, 0x1a, 0x02, 0xff, 0xfe}
	var id string
	if err := e.conn.QueryRow(context.Background(), `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, headers)
		VALUES ('order', 'o-42', 'OrderPlaced', $1, '{"id": "spoofed", "trace": "t-1"}') RETURNING id::text`, proto).Scan(&id); err != nil {
		t.Fatal(err)
	}
	r := e.readN(e.topic("order"), 1, 30*time.Second)[0]
	if !bytes.Equal(r.Value, proto) {
		t.Errorf("value %x, want the payload's bytes %x", r.Value, proto)
	}
	ids := 0
	for _, h := range r.Headers {
		if h.Key == "id" {
			ids++
		}
	}
	if ids != 1 || header(r, "id") != id || header(r, "trace") != "t-1" {
		t.Errorf("headers %v: want one id header, the row's %s, and trace t-1", r.Headers, id)
	}
	p.stop(30 * time.Second)
}
