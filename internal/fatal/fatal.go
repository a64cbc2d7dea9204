// Package fatal marks the errors a reconnect cannot cure: the operator must
// act (a gap in the WAL, a slot or a mapping that cannot be used, a login
// refused, Kafka refusing the relay's producer). The relay's Run stops on
// one, whichever part of the relay returned it; any other error ends the
// session only, and the relay reconnects.
package fatal

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Error is an error the operator must act on. Its text is Err's, so that
// marking an error fatal never changes what it says.
type Error struct{ Err error }

func (e Error) Error() string { return e.Err.Error() }
func (e Error) Unwrap() error { return e.Err }

// Is reports whether err, or an error it wraps, is an Error.
func Is(err error) bool { return errors.As(err, new(Error)) }

// Classify marks the connection errors the operator must fix as fatal:
// bad credentials, pg_hba rejections (SQLSTATE class 28), and the rest of
// class 42. A missing privilege (42501: the REPLICATION attribute, a
// GRANT) is not: it is fixed in the database while the relay runs, and
// the relay says what fixes it and retries. Any other error is returned as
// it is.
func Classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code != "42501" && (strings.HasPrefix(pgErr.Code, "28") || strings.HasPrefix(pgErr.Code, "42")) {
		return Error{Err: err}
	}
	return err
}
