package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// DB is what the store needs of a connection pool (*pgxpool.Pool has it):
// Exec and QueryRow.
type DB = pgdb.DB

// Store keeps one row per slot in the checkpoint table that `cdc-relay
// migrate` creates. The relay saves a position there before it confirms
// that position to PostgreSQL (write-ahead), so the slot's confirmed
// position never passes the row while only the relay confirms.
type Store struct {
	db    DB
	table string // quoted
}

// NewStore returns a store on the checkpoint table schema.table.
func NewStore(db DB, schema, table string) *Store {
	return &Store{db: db, table: pgx.Identifier{schema, table}.Sanitize()}
}

// Checkpoint is a slot's row in the checkpoint table.
type Checkpoint struct {
	// LSN is the newest position saved for the slot.
	LSN pglogrepl.LSN
	// UpdatedAt is when it was saved.
	UpdatedAt time.Time
	// CommitTime is at or before the commit of every transaction after LSN
	// (see [Position]); zero when the row has none (NULL: saved when the
	// slot was created, or by an earlier version), and then UpdatedAt
	// stands for it.
	CommitTime time.Time
	// WriteAhead is true when the row was saved by a relay that saves
	// before it confirms: then a slot whose confirmed position is ahead of
	// LSN was not advanced by the relay. Rows saved by older relays lag
	// their confirmations and prove nothing.
	WriteAhead bool
}

// Since is a time no transaction after the checkpoint's position committed
// before, and what it is: the commit time of the last transaction before
// the position or, for a row without one, the time it was saved.
func (cp Checkpoint) Since() (time.Time, string) {
	if !cp.CommitTime.IsZero() {
		return cp.CommitTime, "the commit time saved with the checkpoint's position"
	}
	return cp.UpdatedAt, "the time the checkpoint was saved (it has no commit time: saved when the slot was created, or by an earlier version)"
}

// Load returns the stored checkpoint for slot; ok is false when there is
// none.
func (s *Store) Load(ctx context.Context, slot string) (cp Checkpoint, ok bool, err error) {
	var text string
	var commit *time.Time
	err = s.db.QueryRow(ctx, "SELECT lsn::text, updated_at, write_ahead, commit_time FROM "+s.table+" WHERE slot_name = $1", slot).
		Scan(&text, &cp.UpdatedAt, &cp.WriteAhead, &commit)
	if errors.Is(err, pgx.ErrNoRows) {
		return cp, false, nil
	}
	if err != nil {
		return cp, false, fmt.Errorf("read checkpoint of slot %q from %s: %w", slot, s.table, err)
	}
	if commit != nil {
		cp.CommitTime = *commit
	}
	cp.LSN, err = pglogrepl.ParseLSN(text)
	if err != nil {
		return cp, false, fmt.Errorf("read checkpoint of slot %q: %w", slot, err)
	}
	return cp, true, nil
}

// Save stores lsn as slot's checkpoint, with no commit time of its own:
// [Store.SaveAt] with a zero one.
func (s *Store) Save(ctx context.Context, slot string, lsn pglogrepl.LSN) error {
	return s.SaveAt(ctx, slot, Position{LSN: lsn})
}

// SaveAt stores pos as slot's checkpoint, before it is confirmed to
// PostgreSQL. It never moves a stored position backwards, and the stored
// commit time never becomes later than the commit of a transaction after
// the stored position: a save that moves the position stores pos's commit
// time; one that does not (a session's start), or that has none, keeps the
// time stored, or the time the row was saved when it has none (a row saved
// when its slot was created: the transactions after the slot's position
// committed after that).
func (s *Store) SaveAt(ctx context.Context, slot string, pos Position) error {
	var commit *time.Time
	if !pos.CommitTime.IsZero() {
		commit = &pos.CommitTime
	}
	t := s.table
	_, err := s.db.Exec(ctx, "INSERT INTO "+t+" (slot_name, lsn, updated_at, write_ahead, commit_time) VALUES ($1, $2::pg_lsn, now(), true, $3)"+
		" ON CONFLICT (slot_name) DO UPDATE SET lsn = GREATEST("+t+".lsn, EXCLUDED.lsn), updated_at = now(), write_ahead = true,"+
		" commit_time = CASE WHEN EXCLUDED.lsn > "+t+".lsn AND EXCLUDED.commit_time IS NOT NULL THEN EXCLUDED.commit_time"+
		" ELSE COALESCE("+t+".commit_time, "+t+".updated_at) END",
		slot, pos.LSN.String(), commit)
	if err != nil {
		return fmt.Errorf("save checkpoint %s of slot %q: %w", pos.LSN, slot, err)
	}
	return nil
}

// Init stores lsn as slot's checkpoint unless the slot has one already.
func (s *Store) Init(ctx context.Context, slot string, lsn pglogrepl.LSN) error {
	_, err := s.db.Exec(ctx, "INSERT INTO "+s.table+" (slot_name, lsn, updated_at, write_ahead) VALUES ($1, $2::pg_lsn, now(), true)"+
		" ON CONFLICT (slot_name) DO NOTHING", slot, lsn.String())
	if err != nil {
		return fmt.Errorf("store the first checkpoint of slot %q: %w", slot, err)
	}
	return nil
}

// Reset replaces slot's stored position, for a slot that was created or
// re-created on purpose: it may move the position backwards. The row has
// no commit time, and its updated_at stands for one: the transactions after
// a new slot's position committed after the slot was created, a moment
// before the row is saved (recover's margin covers that moment).
func (s *Store) Reset(ctx context.Context, slot string, lsn pglogrepl.LSN) error {
	return s.ResetAt(ctx, slot, Position{LSN: lsn})
}

// ResetAt is Reset with a commit time: pos.CommitTime, when set, must be
// no later than the commit of any transaction after pos.LSN (recover,
// which reset the row only after it published, gives the start of what
// it published).
func (s *Store) ResetAt(ctx context.Context, slot string, pos Position) error {
	var commit *time.Time
	if !pos.CommitTime.IsZero() {
		commit = &pos.CommitTime
	}
	_, err := s.db.Exec(ctx, "INSERT INTO "+s.table+" (slot_name, lsn, updated_at, write_ahead, commit_time) VALUES ($1, $2::pg_lsn, now(), true, $3)"+
		" ON CONFLICT (slot_name) DO UPDATE SET lsn = EXCLUDED.lsn, updated_at = now(), write_ahead = true, commit_time = EXCLUDED.commit_time",
		slot, pos.LSN.String(), commit)
	if err != nil {
		return fmt.Errorf("reset checkpoint of slot %q: %w", slot, err)
	}
	return nil
}
