package checkpoint

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PublicationMarks returns the publication marks of slot's row (JSON, as
// the relay wrote them with SetPublicationMarks): what its table watches
// found right when a relay last started on the slot. It returns "" when the
// row has none (written by an earlier version) or there is no row.
func (s *Store) PublicationMarks(ctx context.Context, slot string) (string, error) {
	var marks *string
	err := s.db.QueryRow(ctx, "SELECT publication_marks::text FROM "+s.table+" WHERE slot_name = $1", slot).Scan(&marks)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("read the publication marks of slot %q from %s: %w", slot, s.table, err)
	}
	if marks == nil {
		return "", nil
	}
	return *marks, nil
}

// SetPublicationMarks stores marks (a JSON document) as the publication
// marks of slot's row; with no row it stores nothing.
func (s *Store) SetPublicationMarks(ctx context.Context, slot, marks string) error {
	if _, err := s.db.Exec(ctx, "UPDATE "+s.table+" SET publication_marks = $2::jsonb WHERE slot_name = $1", slot, marks); err != nil {
		return fmt.Errorf("store the publication marks of slot %q in %s: %w", slot, s.table, err)
	}
	return nil
}
