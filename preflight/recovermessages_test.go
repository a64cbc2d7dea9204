package preflight

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// TestSlotLossRecoverWarnsOfMessages: with message sources, --on-slot-loss
// recover is warned about once at start (it cannot publish messages
// again); without messages, or without recover, nothing is said.
func TestSlotLossRecoverWarnsOfMessages(t *testing.T) {
	for _, tc := range []struct {
		name     string
		messages []decoder.MessageMapping
		recover  bool
		warned   bool
	}{
		{"messages and recover", []decoder.MessageMapping{{Prefix: "outbox"}}, true, true},
		{"messages, refuse", []decoder.MessageMapping{{Prefix: "outbox"}}, false, false},
		{"no messages, recover", nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logBuffer{}
			WarnMessagesNotRecovered(slog.New(slog.NewTextHandler(logs, nil)), tc.recover, tc.messages)
			if got := logs.count("level=WARN") == 1 && logs.count("message:outbox") == 1 && logs.count("failover slot") == 1; got != tc.warned {
				t.Errorf("warned %v, want %v:\n%s", got, tc.warned, logs)
			}
		})
	}
}

// logBuffer collects log lines for assertions.
type logBuffer struct{ syncbuf.Buffer }

// count counts the occurrences of s.
func (l *logBuffer) count(s string) int { return strings.Count(l.String(), s) }
