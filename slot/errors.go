package slot

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// FatalError marks an error a reconnect cannot cure: the operator must act
// (a gap in the WAL, a slot that cannot be used, an adopt predicate
// PostgreSQL refuses, a login refused). Its text is Err's; the relay stops
// on it.
type FatalError struct{ Err error }

func (e FatalError) Error() string { return e.Err.Error() }
func (e FatalError) Unwrap() error { return e.Err }

// classify marks connection errors the operator must fix as fatal: bad
// credentials, pg_hba rejections (SQLSTATE class 28), and the rest of
// class 42; a missing privilege (42501) is fixed while the relay runs, and
// is not. As the relay's own classify.
func classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code != "42501" && (strings.HasPrefix(pgErr.Code, "28") || strings.HasPrefix(pgErr.Code, "42")) {
		return FatalError{err}
	}
	return err
}
