package backfill

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// denied reports whether err is PostgreSQL's insufficient_privilege
// (42501).
func denied(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// whoAmI is the database and role of conn's session, quoted for a GRANT;
// placeholders in angle brackets when they cannot be read.
func whoAmI(ctx context.Context, conn *pgx.Conn) (database, role string) {
	if err := conn.QueryRow(ctx, "SELECT current_database(), current_user").Scan(&database, &role); err != nil {
		return "<database>", "<role>"
	}
	return pgx.Identifier{database}.Sanitize(), pgx.Identifier{role}.Sanitize()
}

// needsTemporary adds to err, a failure to create the table of selected
// keys, the GRANT that lets the session's role create it, when err says
// the role may not create temporary tables in the database.
func needsTemporary(ctx context.Context, conn *pgx.Conn, err error) error {
	if !denied(err) {
		return err
	}
	if rls, ok := rowSecurity(ctx, conn, err); ok {
		return rls
	}
	db, role := whoAmI(ctx, conn)
	return fmt.Errorf("%w: a backfill keeps the keys it selects in a temporary table, so its role needs TEMPORARY on the database "+
		"(PUBLIC has it unless it was revoked): as an administrator, run GRANT TEMPORARY ON DATABASE %s TO %s", err, db, role)
}

// needsSelect adds to err, a failure to read table or the tables its
// predicate reads, the GRANT that lets the session's role read them, when
// err says the role may not.
func needsSelect(ctx context.Context, conn *pgx.Conn, table string, err error) error {
	if !denied(err) {
		return err
	}
	if rls, ok := rowSecurity(ctx, conn, err); ok {
		return rls
	}
	_, role := whoAmI(ctx, conn)
	return fmt.Errorf("%w: a backfill's role needs SELECT on %s and on every table its predicate reads (PostgreSQL names the one it may not read), "+
		"and USAGE on their schemas: as an administrator, run GRANT SELECT ON <that table> TO %s", err, table, role)
}

// rowSecurity returns err with its fix, and true, when err is PostgreSQL
// refusing a read that row-level security would filter for the session's
// role: a backfill's sessions set row_security off (connect), since the
// relay publishes every row of the outbox table.
func rowSecurity(ctx context.Context, conn *pgx.Conn, err error) (error, bool) {
	if _, ok := pgerr.RowSecurity(err, ""); !ok {
		return err, false
	}
	var role string
	if qerr := conn.QueryRow(ctx, "SELECT current_user").Scan(&role); qerr != nil {
		role = ""
	}
	fix, _ := pgerr.RowSecurity(err, role)
	return fmt.Errorf("%w: %s", err, fix), true
}
