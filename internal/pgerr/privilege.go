package pgerr

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// insufficientPrivilege is PostgreSQL's SQLSTATE for a privilege the
// session's role lacks (permission denied, must be owner, must be
// superuser or replication role).
const insufficientPrivilege = "42501"

// deniedOn reads the object of "permission denied for KIND NAME".
var deniedOn = regexp.MustCompile(`permission denied for (table|relation|view|sequence|schema|function|database) (\S+)`)

// ownerOf reads the object of "must be owner of KIND NAME".
var ownerOf = regexp.MustCompile(`must be owner of (?:table|relation|view|sequence|schema|function|database|publication|index) (\S+)`)

// MissingPrivilege reports whether err is PostgreSQL refusing the
// session's role a privilege (SQLSTATE 42501): granted while the relay
// runs, it cures itself, so the relay retries rather than stops.
func MissingPrivilege(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == insufficientPrivilege
}

// MissingReplication reports whether err says that role lacks the
// REPLICATION attribute: PostgreSQL refuses a replication connection
// ("must be superuser or replication role to start walsender" before
// version 16, "permission denied to start WAL sender" since) or a
// replication slot ("… to use replication slots").
func MissingReplication(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != insufficientPrivilege {
		return false
	}
	m := pgErr.Message
	return strings.Contains(m, "replication role") || strings.Contains(m, "WAL sender") || strings.Contains(m, "replication slots")
}

// Privilege reports whether err is PostgreSQL refusing the session's role
// a privilege (SQLSTATE 42501), and if so returns what fixes it, for
// role, the name current_user reads: for a missing REPLICATION attribute
// the ALTER ROLE a superuser runs; for a schema, the GRANT USAGE; for any
// other privilege (a table, a sequence) the command that prints every
// GRANT the relay's role needs, `cdc-relay migrate --print-grants ROLE`,
// to run as the database's administrator; for a read row-level security
// would filter, RowSecurity's; for a write a policy refuses, the
// BYPASSRLS or the policy that lets it. The fix is one sentence with
// no line break; names in SQL are quoted.
func Privilege(err error, role string) (fix string, ok bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != insufficientPrivilege {
		return "", false
	}
	if fix, ok := RowSecurity(err, role); ok {
		return fix, true
	}
	r := pgx.Identifier{role}.Sanitize()
	if fix, ok := rowSecurityWrite(pgErr.Message, r); ok {
		return fix, true
	}
	printGrants := fmt.Sprintf("as the database's administrator, run the SQL that `%s` prints", PrintGrants(role))
	if MissingReplication(err) {
		return fmt.Sprintf("the role %s lacks the REPLICATION attribute: as a superuser, run ALTER ROLE %s WITH REPLICATION;", r, r), true
	}
	if m := deniedOn.FindStringSubmatch(pgErr.Message); m != nil {
		kind, name := m[1], m[2]
		if kind == "schema" {
			return fmt.Sprintf("the role %s may not use schema %s: as the database's administrator, run GRANT USAGE ON SCHEMA %s TO %s; (`%s` prints every grant it needs)",
				r, name, pgx.Identifier{name}.Sanitize(), r, PrintGrants(role)), true
		}
		return fmt.Sprintf("the role %s lacks a privilege on %s %s: %s", r, kind, name, printGrants), true
	}
	return fmt.Sprintf("the role %s lacks a privilege: %s", r, printGrants), true
}

// PrintGrants is the command that prints the SQL granting role what the
// relay needs; a name that a shell would split is quoted.
func PrintGrants(role string) string {
	if role == "" {
		role = "<role>"
	} else if strings.ContainsFunc(role, func(c rune) bool {
		return !(c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
	}) {
		role = "'" + strings.ReplaceAll(role, "'", `'\''`) + "'"
	}
	return "cdc-relay migrate --print-grants " + role
}

// MigrateAs returns err, from `cdc-relay migrate` run as role, with who
// must run it when PostgreSQL refused role a privilege that creating or
// altering the relay's tables needs (CREATE on a schema, the ownership of
// a table): the database's administrator, the owner of the schema or the
// object named, or a superuser; then `cdc-relay migrate --print-grants`
// for the relay's role. Any other error, or one that says already
// whom to run migrate as, is returned as it is.
func MigrateAs(err error, role string) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != insufficientPrivilege || MissingReplication(err) || strings.Contains(err.Error(), "run migrate as") {
		return err
	}
	owner := "the owner of the relay's schema"
	if m := deniedOn.FindStringSubmatch(pgErr.Message); m != nil {
		owner = fmt.Sprintf("the owner of %s %s", m[1], m[2])
	} else if m := ownerOf.FindStringSubmatch(pgErr.Message); m != nil {
		owner = "the owner of " + m[1]
	}
	ran := ""
	if role != "" {
		ran = fmt.Sprintf("; it ran as %s", pgx.Identifier{role}.Sanitize())
	}
	return fmt.Errorf("%w: run migrate as the database's administrator (%s, or a superuser%s), then `%s` for the relay's role",
		err, owner, ran, PrintGrants(role))
}
