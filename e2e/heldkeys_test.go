package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestHeldKeysPastTheWholeOnes: a topic paused while 67,000 events of as
// many keys arrive holds more keys than the relay keeps whole (65,536):
// it holds the others by their hash. Resumed while a second event of
// each of the last 4,000 keys arrives (those held by their hash, and
// whole ones before them), each key's events arrive once each and in
// commit order, and nothing is left held. Its subject is the relay's
// memory of held keys, not the broker: it runs on kfake only.
func TestHeldKeysPastTheWholeOnes(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.relaySideOnly()
	a := e.topic("a")
	e.createTopic1(a)
	p := e.startRelay(orderRelayArgs()...)
	e.pauseCmd("pause", a)
	e.waitFor("/status lists "+a+" as paused", 10*time.Second, func() bool { return p.pausedOnStatus(a) })

	const (
		keys   = 67_000
		second = 4_000 // the last keys get a second event: those held by their hash, and whole ones
	)
	insert := func(seq0, from, to int) {
		for ; from <= to; from += 10_000 {
			mustExec(t, e.conn, "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)"+
				" SELECT 'a', 'k' || i, 'Loaded', jsonb_build_object('seq', $1::int + i) FROM generate_series($2::int, $3::int) AS i",
				seq0, from, min(from+9_999, to))
		}
	}
	began := time.Now()
	insert(0, 1, keys)
	t.Logf("%d events written in %s", keys, time.Since(began).Round(time.Millisecond))
	e.waitFor("the paused topic's events parked", 120*time.Second, func() bool { return e.statusCount("PAUSED") == keys })
	t.Logf("parked %s after the first was written", time.Since(began).Round(time.Millisecond))
	e.waitFor("the relay to say it holds the keys past the first ones by their hash", 10*time.Second, func() bool {
		return strings.Contains(p.Log(), "by their hash only")
	})
	e.pauseCmd("resume", a)
	insert(keys, keys-second+1, keys) // while the poller delivers the parked ones

	resumed := time.Now()
	recs := e.readN(a, keys+second, 180*time.Second)
	t.Logf("%d records read %s after the resume", len(recs), time.Since(resumed).Round(time.Millisecond))
	first := map[string]int{} // key → offset of its first event
	seen := map[int]bool{}
	var wrong []string
	slices.SortFunc(recs, func(a, b *kgo.Record) int { return int(a.Offset - b.Offset) }) // one partition
	for _, r := range recs {
		var v struct{ Seq int }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("record at offset %d: %v", r.Offset, err)
		}
		if seen[v.Seq] {
			wrong = append(wrong, fmt.Sprintf("event %d twice (offset %d)", v.Seq, r.Offset))
		}
		seen[v.Seq] = true
		k := string(r.Key)
		switch _, ok := first[k]; {
		case v.Seq <= keys:
			first[k] = int(r.Offset)
		case !ok:
			wrong = append(wrong, fmt.Sprintf("key %s's second event at offset %d before its first", k, r.Offset))
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("%d of %d records out of order or twice; the first: %s", len(wrong), len(recs), strings.Join(wrong[:min(5, len(wrong))], "; "))
	}
	e.waitFor("no event held", 60*time.Second, func() bool {
		return e.statusCount("FAILED")+e.statusCount("WAITING")+e.statusCount("PAUSED") == 0
	})
	checkOrderMetrics(p, nil)
	p.stop(30 * time.Second)
}
