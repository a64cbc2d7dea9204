package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// creatingKey is the checkpoint table's key of slot's creation intent
// (see [Store.BeginCreate]). A slot's name has only a-z, 0-9 and _, so the
// key is never a slot's: [Store.Load] of the slot, and relays of earlier
// versions, do not see the row.
func creatingKey(slot string) string { return slot + "#creating" }

// BeginCreate records, before the relay creates slot and adopts rows in
// the snapshot the new slot exports, that it is creating it: a row keyed
// "slot#creating" with lsn 0/0, and the time. The adoption commits with
// the slot's own row and [Store.EndCreate], in one transaction; so a slot
// found with this row begun and without its own was created by a relay
// (or `migrate`) stopped before that commit (killed, or PostgreSQL
// restarted), and nothing of its adoption was committed: the slot may be
// dropped and created again, and the rows adopted again, none twice
// ([Store.Creating]). Recording again begins again.
func (s *Store) BeginCreate(ctx context.Context, slot string) error {
	_, err := s.db.Exec(ctx, "INSERT INTO "+s.table+" (slot_name, lsn, updated_at, write_ahead) VALUES ($1, '0/0', now(), true)"+
		" ON CONFLICT (slot_name) DO UPDATE SET lsn = '0/0', updated_at = now()", creatingKey(slot))
	if err != nil {
		return fmt.Errorf("record that the relay creates slot %q (in %s) before it creates it: %w", slot, s.table, err)
	}
	return nil
}

// Creating reports whether the creation of slot was begun
// ([Store.BeginCreate]) and never ended ([Store.EndCreate]), and when it
// was begun.
func (s *Store) Creating(ctx context.Context, slot string) (since time.Time, ok bool, err error) {
	err = s.db.QueryRow(ctx, "SELECT updated_at FROM "+s.table+" WHERE slot_name = $1 AND lsn = '0/0'", creatingKey(slot)).Scan(&since)
	if errors.Is(err, pgx.ErrNoRows) {
		return since, false, nil
	}
	if err != nil {
		return since, false, fmt.Errorf("read whether slot %q is being created, from %s: %w", slot, s.table, err)
	}
	return since, true, nil
}

// EndCreate records that slot's creation ended, with the new slot at lsn
// (its consistent point, never 0/0), in the transaction that records the
// new slot's row and what it adopts. The row stays (the relay's role may
// not delete from the checkpoint table), and says when and where the
// last creation ended.
func (s *Store) EndCreate(ctx context.Context, slot string, lsn pglogrepl.LSN) error {
	_, err := s.db.Exec(ctx, "UPDATE "+s.table+" SET lsn = $2::pg_lsn, updated_at = now() WHERE slot_name = $1", creatingKey(slot), lsn.String())
	if err != nil {
		return fmt.Errorf("record that the creation of slot %q ended (in %s): %w", slot, s.table, err)
	}
	return nil
}
