package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/replication"
)

// resume returns the position a session streams from: the slot's confirmed
// position, checked against the relay's checkpoint row. A missing slot is
// created, unless the checkpoint row shows the relay confirmed positions
// on an earlier one: then events may be missing from Kafka, and the
// operator must accept that (Config.AcceptSlotLoss).
func resume(ctx context.Context, q replication.Querier, repl *replication.Conn, store *checkpoint.Store, cfg Config, log *slog.Logger) (pglogrepl.LSN, error) {
	stored, haveStored, err := store.Load(ctx, cfg.Slot)
	if err != nil {
		return 0, err
	}
	slot, err := replication.LookupSlot(ctx, q, cfg.Slot)
	switch {
	case errors.Is(err, replication.ErrSlotNotFound):
		if haveStored && !cfg.AcceptSlotLoss {
			return 0, fatalError{fmt.Errorf("replication slot %q does not exist, but the checkpoint table shows the relay confirmed %s on it: "+
				"the slot was dropped, and events committed since then may be missing from Kafka. "+
				"Check, then start with --accept-slot-loss to create a new slot", cfg.Slot, stored)}
		}
		lsn, err := repl.CreateSlot(ctx, cfg.Slot)
		if err != nil {
			return 0, classify(err)
		}
		if err := store.Reset(ctx, cfg.Slot, lsn); err != nil {
			return 0, err
		}
		log.Info("replication slot created", "slot", cfg.Slot, "at", lsn)
		return lsn, nil
	case err != nil:
		return 0, err
	}
	if err := slot.Usable(); err != nil {
		return 0, fatalError{err}
	}
	if haveStored && stored > slot.ConfirmedFlush {
		log.Warn("the slot is behind the relay's checkpoint; transactions after the slot's position will be sent again",
			"slot", cfg.Slot, "slot_confirmed", slot.ConfirmedFlush, "checkpoint", stored)
	}
	log.Info("resuming from the slot's confirmed position", "slot", cfg.Slot, "at", slot.ConfirmedFlush)
	return slot.ConfirmedFlush, nil
}
