package delivery

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

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
