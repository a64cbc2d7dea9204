package setup

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/slot"
)

// AdoptSlotExistsError refuses an adopt predicate when the relay's slot
// exists: rows are adopted only when the relay creates its slot, as of
// the snapshot the new slot exports, and never again.
type AdoptSlotExistsError struct {
	// Slot is the replication slot's name.
	Slot string
	// CheckpointTable is the relay's checkpoint table, quoted.
	CheckpointTable string
}

func (e *AdoptSlotExistsError) Error() string {
	return fmt.Sprintf("replication slot %q exists: adopt selects rows only when the relay creates its slot, as of the snapshot the new slot exports, "+
		"and this slot was created before. If the switch-over was done, remove adopt (adopt: in the config file, --adopt) and run migrate again. "+
		"To adopt again, stop every relay of the slot, drop it and its checkpoint row (SELECT pg_drop_replication_slot('%s'); DELETE FROM %s WHERE slot_name = '%s') "+
		"and run migrate again: events committed meanwhile that the predicate does not select are not sent. "+
		"Or publish the rows beside the running relay with `cdc-relay backfill --table TABLE --where 'PREDICATE'`",
		e.Slot, e.Slot, e.CheckpointTable, e.Slot)
}

// checkAdopt checks, before Migrate creates anything, that rc's adopt
// predicates can be adopted: the slot does not exist yet, or its creator
// stopped before it recorded it (slot.UnrecordedCreation), unless noSlot
// (the first run creates it, and adopts), and PostgreSQL accepts each
// predicate on its table and selects a row now (slot.CheckAdopt), or
// fails with its message.
func checkAdopt(ctx context.Context, conn *pgx.Conn, rc Config, noSlot bool) error {
	if !rc.Adopts() {
		return nil
	}
	for i, t := range rc.Tables {
		if t.Adopts() && t.Mapping.IDColumn == "" {
			return fmt.Errorf("table %s: adopt needs its id column: the poller reads each adopted row by its id", outbox.Sources{Tables: rc.Tables}.TableNames()[i])
		}
	}
	if !noSlot {
		_, err := replication.LookupSlot(ctx, conn, rc.Slot)
		switch {
		case err == nil:
			// Unless its creator stopped before it recorded it: then
			// slot.Prepare creates it again, and adopts.
			unrecorded, err := slot.UnrecordedCreation(ctx, conn, rc.Config)
			if err != nil {
				return err
			}
			if !unrecorded {
				return &AdoptSlotExistsError{Slot: rc.Slot, CheckpointTable: pgx.Identifier{rc.CheckpointSchema, rc.CheckpointTable}.Sanitize()}
			}
		case !errors.Is(err, replication.ErrSlotNotFound):
			return err
		}
	}
	_, err := slot.CheckAdopt(ctx, conn, rc.Config)
	return err
}
