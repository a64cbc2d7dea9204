package relay

import (
	"context"
	"log/slog"

	"github.com/cdc-relay/cdc-relay/relay/pgnotice"
)

// startLog is the logger of the session's start-up lines: s.log, or after
// a lost connection s.log with its info lines at debug (warnings stay).
func (s *session) startLog() *slog.Logger { return s.reconnect.Log(s.log) }

// endLevel is the level of the line that says the session ended with err,
// or with what stopped it (pgnotice.EndLevel).
func (s *session) endLevel(err error) slog.Level {
	if e := s.stopped.Load(); e != nil {
		err = *e
	}
	return pgnotice.EndLevel(err, s.shutdown.Load())
}

// missingPrivilege returns err as a pgnotice.PrivilegeError naming its
// fix when it says the relay's role lacks a privilege (on the relay's
// tables: relayPrivileges), else as it is.
func (rn *runner) missingPrivilege(ctx context.Context, err error) error {
	return pgnotice.WithPrivilegeFix(ctx, rn.pool, rn.pool.Config().ConnConfig.User, relayPrivileges(rn.cfg), err)
}
