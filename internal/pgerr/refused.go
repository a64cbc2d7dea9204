package pgerr

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Refused returns, when err says that PostgreSQL answered but refused the
// relay's login for a cause of the role's or the server's settings, not
// of the network, the sentence an operator acts on: authentication failed
// (SQLSTATE 28P01, 28000), or too many connections (53300). It returns ""
// for any other error, an outage among them. The sentence never holds a
// password: it names where the credentials come from, not what they are.
func Refused(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return ""
	}
	switch {
	case pgErr.Code == "28P01":
		return "PostgreSQL refused the relay's login: authentication failed. Check the user and password in --postgres-url, " +
			"--postgres-url-file (read again at every new connection, so a rotated password needs no restart), .pgpass or PGPASSWORD, " +
			"and the role's password (ALTER ROLE … PASSWORD); the relay retries"
	case pgErr.Code == "28000" && strings.Contains(pgErr.Message, "pg_hba.conf"):
		return "PostgreSQL refused the relay's login: pg_hba.conf has no entry for this client, user and database. " +
			"Add one and reload PostgreSQL (SELECT pg_reload_conf()); the relay retries"
	case pgErr.Code == "28000":
		return "PostgreSQL refused the relay's login: authentication failed (invalid authorization). Check that the role may log in " +
			"(ALTER ROLE … LOGIN), its VALID UNTIL, and the user in --postgres-url or --postgres-url-file; the relay retries"
	case pgErr.Code == "53300" && strings.Contains(pgErr.Message, "for role"):
		return "PostgreSQL refused a connection: the relay's role has as many connections as its CONNECTION LIMIT allows. " +
			"Raise it (ALTER ROLE … CONNECTION LIMIT n, or -1 for none; the relay opens up to 8 pooled connections " +
			"plus its replication, health-check and row-loading ones) or end the role's other sessions; the relay retries"
	case pgErr.Code == "53300":
		return "PostgreSQL refused a connection: too many connections (the database's CONNECTION LIMIT, or the server's " +
			"max_connections less its reserved ones). Raise the limit or end other sessions; the relay retries"
	}
	return ""
}

// ReadOnlyHint says, for an error of a write refused because the
// transaction is read-only (SQLSTATE 25006), which setting makes it so,
// as a parenthesised sentence with a leading space; "" for any other
// error.
func ReadOnlyHint(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "25006" {
		return ""
	}
	return " (the session is read-only: either --postgres-url names a standby (point it at the primary, or add " +
		"target_session_attrs=read-write), or default_transaction_read_only is on for the role or the database; " +
		"see SHOW default_transaction_read_only as the relay's role, and undo it with " +
		"ALTER ROLE <role> SET default_transaction_read_only = off, or ALTER DATABASE <db> SET default_transaction_read_only = off)"
}

// MissingTableHint says, for an error of a table that does not exist
// (SQLSTATE 42P01), how the relay's tables are created again, as a
// parenthesised sentence with a leading space; "" for any other error.
func MissingTableHint(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		return ""
	}
	return " (a table the relay needs is missing: run `cdc-relay migrate` as the database's administrator to create it again, " +
		"then the grants `cdc-relay migrate --print-grants ROLE` prints; the relay picks it up without a restart)"
}
