package recovery

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/slot"
)

// gap is what findGap found: the stretch of WAL the relay never read, or
// none, and whether the slot was invalidated.
type gap struct {
	slot.GapError
	none bool // the relay read every transaction
	lost bool // the slot exists but was invalidated, and must be dropped
}

// findGap compares the relay's checkpoint row with the slot, as resume
// does: a slot ahead of a write-ahead row, or missing or invalidated
// while a row exists, is a gap.
func findGap(ctx context.Context, pool *pgxpool.Pool, store *checkpoint.Store, slotName string) (gap, error) {
	cp, haveStored, err := store.Load(ctx, slotName)
	if err != nil {
		return gap{}, err
	}
	g := gap{GapError: slot.GapError{Slot: slotName, Checkpoint: cp}}
	s, err := replication.LookupSlot(ctx, pool, slotName)
	switch {
	case errors.Is(err, replication.ErrSlotNotFound):
		g.Dropped = true
		g.none = !haveStored
	case err != nil:
		return g, err
	case s.Lost && haveStored:
		// Invalidated (max_slot_wal_keep_size): as good as dropped.
		g.Dropped, g.lost = true, true
	default:
		if err := s.Usable(); err != nil {
			return g, err
		}
		g.SlotLSN = s.ConfirmedFlush
		// As in resume: a row of an earlier version proves nothing.
		g.none = !haveStored || !cp.WriteAhead || s.ConfirmedFlush <= cp.LSN
	}
	return g, nil
}

// slotToRecreate makes g, an existing slot's, the gap of a slot to drop
// and create again (Options.RecreateSlot), from the relay's
// checkpoint; a slot missing already is created again as for any loss.
// Without a checkpoint there is no position to publish again from.
func slotToRecreate(g gap) (gap, error) {
	if g.Checkpoint.LSN == 0 {
		return g, fatal.Error{Err: fmt.Errorf("--recreate-slot: the relay has no checkpoint for slot %q, so no time to publish the outbox rows again from: "+
			"drop the slot yourself (SELECT pg_drop_replication_slot('%s')), then run cdc-relay recover --since TIME", g.Slot, g.Slot)}
	}
	if !g.Dropped {
		g.Dropped, g.lost, g.none, g.SlotLSN = true, true, false, 0
	}
	return g, nil
}

// recreateSlot creates the relay's slot again, dropping it first if it
// was invalidated (or Options.RecreateSlot), before any row is read: whatever commits from now on is
// kept. It returns the new slot's position. A new slot is a new stream:
// the checkpoint row takes a new stream id first, so that no crash leaves
// the new slot with the id of the old.
func recreateSlot(ctx context.Context, pool *pgxpool.Pool, cfg Config, lost bool) (pglogrepl.LSN, error) {
	if err := checkpoint.NewStore(pool, cfg.CheckpointSchema, cfg.CheckpointTable).SetStream(ctx, cfg.Slot, checkpoint.NewStreamID()); err != nil {
		return 0, err
	}
	if lost {
		if _, err := pool.Exec(ctx, "SELECT pg_drop_replication_slot($1)", cfg.Slot); err != nil {
			return 0, fmt.Errorf("drop replication slot %q (invalidated, or --recreate-slot) to create it again: %w", cfg.Slot, err)
		}
		cfg.Logger.Info("dropped the replication slot, to create it again", "slot", cfg.Slot)
	}
	repl, err := replication.Connect(ctx, cfg.PostgresURL, "cdc-relay recover", cfg.ReplicationTimeout)
	if err != nil {
		return 0, err
	}
	stopWatch := slot.WatchCreation(ctx, cfg.PostgresURL, cfg.Slot, cfg.Logger)
	at, err := repl.CreateSlot(ctx, cfg.Slot)
	stopWatch()
	_ = repl.Close(context.Background())
	if err != nil {
		return 0, err
	}
	cfg.Logger.Info("replication slot created", "slot", cfg.Slot, "at", at.ConsistentPoint)
	return at.ConsistentPoint, nil
}
