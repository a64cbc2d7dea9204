// Package pgerr turns PostgreSQL connection errors into messages an
// operator can act on.
package pgerr

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Connect describes a failed connection attempt: where to (host, port,
// user, database, never the password), the cause without the noise of
// fallback attempts (with sslmode=prefer, the refused TLS attempt comes
// before the real error), and what to do about common causes. The result
// wraps err, so errors.As still finds a *pgconn.PgError. hint, when not
// empty, replaces the generic advice of [Hint].
//
// A connection string that lists several hosts (host=a,b, or a URL's
// a:5432,b:5432) is named with all of them, and the cause is each host's
// own, in order: one may be down and the next a standby.
func Connect(cfg *pgconn.Config, err error, hint string) error {
	hosts := Hosts(cfg)
	ce := &connectError{
		where: fmt.Sprintf("connect to PostgreSQL at %s as %q (database %q)", strings.Join(hosts, ","), cfg.User, cfg.Database),
		cause: cause(err, len(hosts) > 1), err: err, hint: hint,
	}
	if hint == "" {
		ce.hint = Hint(err)
	}
	return ce
}

// cause is what err says went wrong: the server's error, or the last
// attempt's (without its "host:port (host):" prefix, which the message
// already says); with several hosts, every attempt's, prefix included.
func cause(err error, severalHosts bool) error {
	causes := attempts(err)
	if severalHosts && len(causes) > 1 {
		msgs := make([]string, len(causes))
		for i, c := range causes {
			msgs[i] = c.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr
	}
	if len(causes) > 0 {
		last := causes[len(causes)-1]
		if inner := errors.Unwrap(last); inner != nil {
			return inner
		}
		return last
	}
	return err
}

// Hosts returns host:port for each server cfg lists, in the order it tries
// them, each once (pgconn lists a host twice for sslmode=prefer's two
// attempts). A Unix socket's host is its directory.
func Hosts(cfg *pgconn.Config) []string {
	all := []string{net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	for _, f := range cfg.Fallbacks {
		hp := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port)))
		if !slices.Contains(all, hp) {
			all = append(all, hp)
		}
	}
	return all
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
			return " (check the user and password in --postgres-url or --postgres-url-file, .pgpass or PGPASSWORD)"
		case pgErr.Code == "3D000":
			return " (check the database name in --postgres-url)"
		case pgErr.Code == "28000" && strings.Contains(pgErr.Message, "pg_hba.conf"):
			return " (allow this client in pg_hba.conf, then reload PostgreSQL)"
		}
		return ""
	}
	if errors.Is(err, pgconn.ErrReadOnlyConnection) || errors.Is(err, pgconn.ErrStandbyConnection) {
		return " (no server listed takes writes: wait for PostgreSQL to promote a standby; if it lasts, check the hosts in --postgres-url)"
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
