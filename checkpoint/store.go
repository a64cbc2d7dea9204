package checkpoint

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the store needs of a connection pool (*pgxpool.Pool has it).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store keeps one row per slot in the checkpoint table that `cdc-relay
// migrate` creates: the last position the relay confirmed.
type Store struct {
	db    DB
	table string // quoted
}

// NewStore returns a store on the checkpoint table schema.table.
func NewStore(db DB, schema, table string) *Store {
	return &Store{db: db, table: pgx.Identifier{schema, table}.Sanitize()}
}

// Load returns the stored position for slot; ok is false when there is none.
func (s *Store) Load(ctx context.Context, slot string) (lsn pglogrepl.LSN, ok bool, err error) {
	var text string
	err = s.db.QueryRow(ctx, "SELECT lsn::text FROM "+s.table+" WHERE slot_name = $1", slot).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read checkpoint of slot %q from %s: %w", slot, s.table, err)
	}
	lsn, err = pglogrepl.ParseLSN(text)
	if err != nil {
		return 0, false, fmt.Errorf("read checkpoint of slot %q: %w", slot, err)
	}
	return lsn, true, nil
}

// Save stores lsn as slot's confirmed position. It never moves a stored
// position backwards.
func (s *Store) Save(ctx context.Context, slot string, lsn pglogrepl.LSN) error {
	_, err := s.db.Exec(ctx, "INSERT INTO "+s.table+" (slot_name, lsn, updated_at) VALUES ($1, $2::pg_lsn, now())"+
		" ON CONFLICT (slot_name) DO UPDATE SET lsn = GREATEST("+s.table+".lsn, EXCLUDED.lsn), updated_at = now()",
		slot, lsn.String())
	if err != nil {
		return fmt.Errorf("save checkpoint %s of slot %q: %w", lsn, slot, err)
	}
	return nil
}

// Reset replaces slot's stored position, for a slot that was recreated on
// purpose.
func (s *Store) Reset(ctx context.Context, slot string, lsn pglogrepl.LSN) error {
	_, err := s.db.Exec(ctx, "INSERT INTO "+s.table+" (slot_name, lsn, updated_at) VALUES ($1, $2::pg_lsn, now())"+
		" ON CONFLICT (slot_name) DO UPDATE SET lsn = EXCLUDED.lsn, updated_at = now()", slot, lsn.String())
	if err != nil {
		return fmt.Errorf("reset checkpoint of slot %q: %w", slot, err)
	}
	return nil
}
