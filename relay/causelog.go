package relay

import (
	"log/slog"
	"sync"
	"time"
)

// causeLog logs undeliverable events by cause, not one line per event: the
// first event of a cause at once, with its id, then at most one line per
// cause per interval with how many more there were and the first of their
// ids. Safe for concurrent use.
type causeLog struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time

	mu     sync.Mutex
	causes map[string]*causeWindow
}

// causeWindow is one cause's current interval.
type causeWindow struct {
	start    time.Time
	more     int    // events after the one logged at start
	firstID  string // the first of those
	lastSeen string // the reason of the latest, for the summary line
}

func newCauseLog(log *slog.Logger, every time.Duration) *causeLog {
	return &causeLog{log: log, every: every, now: time.Now, causes: map[string]*causeWindow{}}
}

// add counts one event of cause; msg and reason describe it.
func (c *causeLog) add(msg, cause, id, topic string, reason error) {
	now := c.now()
	c.mu.Lock()
	w := c.causes[cause]
	if w != nil && now.Sub(w.start) < c.every {
		if w.more == 0 {
			w.firstID = id
		}
		w.more++
		w.lastSeen = reason.Error()
		c.mu.Unlock()
		return
	}
	var summary causeWindow
	if w != nil {
		summary = *w
	}
	c.causes[cause] = &causeWindow{start: now}
	c.mu.Unlock()
	c.summarize(cause, summary)
	c.log.Warn(msg, "cause", cause, "id", id, "topic", topic, "reason", reason)
}

// flush logs the counts of intervals that have ended; call it now and then
// so that a burst that stopped is still reported.
func (c *causeLog) flush() {
	now := c.now()
	c.mu.Lock()
	var ended []struct {
		cause string
		w     causeWindow
	}
	for cause, w := range c.causes {
		if now.Sub(w.start) >= c.every {
			ended = append(ended, struct {
				cause string
				w     causeWindow
			}{cause, *w})
			delete(c.causes, cause)
		}
	}
	c.mu.Unlock()
	for _, e := range ended {
		c.summarize(e.cause, e.w)
	}
}

func (c *causeLog) summarize(cause string, w causeWindow) {
	if w.more > 0 {
		c.log.Warn("more events of the same cause", "cause", cause, "events", w.more,
			"since", w.start.Format(time.RFC3339), "first_id", w.firstID, "last_reason", w.lastSeen)
	}
}
