package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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

// privilegeError is a session's error that says the relay's role lacks a
// privilege (SQLSTATE 42501), with what fixes it: the GRANT, the ALTER
// ROLE, or `cdc-relay migrate --print-grants ROLE` with the role's name.
type privilegeError struct {
	err error
	fix string
}

func (e privilegeError) Error() string { return e.err.Error() + "; " + e.fix }
func (e privilegeError) Unwrap() error { return e.err }

// missingPrivilege reports whether err is PostgreSQL refusing the
// session's role a privilege (SQLSTATE 42501).
func missingPrivilege(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// newPrivilegeLog returns the log of missing privileges, by fix: each at
// once, then at most one summary per privilegeLogEvery while it lasts.
func newPrivilegeLog(log *slog.Logger) *ratelog.Logger {
	return ratelog.New(log, ratelog.Config{Every: privilegeLogEvery, KeyAttr: "fix", CountAttr: "sessions",
		Summary: "the relay's role still lacks a privilege: it retries, and is not ready until it is granted", Last: []string{"err"}})
}

// missingPrivilege returns err, a session's, as a privilegeError when it
// says the relay's role lacks a privilege, naming the role as current_user
// reads it; the fix is the GRANTs missing on the relay's own tables
// (missingGrants) when there are any, with the command that prints every
// grant, else pgerr.Privilege's. Any other error, and a read refused under
// row-level security, which says its fix, is returned as it is.
func (rn *runner) missingPrivilege(ctx context.Context, err error) error {
	if !missingPrivilege(err) {
		return err
	}
	if _, rls := pgerr.RowSecurity(err, ""); rls {
		return err // a repair's read refused: it says its fix (pgtext.RowSecurity)
	}
	ctx, cancel := context.WithTimeout(ctx, privilegeTimeout)
	defer cancel()
	role := rn.pool.Config().ConnConfig.User
	_ = rn.pool.QueryRow(ctx, "SELECT current_user::text").Scan(&role) // the URL's user if it cannot be read
	fix, ok := pgerr.Privilege(err, role)
	if !ok {
		return err
	}
	if !pgerr.MissingReplication(err) {
		if grants := rn.missingGrants(ctx); grants != "" {
			fix = fmt.Sprintf("the role %s lacks privileges on the relay's tables: as the database's administrator, run %s (`%s` prints every grant it needs)",
				pgx.Identifier{role}.Sanitize(), grants, pgerr.PrintGrants(role))
		}
	}
	return privilegeError{err: err, fix: fix}
}

// missingGrants returns the GRANTs that give the session's role what it
// lacks on the relay's own tables (preflight.CheckPrivileges), one after
// the other, or "" when it lacks none there or they cannot be read.
func (rn *runner) missingGrants(ctx context.Context) string {
	problems, err := preflight.CheckPrivileges(ctx, rn.pool, relayPrivileges(rn.cfg))
	if err != nil {
		return ""
	}
	grants := make([]string, 0, len(problems))
	for _, p := range problems {
		grants = append(grants, p.Grant)
	}
	return strings.Join(grants, " ")
}

// sayPrivilegeMissing logs a session's privilegeError pe once per fix
// while it lasts, and makes the next sessions' start-up lines quiet: the
// line this logs speaks for them, until one streams (sayResumed).
func (rn *runner) sayPrivilegeMissing(pe privilegeError, backoff time.Duration) {
	rn.privileges.Log(pe.fix, slog.LevelWarn, "the relay's role lacks a privilege it needs: it retries, and is not ready until it is granted",
		"slot", rn.cfg.Slot, "fix", pe.fix, "err", pe.err, "retry_in", backoff)
	rn.reconnect = reconnect{quiet: true, err: pe, outages: rn.pgOutagesSaid.Load(), granted: true}
}
