package relay

import (
	"context"
	"log/slog"
)

// reconnect is what a session that follows one that lost PostgreSQL
// logs of its start. The outage lines (pgoutage.go) say once that
// PostgreSQL cannot be reached and once that it is back; the start-up
// lines of every reconnect would repeat at info what the first start
// said. So after a lost connection the start-up lines are at debug, and
// one info line says that replication resumed, unless the outage lines
// spoke meanwhile: then the line that PostgreSQL is back says it.
type reconnect struct {
	quiet   bool   // the start-up lines at debug
	err     error  // why the last streaming session ended
	outages uint64 // the outage lines' count of outages then
	// granted says the last session failed for a privilege the relay's
	// role lacked (privilege.go): the stream's start says it has it now.
	granted bool
}

// reconnectAfter is the reconnect of the session after one that ended
// with err, given prev, the one before: a lost connection keeps the first
// loss's, so that failed attempts while PostgreSQL is away change nothing.
func (r *Relay) reconnectAfter(prev reconnect, err error) reconnect {
	switch {
	case r.reconnectLevel(err) != slog.LevelDebug:
		return reconnect{}
	case prev.quiet:
		return prev
	}
	return reconnect{quiet: true, err: err, outages: r.pgOutagesSaid.Load()}
}

// startLog is the logger of the session's start-up lines: s.log, or after
// a lost connection s.log with its info lines at debug (warnings stay).
func (s *session) startLog() *slog.Logger {
	if !s.reconnect.quiet {
		return s.log
	}
	return slog.New(infoAsDebug{s.log.Handler()})
}

// startedLevel is the level of the stream's "replication started" line.
func (s *session) startedLevel() slog.Level {
	if s.reconnect.quiet {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// sayResumed logs, once the stream started after a lost connection, that
// replication resumed and why it had stopped, unless the outage lines
// said that PostgreSQL was lost and is back since; after a missing
// privilege, that the role has it now.
func (s *session) sayResumed() {
	if s.reconnect.granted {
		s.log.Info("the relay's role has the privileges it lacked: replication started, and the relay is ready", "slot", s.cfg.Slot, "from", s.start)
		return
	}
	if s.reconnect.quiet && s.pgOutagesSaid.Load() == s.reconnect.outages {
		s.log.Info("replication resumed after the connection to PostgreSQL was lost", "slot", s.cfg.Slot, "from", s.start,
			"err", s.reconnect.err)
	}
}

// endLevel is the level of the line that says the session ended with err:
// debug when PostgreSQL went away (a lost connection, or the stream
// stopped for its shutdown), since the outage lines and the next
// session's say what matters; info otherwise.
func (s *session) endLevel(err error) slog.Level {
	if e := s.stopped.Load(); e != nil {
		err = *e
	}
	if lostConnection(err) || (err == nil && s.shutdown.Load()) {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// infoAsDebug is a handler that passes info records on at debug, and the
// others as they are.
type infoAsDebug struct{ h slog.Handler }

func (q infoAsDebug) level(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (q infoAsDebug) Enabled(ctx context.Context, l slog.Level) bool {
	return q.h.Enabled(ctx, q.level(l))
}

func (q infoAsDebug) Handle(ctx context.Context, r slog.Record) error {
	r.Level = q.level(r.Level)
	return q.h.Handle(ctx, r)
}

func (q infoAsDebug) WithAttrs(as []slog.Attr) slog.Handler { return infoAsDebug{q.h.WithAttrs(as)} }
func (q infoAsDebug) WithGroup(name string) slog.Handler    { return infoAsDebug{q.h.WithGroup(name)} }
