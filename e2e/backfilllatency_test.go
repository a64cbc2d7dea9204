package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/backfill"
)

// latencies are the live records' commit-to-arrival times, each by the
// time its row was written, as a consumer sees them.
type latencies struct {
	mu      sync.Mutex
	at, lat []time.Duration // at: since the Unix epoch
}

// watchLatencies consumes topic from its start until the returned stop is
// called, noting for each record the time its row was written (the
// payload's at) and how long after that it arrived.
func (e *env) watchLatencies(topic string) (*latencies, func()) {
	l := &latencies{}
	cl := e.fromStart(topic)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			f := cl.PollFetches(ctx)
			now := time.Now()
			f.EachRecord(func(r *kgo.Record) {
				var v struct{ At int64 }
				if json.Unmarshal(r.Value, &v) == nil && v.At > 0 {
					l.mu.Lock()
					l.at, l.lat = append(l.at, time.Duration(v.At)), append(l.lat, now.Sub(time.Unix(0, v.At)))
					l.mu.Unlock()
				}
			})
		}
	}()
	return l, func() { cancel(); <-done; cl.Close() }
}

// p99 is the 99th percentile of the latencies of the rows written from
// from to to, and how many there were.
func (l *latencies) p99(from, to time.Time) (time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var in []time.Duration
	for i, at := range l.at {
		if t := time.Unix(0, int64(at)); !t.Before(from) && !t.After(to) {
			in = append(in, l.lat[i])
		}
	}
	if len(in) == 0 {
		return 0, 0
	}
	slices.Sort(in)
	return in[(len(in)*99-1)/100], len(in)
}

// backfillWindow is how long the backfill must run beside the live
// writes: the measured window.
const backfillWindow = 12 * time.Second

// backfillRate is the backfill's --rate: the default, or
// CDC_RELAY_TEST_BACKFILL_RATE (0 for the negative control: an unlimited
// backfill, which must fail the test).
func backfillRate(t *testing.T) float64 {
	s := harnessEnv["CDC_RELAY_TEST_BACKFILL_RATE"]
	if s == "" {
		return backfill.DefaultRate
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("CDC_RELAY_TEST_BACKFILL_RATE=%q: %v", s, err)
	}
	return r
}

// TestBackfillKeepsTheStreamLatency: an application writes a few hundred
// events a second through the relay, for 10 s alone, then while a backfill
// at its default rate (2,000 rows a second) runs for at least 12 s (its
// rows sized for that, and asserted): the p99 of the live events'
// latency, from the row's insert to the record's arrival at a consumer,
// for the events written while the backfill ran, stays within twice its
// value without. CDC_RELAY_TEST_BACKFILL_RATE=0 is the negative control:
// an unlimited backfill of 400,000 rows, which fails it. Every backfilled
// row arrives.
//
// It is the bound the issue asks, not a margin chosen to pass, and on a
// shared 2-core machine (kfake, the relay, the backfill and PostgreSQL on
// the same cores) its margin is thin: five runs at the default rate gave
// 0.9x to 1.8x (10-35 ms alone, 12-32 ms beside), the negative control
// 3.6x (9.2 ms alone, 33.2 ms beside). Under the load of other test runs
// it may fail by noise; rerun it alone before taking a failure for a
// regression.
func TestBackfillKeepsTheStreamLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("a 25 s measurement")
	}
	e := newEnv(t)
	rate := backfillRate(t)
	rows := int(rate * backfillWindow.Seconds())
	if rate == 0 {
		rows = 400000
	}
	topic := e.seedBackfillRows(rows)
	lat, stopWatch := e.watchLatencies(e.topic("live"))
	defer stopWatch()

	stopApp := e.appWrites("live")
	start := time.Now()
	time.Sleep(10 * time.Second) // the live stream alone: a measured window, not a wait for a condition
	quiet, quietN := lat.p99(start.Add(time.Second), time.Now())
	bfStart, out := time.Now(), e.runBackfill(rate)
	bfEnd := time.Now()
	live := stopApp()
	e.waitFor("every live event arrived", 60*time.Second, func() bool { _, n := lat.p99(start, time.Now()); return n >= live })
	busy, busyN := lat.p99(bfStart.Add(time.Second), bfEnd)

	t.Logf("live p99: %s of %d events alone, %s of %d beside the backfill (%d rows at %v/s in %s: %s)",
		quiet, quietN, busy, busyN, rows, rate, bfEnd.Sub(bfStart).Round(time.Millisecond), strings.TrimSpace(out))
	if took := bfEnd.Sub(bfStart); took < backfillWindow-time.Second {
		t.Errorf("the backfill ran %s, not the measured window of %s", took, backfillWindow)
	}
	if quietN < 1000 || busyN < 1000 {
		t.Fatalf("too few live events to measure: %d and %d", quietN, busyN)
	}
	if busy > 2*quiet {
		t.Errorf("the live p99 beside the backfill is %s, over twice its %s alone", busy, quiet)
	}
	e.checkBackfilled(topic, rows)
}

// seedBackfillRows writes rows rows for the backfill, and waits until the
// relay streamed them; it returns their topic.
func (e *env) seedBackfillRows(rows int) string {
	e.t.Helper()
	mustExec(e.t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT 'order', 'k' || (i % 100), 'Placed', jsonb_build_object('i', i) FROM generate_series(1, $1::int) i`, rows)
	e.startRelay()
	topic := e.topic("order")
	e.readN(topic, rows, 5*time.Minute) // the stream's copies, before the measurement
	return topic
}

// runBackfill runs a backfill of the seeded rows at rate, and returns
// what it printed.
func (e *env) runBackfill(rate float64) string {
	e.t.Helper()
	out, err := exec.Command(relayBin, e.backfillArgs("--where", "aggregate_type = 'order'", "--rate", strconv.FormatFloat(rate, 'f', -1, 64))...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("backfill: %v\n%s", err, out)
	}
	return string(out)
}

// checkBackfilled checks that every one of rows rows arrived on topic
// with the backfill's header.
func (e *env) checkBackfilled(topic string, rows int) {
	e.t.Helper()
	backfilled := 0
	for _, r := range e.readN(topic, 2*rows, 5*time.Minute) {
		if header(r, "cdc-relay-backfill") != "" {
			backfilled++
		}
	}
	if backfilled != rows {
		e.t.Errorf("%d records with the backfill header, want %d", backfilled, rows)
	}
}
