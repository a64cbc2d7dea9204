package delivery

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// FatalError marks errors a reconnect cannot cure: the operator must act.
// A delivery ends its session with one (Ledger.Stop); the relay stops
// instead of reconnecting. Its text is Err's.
type FatalError struct{ Err error }

// Error is Err's text, unchanged.
func (e FatalError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e FatalError) Unwrap() error { return e.Err }

// refused reports whether a status-table error will not go away by
// itself: SQLSTATE class 42 (a missing table or column, a missing
// privilege).
func refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && len(pgErr.Code) == 5 && pgErr.Code[:2] == "42"
}

// storeCause names a status-table error for the cause log: its SQLSTATE,
// or the connection (never anything of the event, which would make every
// event a cause of its own).
func storeCause(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return "status table: SQLSTATE " + pgErr.Code
	}
	return "status table: no connection"
}
