package pgerr

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RowSecurityOff is the session setting under which PostgreSQL refuses a
// query that row-level security would filter (SQLSTATE 42501, "query
// would be affected by row-level security policy"), instead of
// filtering it. A session that reads the outbox table to publish its
// rows (recover, backfill, the poller's reload) sets it: logical
// decoding sees every row, and a filtered read would lose rows without a
// word. A role that bypasses row-level security (a superuser, BYPASSRLS,
// the table's owner without FORCE ROW LEVEL SECURITY) reads as before.
const RowSecurityOff = "off"

// rlsTable reads the table of PostgreSQL's refusal of a read that
// row-level security would filter; not of a write a policy refuses.
var rlsTable = regexp.MustCompile(`^query would be affected by row-level security policy for table "(.*)"$`)

// rlsWriteTable reads the table of a write a row-level security policy
// refuses ("new row violates row-level security policy [NAME] for table").
var rlsWriteTable = regexp.MustCompile(`^new row violates row-level security policy (?:".*" )?for table "(.*)"$`)

// rowSecurityWrite returns the fix of err's message when it is a write a
// row-level security policy refused for role (quoted, as r): as on the
// relay's own tables, when every table of a schema has it.
func rowSecurityWrite(msg, r string) (string, bool) {
	m := rlsWriteTable.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	t := pgx.Identifier{m[1]}.Sanitize()
	return fmt.Sprintf("table %s has row-level security, whose policies refuse the role %s's writes: as a superuser, run ALTER ROLE %s BYPASSRLS; "+
		"or, as the table's owner, give the role a policy for them (CREATE POLICY cdc_relay_writes ON %s FOR ALL TO %s USING (true) WITH CHECK (true);), "+
		"or, for the relay's own table, ALTER TABLE %s DISABLE ROW LEVEL SECURITY;", t, r, r, t, r, t), true
}

// RowSecurity reports whether err is PostgreSQL refusing, under
// row_security = off, a query that a row-level security policy would
// filter for role (the name current_user reads), and if so returns what
// fixes it: ALTER ROLE … BYPASSRLS (as a superuser), a policy that lets
// the role see every row, or the role as the table's owner. The fix is
// one sentence with no line break; names in SQL are quoted.
func RowSecurity(err error, role string) (fix string, ok bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != insufficientPrivilege {
		return "", false
	}
	m := rlsTable.FindStringSubmatch(pgErr.Message)
	if m == nil {
		return "", false
	}
	r, t := pgx.Identifier{role}.Sanitize(), pgx.Identifier{m[1]}.Sanitize()
	if role == "" {
		r = "<role>"
	}
	return fmt.Sprintf("table %s has row-level security, which would hide some of its rows from the role %s while logical decoding publishes them all, "+
		"so the relay refuses to read it filtered: as a superuser, run ALTER ROLE %s BYPASSRLS; or, as the table's owner, give the role a policy that sees every row "+
		"(CREATE POLICY cdc_relay_reads ON %s FOR SELECT TO %s USING (true);), or make %s the table's owner (without FORCE ROW LEVEL SECURITY)",
		t, r, r, t, r, r), true
}
