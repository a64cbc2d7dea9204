// Package pgerr turns PostgreSQL connection errors into messages an
// operator can act on.
package pgerr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Connect describes a failed connection attempt: where to (host, port,
// user, database, never the password), the cause without the noise of
// fallback attempts (with sslmode=prefer, the refused TLS attempt comes
// before the real error), and what to do about common causes. The result
// wraps err, so errors.As still finds a *pgconn.PgError. hint, when not
// empty, replaces the generic advice of [Hint].
func Connect(cfg *pgconn.Config, err error, hint string) error {
	var pgErr *pgconn.PgError
	cause := err
	if errors.As(err, &pgErr) {
		cause = pgErr
	} else if causes := attempts(err); len(causes) > 0 {
		// The last attempt, without its "host:port (host):" prefix, which
		// the message already says.
		cause = causes[len(causes)-1]
		if inner := errors.Unwrap(cause); inner != nil {
			cause = inner
		}
	}
	ce := &connectError{
		where: fmt.Sprintf("connect to PostgreSQL at %s:%d as %q (database %q)", cfg.Host, cfg.Port, cfg.User, cfg.Database),
		cause: cause, err: err, hint: hint,
	}
	if hint == "" {
		ce.hint = Hint(err)
	}
	return ce
}

type connectError struct {
	where, hint string
	cause, err  error
}

func (e *connectError) Error() string { return e.where + ": " + e.cause.Error() + e.hint }
func (e *connectError) Unwrap() error { return e.err }

// attempts returns the errors of each connection attempt that are not the
// server refusing TLS (sslmode=prefer tries TLS first, then plain).
func attempts(err error) []error {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		return nil
	}
	joined, ok := ce.Unwrap().(interface{ Unwrap() []error })
	if !ok {
		return []error{ce.Unwrap()}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		if !strings.Contains(e.Error(), "server refused TLS connection") {
			out = append(out, e)
		}
	}
	return out
}

// Hint says what an operator can do about common connection errors, as a
// parenthesised sentence with a leading space, or "".
func Hint(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "28P01":
			return " (check the user and password in --postgres-url)"
		case pgErr.Code == "3D000":
			return " (check the database name in --postgres-url)"
		case pgErr.Code == "28000" && strings.Contains(pgErr.Message, "pg_hba.conf"):
			return " (allow this client in pg_hba.conf, then reload PostgreSQL)"
		}
		return ""
	}
	if strings.Contains(err.Error(), "connection refused") {
		return " (is PostgreSQL running and listening there? check host and port in --postgres-url)"
	}
	return ""
}

// ShuttingDown reports whether err says the server is shutting down: a
// session terminated by a shutdown (SQLSTATE 57P01, 57P02) or a connection
// refused while it lasts (57P03, "the database system is shutting down").
func ShuttingDown(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03":
			return true
		}
	}
	return err != nil && strings.Contains(err.Error(), "the database system is shutting down")
}
