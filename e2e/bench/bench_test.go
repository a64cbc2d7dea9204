package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		busy, idle time.Duration
		wantErr    bool
	}{
		{"kernel line", "cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n", 1610 * time.Millisecond, 10200 * time.Millisecond, false},
		{"short", "cpu 1 2 3\n", 0, 0, true},
		{"not the cpu line", "intr 1 2 3 4 5 6 7 8 9\n", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			busy, idle, err := parseProcStat(tc.stat)
			if (err != nil) != tc.wantErr || busy != tc.busy || idle != tc.idle {
				t.Fatalf("parseProcStat = %v, %v, %v; want %v, %v, error %v", busy, idle, err, tc.busy, tc.idle, tc.wantErr)
			}
		})
	}
}

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want string
	}{
		{[]time.Duration{7 * time.Millisecond}, "7.0 ms"},
		{[]time.Duration{9 * time.Millisecond, 6300 * time.Microsecond, 7400 * time.Microsecond}, "7.4 ms (6.3–9.0)"},
		{[]time.Duration{2 * time.Millisecond, 4 * time.Millisecond}, "3.0 ms (2.0–4.0)"},
	} {
		if got := spread(tc.in); got != tc.want {
			t.Errorf("spread(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSeqOf(t *testing.T) {
	for _, tc := range []struct {
		payload string
		seq     int
		ok      bool
	}{
		{`{"pad": "xx", "seq": 42}`, 42, true},
		{`{"seq": -1}`, 0, false}, // the warm-up event
		{`{"n": 1}`, 0, false},
	} {
		if seq, ok := seqOf([]byte(tc.payload)); ok != tc.ok || ok && seq != tc.seq {
			t.Errorf("seqOf(%s) = %d, %v; want %d, %v", tc.payload, seq, ok, tc.seq, tc.ok)
		}
	}
}

func TestHistogramQuantile(t *testing.T) {
	const exposition = `# HELP cdc_relay_commit_to_ack_seconds Time from an event's commit.
# TYPE cdc_relay_commit_to_ack_seconds histogram
cdc_relay_commit_to_ack_seconds_bucket{le="0.001"} 0
cdc_relay_commit_to_ack_seconds_bucket{le="0.005"} 40
cdc_relay_commit_to_ack_seconds_bucket{le="0.01"} 90
cdc_relay_commit_to_ack_seconds_bucket{le="0.1"} 100
cdc_relay_commit_to_ack_seconds_bucket{le="+Inf"} 110
cdc_relay_commit_to_ack_seconds_sum 3.5
cdc_relay_commit_to_ack_seconds_count 110
cdc_relay_commit_to_ack_secondsx_bucket{le="0.001"} 7
`
	h, err := parseHistogram(strings.NewReader(exposition), commitToAckMetric)
	if err != nil {
		t.Fatal(err)
	}
	earlier := histogram{{0.001, 0}, {0.005, 0}, {0.01, 0}, {0.1, 0}, {math.Inf(1), 10}}
	for _, tc := range []struct {
		name string
		h    histogram
		q    float64
		want time.Duration
	}{
		{"within the second bucket", h, 0.2, 3200 * time.Microsecond}, // rank 22 of 40 in (1, 5] ms
		{"within the third bucket", h, 0.5, 6500 * time.Microsecond},  // rank 55: 15 of 50 in (5, 10] ms
		{"in +Inf: the largest finite bound", h, 0.99, 100 * time.Millisecond},
		{"after an earlier scrape", h.sub(earlier), 0.99, 91 * time.Millisecond}, // rank 99: 9 of 10 in (10, 100] ms
		{"no observations", h.sub(h), 0.5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.quantile(tc.q); got != tc.want {
				t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
	if _, err := parseHistogram(strings.NewReader("other_metric 1\n"), commitToAckMetric); err == nil {
		t.Error("parseHistogram found a histogram in an exposition without it")
	}
}

func TestVisibleDone(t *testing.T) {
	base := visible{bench: 100, sentinel: 2, settled: true}
	for _, tc := range []struct {
		name string
		v    visible
		want bool
	}{
		{"everything", visible{bench: 1100, sentinel: 3, settled: true}, true},
		{"with commit markers", visible{bench: 1130, sentinel: 4, settled: true}, true},
		{"sentinel not yet visible", visible{bench: 1100, sentinel: 2, settled: true}, false},
		{"events missing", visible{bench: 1099, sentinel: 3, settled: true}, false},
		{"a transaction still open", visible{bench: 1100, sentinel: 3, settled: false}, false},
	} {
		if got := tc.v.done(base, 1000); got != tc.want {
			t.Errorf("%s: done = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// recordBatch encodes one uncompressed record batch holding a record of
// each key.
func recordBatch(keys ...string) []byte {
	var recs []byte
	for i, k := range keys {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte(k), Value: []byte(`{"n": 1}`)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // everything after the 1-byte varint 0
		recs = r.AppendTo(recs)
	}
	batch := kmsg.RecordBatch{Magic: 2, NumRecords: int32(len(keys)), Records: recs}
	batch.Length = int32(len(batch.AppendTo(nil)) - 12) // after FirstOffset and Length
	return batch.AppendTo(nil)
}

func TestKeyRefusal(t *testing.T) {
	r := &keyRefusal{keys: map[string]bool{"key-0": true}}
	for _, tc := range []struct {
		name    string
		batches []byte
		want    bool
	}{
		{"a refused key first", recordBatch("key-0", "key-1"), true},
		{"a refused key last", recordBatch("key-1", "key-2", "key-0"), true},
		{"no refused key", recordBatch("key-1", "key-10", "key-00"), false},
		{"in the second batch", append(recordBatch("key-1"), recordBatch("key-2", "key-0")...), true},
		{"truncated", recordBatch("key-1", "key-0")[:40], false},
		{"empty", nil, false},
	} {
		if got := r.batchRefused(tc.batches); got != tc.want {
			t.Errorf("%s: batchRefused = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{8192, "8.0 KiB"},
		{-8192, "-8.0 KiB"},
		{129392640, "123.4 MiB"},
		{3 << 30, "3.0 GiB"},
	} {
		if got := size(tc.n); got != tc.want {
			t.Errorf("size(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestWALColumns(t *testing.T) {
	got := walColumns([]map[string]float64{
		{"Heap": 400, "Btree": 120, "Transaction": 34, "XLOG": 0.2},
		{"LogicalMessage": 480, "Transaction": 34, "Standby": 0.9},
	})
	want := []string{"LogicalMessage", "Heap", "Btree", "Transaction"}
	if !slices.Equal(got, want) {
		t.Fatalf("walColumns = %v, want %v", got, want)
	}
}

func TestSpreadOf(t *testing.T) {
	run := func(events int) emitResult { return emitResult{load: emitLoad{events: events, elapsed: time.Second}} }
	perSecond := func(r emitResult) float64 { return rate(r.load.events, r.load.elapsed) }
	for _, tc := range []struct {
		runs []emitResult
		want string
	}{
		{[]emitResult{run(11832)}, "11832"},
		{[]emitResult{run(12040), run(11673), run(11832)}, "11832 (11673–12040)"},
	} {
		if got := spreadOf(tc.runs, perSecond); got != tc.want {
			t.Errorf("spreadOf = %q, want %q", got, tc.want)
		}
	}
}

// TestPartRunsAreTheNamedParts: -only's list and the parts that run are
// one list, in one order.
func TestPartRunsAreTheNamedParts(t *testing.T) {
	var names []string
	for _, p := range (&bench{}).partRuns(nil) {
		names = append(names, p.name)
	}
	if !slices.Equal(names, parts) {
		t.Fatalf("the parts that run are %v; -only names %v", names, parts)
	}
}
