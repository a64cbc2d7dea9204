package recovery

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
	"github.com/cdc-relay/cdc-relay/slot"
)

// TestRepairedGapWarnsOfLostMessages: once a gap is repaired, a relay with
// message sources warns that the messages committed in the gap are lost,
// naming the gap; without messages it says nothing more.
func TestRepairedGapWarnsOfLostMessages(t *testing.T) {
	saved := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		messages []decoder.MessageMapping
		gap      slot.GapError
		resume   pglogrepl.LSN
		want     []string
	}{
		{"slot ahead", []decoder.MessageMapping{{Prefix: "outbox"}}, slot.GapError{Checkpoint: checkpoint.Checkpoint{LSN: 0x100, CommitTime: saved}, SlotLSN: 0x900}, 0x900,
			[]string{"level=WARN", "are lost", "message:outbox", "gap_from=0/100", "gap_to=0/900", "committed_since=2026-01-02T03:04:05"}},
		{"slot dropped", []decoder.MessageMapping{{Prefix: "outbox"}}, slot.GapError{Checkpoint: checkpoint.Checkpoint{LSN: 0x100, UpdatedAt: saved}, Dropped: true}, 0xA00,
			[]string{"gap_from=0/100", "gap_to=0/A00", "the time the checkpoint was saved"}},
		{"no messages", nil, slot.GapError{Checkpoint: checkpoint.Checkpoint{LSN: 0x100}, SlotLSN: 0x900}, 0x900, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logBuffer{}
			WarnMessagesLost(slog.New(slog.NewTextHandler(logs, nil)), Result{Gap: tc.gap, Resume: tc.resume}, tc.messages)
			if tc.want == nil && logs.String() != "" {
				t.Errorf("logged without messages:\n%s", logs)
			}
			for _, w := range tc.want {
				if logs.count(w) != 1 {
					t.Errorf("no %q once in:\n%s", w, logs)
				}
			}
		})
	}
}

// logBuffer collects log lines for assertions.
type logBuffer struct{ syncbuf.Buffer }

// count counts the occurrences of s.
func (l *logBuffer) count(s string) int { return strings.Count(l.String(), s) }
