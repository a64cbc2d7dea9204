package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// NewStreamID returns a new random stream id: 16 random bytes, in hex.
// Two slots never get the same one, whatever database they are in.
func NewStreamID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails (it crashes instead)
	return hex.EncodeToString(b[:])
}

// Stream returns the stream id of slot's row: the stream its positions
// belong to, new whenever the relay created the slot. It returns "" when
// the row has none (written by an earlier version) or there is no row.
func (s *Store) Stream(ctx context.Context, slot string) (string, error) {
	var id *string
	err := s.db.QueryRow(ctx, "SELECT stream_id FROM "+s.table+" WHERE slot_name = $1", slot).Scan(&id)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("read the stream id of slot %q from %s: %w", slot, s.table, err)
	}
	if id == nil {
		return "", nil
	}
	return *id, nil
}

// SetStream stores id as the stream of slot's row, which must exist
// (Save, Init or Reset it first); it is an error when there is none.
func (s *Store) SetStream(ctx context.Context, slot, id string) error {
	tag, err := s.db.Exec(ctx, "UPDATE "+s.table+" SET stream_id = $2 WHERE slot_name = $1", slot, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = errors.New("no checkpoint row")
	}
	if err != nil {
		return fmt.Errorf("store the stream id of slot %q in %s: %w", slot, s.table, err)
	}
	return nil
}
