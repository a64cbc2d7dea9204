package pgerr

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// ConnectionLost reports whether err says that the connection to
// PostgreSQL was lost or could not be opened, rather than that the server
// refused what was asked: the server is shutting down or starting
// ([ShuttingDown]: SQLSTATE 57P01, 57P02, 57P03), a connection exception
// (class 08), a connection attempt that failed before the server answered
// (pgconn.ConnectError without a server error, or an error pgconn deems
// safe to retry: nothing was sent), a network error, the
// connection's end (io.EOF, refused, reset, broken pipe), a timeout, or
// pgx's "conn closed" for a connection that broke earlier. A server's
// answer of any other SQLSTATE (a permission, a constraint, a full disk)
// is not a lost connection, even when it came while connecting.
func ConnectionLost(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return ShuttingDown(err) || strings.HasPrefix(pgErr.Code, "08")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case ShuttingDown(err), errors.As(err, &ce), errors.As(err, &ne), pgconn.SafeToRetry(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), pgconn.Timeout(err):
		return true
	}
	return strings.Contains(err.Error(), "conn closed") // pgx's text for a connection that broke earlier
}

// Level is the level of a line that reports err while the relay's outage
// lines watch PostgreSQL: debug when err is a lost connection
// ([ConnectionLost]), since those lines say once that PostgreSQL cannot be
// reached and once that it is back; warn for every other cause, which an
// operator must see.
func Level(err error) slog.Level {
	if ConnectionLost(err) {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}
