package e2e

import (
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// commitToAck is the relay's commit-to-ack histogram as one scrape has
// it: cumulative counts by upper bound, +Inf last.
type commitToAck []*dto.Bucket

// commitToAckNow scrapes the relay's commit-to-ack histogram.
func (p *relayProc) commitToAckNow() commitToAck {
	p.t.Helper()
	_, families := p.scrape()
	f, ok := families["cdc_relay_commit_to_ack_seconds"]
	if !ok || len(f.Metric) != 1 {
		p.t.Fatalf("no cdc_relay_commit_to_ack_seconds histogram")
	}
	h := f.Metric[0].GetHistogram()
	return append(commitToAck(h.GetBucket()), &dto.Bucket{UpperBound: ptr(math.Inf(1)), CumulativeCount: ptr(h.GetSampleCount())})
}

func ptr[T any](v T) *T { return &v }

// p99Since is the 99th percentile of the observations made since earlier,
// estimated as Prometheus's histogram_quantile does (linearly within its
// bucket), and how many there were.
func (h commitToAck) p99Since(earlier commitToAck) (time.Duration, uint64) {
	count := func(i int) float64 { return float64(h[i].GetCumulativeCount() - earlier[i].GetCumulativeCount()) }
	total := count(len(h) - 1)
	rank := 0.99 * total
	lower, below := 0.0, 0.0
	for i, b := range h {
		c := count(i)
		if c >= rank && total > 0 {
			le := b.GetUpperBound()
			if math.IsInf(le, 1) {
				le = lower
			} else if c > below {
				le = lower + (le-lower)*(rank-below)/(c-below)
			}
			return time.Duration(le * float64(time.Second)), uint64(total)
		}
		lower, below = b.GetUpperBound(), c
	}
	return time.Duration(lower * float64(time.Second)), uint64(total)
}

// TestBackfillKeepsTheStreamLatency: an application writes a few hundred
// events a second through the relay for 10 s, then as long again while a
// backfill of 20,000 rows runs at its default rate (2,000 rows a second):
// the stream's commit-to-ack p99 with the backfill stays within twice its
// value without (or within 100 ms: below that, a shared machine's noise
// and the histogram's buckets decide). Every backfilled row arrives.
func TestBackfillKeepsTheStreamLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("a 25 s measurement")
	}
	e := newEnv(t)
	const rows = 20000
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT 'order', 'k' || (i % 100), 'Placed', jsonb_build_object('i', i) FROM generate_series(1, $1::int) i`, rows)
	relay := e.startRelay()
	topic := e.topic("order")
	e.readN(topic, rows, 60*time.Second) // the stream's copies, before the measurement

	measure := func(during func()) (time.Duration, uint64) {
		before := relay.commitToAckNow()
		stopApp := e.appWrites("live")
		during()
		stopApp()
		e.waitFor("the live events are acknowledged", 30*time.Second, func() bool { return relay.status().InFlightEvents == 0 })
		return relay.commitToAckNow().p99Since(before)
	}
	quiet, quietN := measure(func() { time.Sleep(10 * time.Second) })
	var out []byte
	var took time.Duration
	busy, busyN := measure(func() {
		start := time.Now()
		var err error
		if out, err = exec.Command(relayBin, e.backfillArgs("--where", "aggregate_type = 'order'")...).CombinedOutput(); err != nil {
			t.Fatalf("backfill: %v\n%s", err, out)
		}
		took = time.Since(start)
	})
	t.Logf("the stream's p99: %s of %d events alone, %s of %d beside the backfill (%s for %d rows: %s)",
		quiet, quietN, busy, busyN, took.Round(time.Millisecond), rows, strings.TrimSpace(string(out)))
	if quietN < 500 || busyN < 500 {
		t.Fatalf("too few live events to measure: %d and %d", quietN, busyN)
	}
	if limit := 2 * max(quiet, 50*time.Millisecond); busy > limit {
		t.Errorf("the stream's p99 beside the backfill is %s, over %s (twice its %s alone, at least 100 ms)", busy, limit, quiet)
	}
	backfilled := 0
	for _, r := range e.readN(topic, 2*rows, 60*time.Second) {
		if header(r, "cdc-relay-backfill") != "" {
			backfilled++
		}
	}
	if backfilled != rows {
		t.Errorf("%d records with the backfill header, want %d", backfilled, rows)
	}
}
