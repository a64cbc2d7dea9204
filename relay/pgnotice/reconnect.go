package pgnotice

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jackc/pglogrepl"
)

// Reconnect is what a session that follows one that lost PostgreSQL
// logs of its start; its zero value is a first start's, at info. The
// outage lines ([Outages]) say once that PostgreSQL cannot be reached
// and once that it is back; the start-up lines of every reconnect would
// repeat at info what the first start said. So after a lost connection
// the start-up lines are at debug, and one info line says that
// replication resumed, unless the outage lines spoke meanwhile: then the
// line that PostgreSQL is back says it.
type Reconnect struct {
	quiet   bool   // the start-up lines at debug
	err     error  // why the last streaming session ended
	outages uint64 // the outage lines' count of outages then
	// granted says the last session failed for a privilege the relay's
	// role lacked (PrivilegeError): the stream's start says it has it now.
	granted bool
}

// ReconnectAfter is the Reconnect of the session after one that ended
// with err, given prev, the one before: a lost connection keeps the first
// loss's, so that failed attempts while PostgreSQL is away change
// nothing; a [PrivilegeError] (which PrivilegeLog said) makes the next
// start quiet until the stream says the role has the privilege now.
func (o *Outages) ReconnectAfter(prev Reconnect, err error) Reconnect {
	if pe := (PrivilegeError{}); errors.As(err, &pe) {
		return Reconnect{quiet: true, err: pe, outages: o.said.Load(), granted: true}
	}
	switch {
	case o.ReconnectLevel(err) != slog.LevelDebug:
		return Reconnect{}
	case prev.quiet:
		return prev
	}
	return Reconnect{quiet: true, err: err, outages: o.said.Load()}
}

// Log is the logger of the session's start-up lines: log, or after a
// lost connection log with its info lines at debug (warnings stay).
func (rc Reconnect) Log(log *slog.Logger) *slog.Logger {
	if !rc.quiet {
		return log
	}
	return slog.New(infoAsDebug{log.Handler()})
}

// StartedLevel is the level of the stream's "replication started" line.
func (rc Reconnect) StartedLevel() slog.Level {
	if rc.quiet {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// SayResumed logs on log, once the stream of slot started at from after a
// lost connection, that replication resumed and why it had stopped,
// unless o's outage lines said that PostgreSQL was lost and is back
// since; after a missing privilege, that the role has it now.
func (rc Reconnect) SayResumed(log *slog.Logger, o *Outages, slot string, from pglogrepl.LSN) {
	if rc.granted {
		log.Info("the relay's role has the privileges it lacked: replication started, and the relay is ready", "slot", slot, "from", from)
		return
	}
	if rc.quiet && o.said.Load() == rc.outages {
		log.Info("replication resumed after the connection to PostgreSQL was lost", "slot", slot, "from", from,
			"err", rc.err)
	}
}

// EndLevel is the level of the line that says a session ended with err
// (what stopped it, if anything did): debug when PostgreSQL went away (a
// lost connection, or, with shutdown and no error, the stream stopped
// for its shutdown), since the outage lines and the next session's say
// what matters; info otherwise.
func EndLevel(err error, shutdown bool) slog.Level {
	if LostConnection(err) || (err == nil && shutdown) {
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
