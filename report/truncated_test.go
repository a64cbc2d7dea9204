package report

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestWarnTruncated: held rows gone with a new file of the status table
// (a TRUNCATE) are warned of with how many and the recover command from
// the oldest one's time less the margin; rows gone with the same file (a
// DELETE, such as `failed purge`) or a new file with every row (VACUUM
// FULL) are not, nor those the statistics count deleted or updated before
// a rewrite (a purge, then VACUUM FULL).
func TestWarnTruncated(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	before := DatabaseStats{At: at, StatusFile: 100, Paused: 3, Dead: 2,
		Topics: []TopicHeld{{Topic: "a", Paused: 3, OldestHeldSeconds: 60}, {Topic: "b", Dead: 2, OldestHeldSeconds: 3600}}}
	for _, tc := range []struct {
		name string
		now  DatabaseStats
		want string
	}{
		{"truncated", DatabaseStats{At: at.Add(5 * time.Second), StatusFile: 101}, "lost_at_least=5"},
		{"deleted", DatabaseStats{At: at.Add(5 * time.Second), StatusFile: 100}, ""},
		{"rewritten", DatabaseStats{At: at.Add(5 * time.Second), StatusFile: 101, Paused: 3, Dead: 2}, ""},
		// failed purge, then VACUUM FULL, in one reading: the rows gone
		// are counted deleted, which a TRUNCATE does not count.
		{"purged then rewritten", DatabaseStats{At: at.Add(5 * time.Second), StatusFile: 101, StatusChurn: 5}, ""},
		{"one purged, then truncated", DatabaseStats{At: at.Add(5 * time.Second), StatusFile: 101, StatusChurn: 1}, "lost_at_least=4"},
		{"truncated, statistics reset", DatabaseStats{At: at.Add(5 * time.Second), StatusFile: 101, StatusChurn: 0}, "lost_at_least=5"},
		{"first reading", DatabaseStats{StatusFile: 101}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			b := before
			switch tc.name {
			case "first reading":
				b = DatabaseStats{}
			case "truncated, statistics reset":
				b.StatusChurn = 40
			}
			WarnTruncated(slog.New(slog.NewTextHandler(&buf, nil)), Names{StatusSchema: "public", StatusTable: "outbox_delivery"}, 10*time.Minute, b, tc.now)
			switch {
			case tc.want == "" && buf.Len() > 0:
				t.Fatalf("warned: %s", buf.String())
			case tc.want != "" && (!strings.Contains(buf.String(), tc.want) || !strings.Contains(buf.String(), "`cdc-relay recover --since 2026-11-28T10:50:00Z`")):
				t.Fatalf("warning %q; want %q and recover --since the oldest's time less 10m", buf.String(), tc.want)
			}
		})
	}
}
