// Package pgdb is what the relay's stores need of PostgreSQL: [DB], one
// interface for the packages that run statements and single-row queries
// (the checkpoint store, retention, write-back), so that each accepts a
// pool, a connection or a transaction alike.
package pgdb

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB runs statements and single-row queries. *pgxpool.Pool has it, and is
// safe for concurrent use; so do *pgx.Conn and pgx.Tx, for one goroutine
// at a time.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
