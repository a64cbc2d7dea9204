package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestBatchSizeAndCompression: with --kafka-batch-max-bytes 100000 and
// --kafka-compression zstd, a 90 kB event is delivered in a zstd batch (the
// batch's compression attribute, as a consumer reads it), and a 150 kB one is parked FAILED with MESSAGE_TOO_LARGE
// although it would compress far below the limit: the batch size counts
// records before compression. Events of other keys flow past it.
func TestBatchSizeAndCompression(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.startRelay("--kafka-batch-max-bytes", "100000", "--kafka-compression", "zstd")
	insert(t, e.conn, "order", "a", "Small", `{"n": "first"}`)
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('order', 'b', 'Big', json_build_object('pad', repeat('x', 150000))::jsonb)`)
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('order', 'c', 'Fits', json_build_object('pad', repeat('y', 90000))::jsonb)`)
	insert(t, e.conn, "order", "d", "Small", `{"n": "last"}`)

	recs := e.readN(e.topic("order"), 3, 30*time.Second)
	seen := map[string]bool{}
	for _, r := range recs {
		seen[header(r, "event_type")+"/"+string(r.Key)] = true
		// A small record's batch may go uncompressed: the producer sends a
		// batch as it is when compressing does not make it smaller.
		if c := r.Attrs.CompressionType(); string(r.Key) == "c" && c != 4 {
			t.Errorf("the 90 kB event's batch: compression %d, want 4 (zstd)", c)
		}
	}
	for _, want := range []string{"Small/a", "Fits/c", "Small/d"} {
		if !seen[want] {
			t.Errorf("no record %s among %v", want, seen)
		}
	}
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the large event", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	var status, reason string
	if err := e.conn.QueryRow(context.Background(), `SELECT status, last_error FROM outbox_delivery`).Scan(&status, &reason); err != nil {
		t.Fatalf("the status table does not hold exactly the large event: %v", err)
	}
	if status != "FAILED" || !strings.Contains(reason, "MESSAGE_TOO_LARGE") {
		t.Errorf("the large event is %s (%q), want FAILED with MESSAGE_TOO_LARGE", status, reason)
	}
}
