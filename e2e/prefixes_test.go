package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestDistinctPrefixesBoundedMemory: any role may call
// pg_logical_emit_message, and a role with no grant writes 100,000
// transactional messages of distinct prefixes no source maps. The relay
// counts every one, by the first 64 prefixes and one "other": its peak
// RSS (the release build) grows by at most 64 MiB, /metrics by at most
// 1 MiB, and its warnings stay few.
func TestDistinctPrefixesBoundedMemory(t *testing.T) {
	// Alone: it asserts peak memory.
	const (
		prefixes   = 100_000
		batch      = 10_000
		maxGrowth  = 64 << 20
		maxMetrics = 1 << 20
		maxSeries  = 64 + 1
	)
	e := newMessageEnv(t)
	role := e.slot + "_nobody" // roles are the cluster's, shared by the tests
	mustExec(t, e.conn, "CREATE ROLE "+role+" LOGIN")
	// The release build: the race detector's shadow memory would dwarf
	// the relay's.
	relay := e.startRelayBin(plainBin, messageArgs...)
	before, _ := relay.scrape()
	rssBefore := relay.peakRSS()

	nobody := mustConnect(t, strings.Replace(e.url, "postgres@", role+"@", 1))
	defer nobody.Close(context.Background())
	for from := 1; from <= prefixes; from += batch {
		mustExec(t, nobody, "SELECT count(pg_logical_emit_message(true, 'p' || g, 'x')) FROM generate_series($1::int, $2::int) g", from, from+batch-1)
	}
	end := e.lsn(insertLSN)

	var after string
	ignored, series := 0.0, 0
	e.waitFor("the relay counted every message", 2*time.Minute, func() bool {
		if !relay.Running() {
			t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
		}
		body, families := relay.scrape()
		after, ignored, series = body, 0, 0
		if f, ok := families["cdc_relay_messages_ignored_total"]; ok {
			for _, m := range f.Metric {
				ignored += m.GetCounter().GetValue()
				series++
			}
		}
		return ignored >= prefixes
	})
	e.waitFor("the slot confirms past the messages", time.Minute, func() bool { return e.lsn(slotLSN) >= end })
	rssAfter := relay.peakRSS()
	t.Logf("peak RSS %.1f MiB before, %.1f MiB after %d prefixes; /metrics %d bytes before, %d after; %d series",
		float64(rssBefore)/(1<<20), float64(rssAfter)/(1<<20), prefixes, len(before), len(after), series)
	if ignored != prefixes || series != maxSeries {
		t.Errorf("%v messages counted in %d series, want %d in %d", ignored, series, prefixes, maxSeries)
	}
	if rssAfter-rssBefore > maxGrowth {
		t.Errorf("peak RSS grew by %d MiB, want at most %d MiB", (rssAfter-rssBefore)>>20, maxGrowth>>20)
	}
	if len(after)-len(before) > maxMetrics {
		t.Errorf("/metrics grew by %d bytes, want at most %d", len(after)-len(before), maxMetrics)
	}
	if n := strings.Count(relay.Log(), "no messages: entry maps"); n > maxSeries+1 {
		t.Errorf("%d warnings of unmapped prefixes, want at most %d", n, maxSeries+1)
	}
	relay.stop(30 * time.Second)
}
