// Package pgdb is what the relay's packages need of PostgreSQL, declared
// once: [DB] for those that run statements and single-row queries (the
// checkpoint store, retention, write-back, the slot and migration
// checks), [Querier] for those that read many rows too (preflight, the
// status table, backfill, the database stats), and [Tx] for those that
// open savepoints (the write-back of a parked event's row). Each accepts
// a pool, a connection or a transaction alike. [QuoteLiteral] quotes a
// value that SQL must hold as a literal (a statement that takes no
// parameters).
package pgdb

import (
	"context"
	"strings"

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

// Querier is a [DB] that also runs queries of many rows. *pgxpool.Pool,
// *pgx.Conn and pgx.Tx have it, as they have DB.
type Querier interface {
	DB
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Tx is a [DB] that begins a transaction, or within a transaction a
// savepoint (pgx.Tx has it; so do *pgxpool.Pool and *pgx.Conn).
type Tx interface {
	DB
	Begin(ctx context.Context) (pgx.Tx, error)
}

// QuoteLiteral quotes s as an SQL string literal, as PostgreSQL's
// quote_literal does: quotes doubled, and, when s holds a backslash, the
// backslashes doubled in an E'...' literal, so that the literal means s
// whatever standard_conforming_strings says. NUL bytes, which no text can
// hold, are dropped.
func QuoteLiteral(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), "'", "''")
	if strings.Contains(s, `\`) {
		return "E'" + strings.ReplaceAll(s, `\`, `\\`) + "'"
	}
	return "'" + s + "'"
}
