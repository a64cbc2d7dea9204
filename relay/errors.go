package relay

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// fatalError marks errors a reconnect cannot cure: the operator must act.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }
func (e fatalError) Unwrap() error { return e.err }

// classify marks connection errors the operator must fix as fatal: bad
// credentials, missing privileges, pg_hba rejections.
func classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "28") || strings.HasPrefix(pgErr.Code, "42")) {
		return fatalError{err}
	}
	return err
}
