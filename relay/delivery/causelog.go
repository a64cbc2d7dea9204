package delivery

import (
	"log/slog"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/ratelog"
)

// CauseLog logs undeliverable events by cause, not one line per event: the
// first event of a cause at once, with its id, then at most one line per
// cause per interval with how many more there were, the first of their
// ids and the latest reason. Safe for concurrent use.
type CauseLog struct{ *ratelog.Logger }

// NewCauseLog returns a CauseLog with intervals of every; now nil is
// time.Now.
func NewCauseLog(log *slog.Logger, every time.Duration, now func() time.Time) CauseLog {
	return CauseLog{ratelog.New(log, ratelog.Config{Every: every, Now: now, Summary: "more events of the same cause",
		KeyAttr: "cause", CountAttr: "events", First: []string{"id"}, Last: []string{"reason"}})}
}

// add counts one event of cause; msg and reason describe it.
func (c CauseLog) add(msg, cause, id, topic string, reason error) {
	c.Log(cause, slog.LevelWarn, msg, "cause", cause, "id", id, "topic", topic, "reason", reason)
}

// addBehind counts one event of cause as add does, at info level: an
// event that is behind (IsBehind), not failing.
func (c CauseLog) addBehind(msg, cause, id, topic string, reason error) {
	c.Log(cause, slog.LevelInfo, msg, "cause", cause, "id", id, "topic", topic, "reason", reason)
}
