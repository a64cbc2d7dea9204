package relay

import (
	"testing"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
)

// TestGateConfirmsNoMoreThanEveryBound: the stream is told at most the
// lowest of the tracker's safe position and each bound (the position saved
// in the checkpoint row, the table watch's), so PostgreSQL never hears of a
// position the checkpoint row does not hold yet.
func TestGateConfirmsNoMoreThanEveryBound(t *testing.T) {
	tracker := checkpoint.NewTracker(0x300, checkpoint.Limits{})
	for _, tt := range []struct {
		bounds []pglogrepl.LSN
		want   pglogrepl.LSN
	}{
		{nil, 0x300},
		{[]pglogrepl.LSN{0x200}, 0x200},
		{[]pglogrepl.LSN{0x400, 0x250}, 0x250},
		{[]pglogrepl.LSN{0x500}, 0x300},
	} {
		g := gate{Tracker: tracker}
		for _, b := range tt.bounds {
			g.bounds = append(g.bounds, func() pglogrepl.LSN { return b })
		}
		if got := g.Safe(); got != tt.want {
			t.Errorf("bounds %v: Safe %s, want %s", tt.bounds, got, tt.want)
		}
	}
}
