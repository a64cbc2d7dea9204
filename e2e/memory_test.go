package e2e

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
)

// TestUnmappedColumnBoundedMemory: rows with a 1 MiB column the mapping does
// not use, read while the broker is down, so that nothing is acknowledged.
// The relay holds only the mapped columns of each event, so its memory stays
// far below the rows' size; the events are delivered once the broker is back.
func TestUnmappedColumnBoundedMemory(t *testing.T) {
	// Alone: it asserts peak memory.
	const (
		rows     = 200
		blobSize = 1 << 20
		limit    = 8 << 20 // --max-in-flight-bytes
		bound    = 64 << 20
	)
	e := newEnv(t)
	mustExec(t, e.conn, "ALTER TABLE outbox ADD COLUMN blob text")
	// The release build: the race detector's shadow memory would dwarf
	// the relay's. Debug logging says which keepalives the relay has read.
	relay := e.startRelayBin(plainBin, "--max-in-flight-bytes", strconv.Itoa(limit), "--log-level", "debug")
	e.stopBroker()
	for i := 0; i < rows; i++ {
		mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, blob)
			VALUES ('order', 'k', 'WithBlob', json_build_object('n', $1::int)::jsonb, repeat('x', $2))`, i, blobSize)
	}
	end := e.lsn(insertLSN)
	e.waitFor("the relay reads past the last row", 2*time.Minute, func() bool {
		if !relay.Running() {
			t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
		}
		return readPast(relay.Log(), end)
	})
	rss := relay.peakRSS()
	t.Logf("relay peak RSS %.1f MiB with %d rows of %d MiB unacknowledged (--max-in-flight-bytes %d MiB)",
		float64(rss)/(1<<20), rows, blobSize>>20, limit>>20)
	if rss >= bound {
		t.Fatalf("relay peak RSS %d MiB, want under %d MiB: events hold their unmapped columns", rss>>20, bound>>20)
	}
	if e.lsn(slotLSN) >= end {
		t.Fatal("the slot confirmed the rows while the broker was down")
	}

	e.startBroker()
	recs := e.readN(e.topic("order"), rows, 2*time.Minute)
	checkOnce(t, recs, rows)
	for _, r := range recs {
		if len(r.Value) > 100 {
			t.Fatalf("record value of %d bytes: holds more than the payload", len(r.Value))
		}
	}
	e.waitFor("the slot confirms past the last row", time.Minute, func() bool { return e.lsn(slotLSN) >= end })
	relay.stop(30 * time.Second)
}

// keepaliveLine matches the relay's debug log line for a keepalive read
// between transactions.
var keepaliveLine = regexp.MustCompile(`msg=keepalive wal_end=([0-9A-F]+/[0-9A-F]+) reply=\w+ in_tx=false`)

// readPast reports whether the relay's log shows a keepalive read between
// transactions at or past end: keepalives come in stream order, so the
// relay has read every transaction that ends before it.
func readPast(log string, end pglogrepl.LSN) bool {
	for _, m := range keepaliveLine.FindAllStringSubmatch(log, -1) {
		if lsn, err := pglogrepl.ParseLSN(m[1]); err == nil && lsn >= end {
			return true
		}
	}
	return false
}

// TestPollerClaimBoundedMemory: 200 events of 900 KiB wait PAUSED in the
// status table; once their topic is resumed, the poller delivers them
// all, each once, in claims whose records fit in half of
// --max-in-flight-bytes, so that the relay's peak RSS stays near what it
// was while they were parked (before, one claim held them all: 180 MiB).
func TestPollerClaimBoundedMemory(t *testing.T) {
	// Alone: it asserts peak memory.
	const (
		rows  = 200
		size  = 900 << 10
		limit = 8 << 20 // --max-in-flight-bytes
		bound = 112 << 20
	)
	e := newEnv(t)
	topic := e.topic("order")
	e.createTopic1(topic)
	e.pauseCmd("pause", topic)
	// The release build: the race detector's shadow memory would dwarf
	// the relay's.
	relay := e.startRelayBin(plainBin, "--max-in-flight-bytes", strconv.Itoa(limit))
	for i := range rows {
		mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			VALUES ('order', 'k' || ($1::int % 10), 'Big', json_build_object('n', $1::int, 'pad', repeat('x', $2))::jsonb)`, i, size)
	}
	e.waitFor("every event is parked PAUSED", 2*time.Minute, func() bool { return e.statusCount("PAUSED") == rows })
	parked := relay.peakRSS()
	e.pauseCmd("resume", topic)
	checkOnce(t, e.readN(topic, rows, 2*time.Minute), rows)
	e.waitFor("no event is held", time.Minute, func() bool { return e.statusCount("DELIVERED") == rows })
	rss := relay.peakRSS()
	t.Logf("relay peak RSS %.1f MiB while %d events of %d KiB were parked, %.1f MiB once the poller delivered them (--max-in-flight-bytes %d MiB)",
		float64(parked)/(1<<20), rows, size>>10, float64(rss)/(1<<20), limit>>20)
	if rss >= bound {
		t.Fatalf("relay peak RSS %d MiB, want under %d MiB: a claim holds more than half of --max-in-flight-bytes", rss>>20, bound>>20)
	}
	relay.stop(30 * time.Second)
}
