package checkpoint

import (
	"testing"
	"time"
)

// TestGateConfirmsNoMoreThanEveryBound: the stream is told at most the
// lowest of the tracker's safe position and each bound (the position saved
// in the checkpoint row, the table watch's), so PostgreSQL never hears of a
// position the checkpoint row does not hold yet. The checkpoint row gets
// that position with a commit time no later than the tracker's, nor than
// the time of a bound that lowered it: a lowered position is before
// transactions that may have committed before the tracker's time.
func TestGateConfirmsNoMoreThanEveryBound(t *testing.T) {
	c1 := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	c2, c3 := c1.Add(time.Minute), c1.Add(2*time.Minute)
	tracker := NewTracker(0x100, Limits{})
	tracker.Commit(tracker.Begin(c2), 0x300)
	for _, tt := range []struct {
		name   string
		bounds []Position
		want   Position
	}{
		{"no bound", nil, Position{LSN: 0x300, CommitTime: c2}},
		{"lowered, the bound's time earlier", []Position{{LSN: 0x200, CommitTime: c1}}, Position{LSN: 0x200, CommitTime: c1}},
		{"lowered, the tracker's time earlier", []Position{{LSN: 0x200, CommitTime: c3}}, Position{LSN: 0x200, CommitTime: c2}},
		{"the lowest bound", []Position{{LSN: 0x400, CommitTime: c1}, {LSN: 0x250, CommitTime: c3}}, Position{LSN: 0x250, CommitTime: c2}},
		{"a bound ahead", []Position{{LSN: 0x500, CommitTime: c1}}, Position{LSN: 0x300, CommitTime: c2}},
		{"lowered to a bound without a time", []Position{{LSN: 0x200}}, Position{LSN: 0x200}},
	} {
		g := Gate{Tracker: tracker}
		for _, b := range tt.bounds {
			g.Bounds = append(g.Bounds, func() Position { return b })
		}
		if got := g.Safe(); got != tt.want.LSN {
			t.Errorf("%s: Safe %s, want %s", tt.name, got, tt.want.LSN)
		}
		if got := g.SafePosition(); got.LSN != tt.want.LSN || !got.CommitTime.Equal(tt.want.CommitTime) {
			t.Errorf("%s: SafePosition %s committed %v, want %s committed %v", tt.name, got.LSN, got.CommitTime, tt.want.LSN, tt.want.CommitTime)
		}
	}
}
