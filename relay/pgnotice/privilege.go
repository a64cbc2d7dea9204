package pgnotice

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/ratelog"
	"github.com/cdc-relay/cdc-relay/preflight"
)

// privilegeLogEvery is how often a missing privilege is logged again
// while it lasts: its first failure at once, then one summary per
// interval with how many sessions it failed since.
const privilegeLogEvery = 10 * time.Minute

// privilegeTimeout bounds the reads that name a missing privilege's fix.
const privilegeTimeout = 5 * time.Second

// PrivilegeError is a session's error that says the relay's role lacks a
// privilege (SQLSTATE 42501), with what fixes it: the GRANT, the ALTER
// ROLE, or `cdc-relay migrate --print-grants ROLE` with the role's name.
// Its text is the error's, then the fix.
type PrivilegeError struct {
	err error
	fix string
}

// Error is the refusal's text, then "; " and its fix.
func (e PrivilegeError) Error() string { return e.err.Error() + "; " + e.fix }

// Unwrap returns PostgreSQL's refusal.
func (e PrivilegeError) Unwrap() error { return e.err }

// WithPrivilegeFix returns err, a session's, as a [PrivilegeError] when
// it says the relay's role lacks a privilege, naming the role as
// current_user reads it on db (user, the connection string's, if it
// cannot be read); the fix is the GRANTs missing of needs, the relay's
// own tables (preflight.CheckPrivileges), when there are any, with the
// command that prints every grant, else pgerr.Privilege's. Any other
// error, and a read refused under row-level security, which says its
// fix, is returned as it is.
func WithPrivilegeFix(ctx context.Context, db pgdb.Querier, user string, needs []preflight.Privilege, err error) error {
	if !pgerr.MissingPrivilege(err) {
		return err
	}
	if _, rls := pgerr.RowSecurity(err, ""); rls {
		return err // a repair's read refused: it says its fix (pgtext.RowSecurity)
	}
	ctx, cancel := context.WithTimeout(ctx, privilegeTimeout)
	defer cancel()
	role := user
	_ = db.QueryRow(ctx, "SELECT current_user::text").Scan(&role) // the URL's user if it cannot be read
	fix, ok := pgerr.Privilege(err, role)
	if !ok {
		return err
	}
	if !pgerr.MissingReplication(err) {
		if grants := missingGrants(ctx, db, needs); grants != "" {
			fix = fmt.Sprintf("the role %s lacks privileges on the relay's tables: as the database's administrator, run %s (`%s` prints every grant it needs)",
				pgx.Identifier{role}.Sanitize(), grants, pgerr.PrintGrants(role))
		}
	}
	return PrivilegeError{err: err, fix: fix}
}

// missingGrants returns the GRANTs that give the session's role what it
// lacks of needs (preflight.CheckPrivileges), one after the other, or ""
// when it lacks none there or they cannot be read.
func missingGrants(ctx context.Context, db pgdb.Querier, needs []preflight.Privilege) string {
	problems, err := preflight.CheckPrivileges(ctx, db, needs)
	if err != nil {
		return ""
	}
	grants := make([]string, 0, len(problems))
	for _, p := range problems {
		grants = append(grants, p.Grant)
	}
	return strings.Join(grants, " ")
}

// PrivilegeLog is the log of missing privileges, by fix: each at once,
// then at most one summary every 10 minutes while it lasts. Safe for
// concurrent use.
type PrivilegeLog struct{ log *ratelog.Logger }

// NewPrivilegeLog returns the log of missing privileges, said on log.
func NewPrivilegeLog(log *slog.Logger) *PrivilegeLog {
	return &PrivilegeLog{log: ratelog.New(log, ratelog.Config{Every: privilegeLogEvery, KeyAttr: "fix", CountAttr: "sessions",
		Summary: "the relay's role still lacks a privilege: it retries, and is not ready until it is granted", Last: []string{"err"}})}
}

// Say logs pe, the error that ended a session of slot, once per fix
// while it lasts, with the wait before the next session; the next
// sessions' start-up lines are quiet (Outages.ReconnectAfter): this line
// speaks for them, until one streams (Reconnect.SayResumed).
func (p *PrivilegeLog) Say(pe PrivilegeError, slot string, backoff time.Duration) {
	p.log.Log(pe.fix, slog.LevelWarn, "the relay's role lacks a privilege it needs: it retries, and is not ready until it is granted",
		"slot", slot, "fix", pe.fix, "err", pe.err, "retry_in", backoff)
}
