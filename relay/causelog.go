package relay

import (
	"log/slog"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/ratelog"
)

// causeLog logs undeliverable events by cause, not one line per event: the
// first event of a cause at once, with its id, then at most one line per
// cause per interval with how many more there were, the first of their
// ids and the latest reason. Safe for concurrent use.
type causeLog struct{ *ratelog.Logger }

// newCauseLog returns a causeLog with intervals of every; now nil is
// time.Now.
func newCauseLog(log *slog.Logger, every time.Duration, now func() time.Time) causeLog {
	return causeLog{ratelog.New(log, ratelog.Config{Every: every, Now: now, Summary: "more events of the same cause",
		KeyAttr: "cause", CountAttr: "events", First: []string{"id"}, Last: []string{"reason"}})}
}

// add counts one event of cause; msg and reason describe it.
func (c causeLog) add(msg, cause, id, topic string, reason error) {
	c.Log(cause, slog.LevelWarn, msg, "cause", cause, "id", id, "topic", topic, "reason", reason)
}

// newUnroutedLog returns the log of events that matched no route, by
// table: the first at once, with its id, then at most one line per table
// per minute with how many more there were. The pipeline counts those
// with Hold, so that an event that goes nowhere costs no log line built.
func newUnroutedLog(log *slog.Logger) *ratelog.Logger {
	return ratelog.New(log, ratelog.Config{Every: time.Minute, Summary: "more events matched no route and were sent nowhere",
		KeyAttr: "table", CountAttr: "events"})
}
