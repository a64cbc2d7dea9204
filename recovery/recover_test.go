package recovery

import (
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/checkpoint"
)

// TestRecoverSince: recover starts from --since when given, else from the
// commit time saved with the checkpoint's position less the margin, and
// from the time the row was saved only when it has no commit time.
func TestRecoverSince(t *testing.T) {
	commit := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	saved := commit.Add(time.Hour) // a relay an hour behind saved it
	since := commit.Add(-time.Hour)
	for _, tc := range []struct {
		name     string
		cp       checkpoint.Checkpoint
		opts     Options
		want     time.Time
		wantFrom string
	}{
		{"the commit time", checkpoint.Checkpoint{UpdatedAt: saved, CommitTime: commit}, Options{Margin: time.Minute},
			commit.Add(-time.Minute), "commit time"},
		{"no commit time", checkpoint.Checkpoint{UpdatedAt: saved}, Options{Margin: time.Minute},
			saved.Add(-time.Minute), "the time the checkpoint was saved"},
		{"--since", checkpoint.Checkpoint{UpdatedAt: saved, CommitTime: commit}, Options{Margin: time.Minute, Since: since},
			since, "--since"},
	} {
		got, from := recoverSince(tc.cp, tc.opts)
		if !got.Equal(tc.want) || !strings.Contains(from, tc.wantFrom) {
			t.Errorf("%s: since %s (%s), want %s (%s)", tc.name, got, from, tc.want, tc.wantFrom)
		}
	}
}
