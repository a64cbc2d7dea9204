package relay

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/relay/delivery"
)

// fatalError marks errors a reconnect cannot cure: the operator must act.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }
func (e fatalError) Unwrap() error { return e.err }

// isFatal reports whether err is fatal: a fatalError, or the engines'
// delivery.FatalError (a session its delivery ended so).
func isFatal(err error) bool {
	return errors.As(err, new(fatalError)) || errors.As(err, new(delivery.FatalError))
}

// classify marks connection errors the operator must fix as fatal: bad
// credentials, pg_hba rejections (SQLSTATE class 28), and the rest of
// class 42. A missing privilege (42501: the REPLICATION attribute, a
// GRANT) is not: it is fixed in the database while the relay runs, and
// Run says what fixes it and retries, not ready meanwhile (pgnotice.PrivilegeLog).
func classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code != "42501" && (strings.HasPrefix(pgErr.Code, "28") || strings.HasPrefix(pgErr.Code, "42")) {
		return fatalError{err}
	}
	return err
}
