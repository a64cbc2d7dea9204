package main

import (
	"testing"
	"time"
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
