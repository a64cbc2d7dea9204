package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/replication"
)

// PreparedSlot says what [PrepareSlot] found or did.
type PreparedSlot struct {
	// Created is true when PrepareSlot created the slot.
	Created bool
	// Slot is the slot as it is now.
	Slot replication.Slot
}

// PrepareSlot creates cfg's replication slot when it does not exist, so
// that the events committed from now on are kept for the relay's first
// `run`, and records the slot's position as the relay's checkpoint when
// the relay has none. It never moves an existing checkpoint: a slot the
// relay read before, and that was dropped, is not created again: it
// returns a [*SlotGapError], and `cdc-relay recover` repairs the gap. The
// role needs the REPLICATION attribute.
func PrepareSlot(ctx context.Context, db checkpoint.DB, cfg Config) (PreparedSlot, error) {
	var res PreparedSlot
	if err := replication.ValidSlotName(cfg.Slot); err != nil {
		return res, err
	}
	store := checkpoint.NewStore(db, cfg.CheckpointSchema, cfg.CheckpointTable)
	cp, haveStored, err := store.Load(ctx, cfg.Slot)
	if err != nil {
		return res, err
	}
	slot, err := replication.LookupSlot(ctx, db, cfg.Slot)
	switch {
	case errors.Is(err, replication.ErrSlotNotFound) && haveStored:
		// Creating it would hide the gap from `run` (a row of an earlier
		// version proves nothing about a slot that exists).
		return res, &SlotGapError{Slot: cfg.Slot, Checkpoint: cp, Dropped: true}
	case errors.Is(err, replication.ErrSlotNotFound):
		var text string
		if err := db.QueryRow(ctx, "SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput')", cfg.Slot).Scan(&text); err != nil {
			return res, fmt.Errorf("create replication slot %q: %w", cfg.Slot, err)
		}
		res.Created = true
		if slot, err = replication.LookupSlot(ctx, db, cfg.Slot); err != nil {
			return res, err
		}
	case err != nil:
		return res, err
	}
	res.Slot = slot
	if err := slot.Usable(); err != nil {
		return res, err
	}
	if haveStored {
		return res, nil
	}
	return res, store.Init(ctx, cfg.Slot, slot.ConfirmedFlush)
}
