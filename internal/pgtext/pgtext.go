package pgtext

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// Connect opens a connection whose text output the decoder reads as it
// reads the stream's (TimeZone=UTC, DateStyle=ISO, bytea_output=hex),
// with row_security off: a read of an outbox table that row-level
// security would filter for the relay's role fails (see [Readable]),
// instead of returning some of the rows logical decoding publishes.
func Connect(ctx context.Context, url string) (*pgconn.PgConn, error) {
	pgCfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse PostgreSQL URL: %w", pgerr.Parse(err))
	}
	pgCfg.RuntimeParams["TimeZone"] = "UTC"
	pgCfg.RuntimeParams["DateStyle"] = "ISO"
	pgCfg.RuntimeParams["bytea_output"] = "hex"
	pgCfg.RuntimeParams["row_security"] = pgerr.RowSecurityOff
	conn, err := pgconn.ConnectConfig(ctx, pgCfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	return conn, nil
}

// Readable returns nil when conn (Connect's) may read every row of table
// (quoted), else an error saying why. rowSecurity is true when a
// row-level security policy would hide rows from conn's role: the
// operator's to fix, and the error says the fix.
func Readable(ctx context.Context, conn *pgconn.PgConn, table string) (rowSecurity bool, err error) {
	_, err = conn.Exec(ctx, "SELECT 1 FROM "+table+" LIMIT 0").ReadAll()
	if err == nil {
		return false, nil
	}
	if err := RowSecurity(ctx, conn, err); err != nil {
		return true, err
	}
	return false, fmt.Errorf("read outbox table %s: %w", table, err)
}

// RowSecurity returns err with its fix when it is PostgreSQL refusing a
// read that row-level security would filter (pgerr.RowSecurity), naming
// the role as current_user on conn reads it; nil for any other error.
func RowSecurity(ctx context.Context, conn *pgconn.PgConn, err error) error {
	if _, ok := pgerr.RowSecurity(err, ""); !ok {
		return nil
	}
	role := ""
	if res, rerr := conn.Exec(ctx, "SELECT current_user").ReadAll(); rerr == nil && len(res) == 1 && len(res[0].Rows) == 1 {
		role = string(res[0].Rows[0][0])
	}
	fix, _ := pgerr.RowSecurity(err, role)
	return fmt.Errorf("%w: %s", err, fix)
}
