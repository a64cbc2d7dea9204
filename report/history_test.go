package report

import (
	"testing"
	"time"
)

// TestHistoryKeepsTheLastReadings: the ring holds at most its size,
// oldest first, and the points are the rates and mean ack times between
// readings.
func TestHistoryKeepsTheLastReadings(t *testing.T) {
	h := NewHistory(3)
	if got := h.Samples(); len(got) != 0 {
		t.Fatalf("a new history holds %v", got)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		h.Add(Sample{At: start.Add(time.Duration(i) * 10 * time.Second), Produced: uint64(i * 100), AckSeconds: float64(i), Acked: uint64(i * 10)})
	}
	got := h.Samples()
	if len(got) != 3 || got[0].Produced != 200 || got[2].Produced != 400 {
		t.Fatalf("samples %+v, want the last 3 (200, 300, 400)", got)
	}
	points := Points(got)
	if len(points) != 2 {
		t.Fatalf("points %+v, want 2", points)
	}
	for _, p := range points {
		if p.Rate != 10 || p.Acked != 10 || p.MeanAckSeconds != 0.1 || p.Seconds != 10 {
			t.Errorf("point %+v: want 10 events/s, 10 acked, 0.1 s each", p)
		}
	}
	// An interval with nothing acked has no mean.
	if p := Points([]Sample{{At: start}, {At: start.Add(time.Second)}}); len(p) != 1 || p[0].Acked != 0 || p[0].Rate != 0 {
		t.Errorf("an idle interval: %+v", p)
	}
}
