package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/preflight"
	"github.com/cdc-relay/cdc-relay/recovery"
)

// SlotLoss is what a running relay does when it finds a gap in the WAL it
// read (a [SlotGapError]): Config.OnSlotLoss.
type SlotLoss string

const (
	// SlotLossRefuse ends Run with the SlotGapError, for a person to run
	// `cdc-relay recover` (or start with --accept-slot-loss).
	SlotLossRefuse SlotLoss = "refuse"
	// SlotLossRecover repairs the gap as `cdc-relay recover` does: it
	// creates the slot if it is missing or invalidated, publishes again
	// the outbox rows written since the checkpoint (consumers may see some
	// twice; none is lost), and streams on.
	SlotLossRecover SlotLoss = "recover"
)

// onSlotLoss is the configured Config.OnSlotLoss, refuse when unset.
func (c Config) onSlotLoss() SlotLoss {
	if c.OnSlotLoss == "" {
		return SlotLossRefuse
	}
	return c.OnSlotLoss
}

// checkRecoverNeedsTable refuses --on-slot-loss recover for a relay of
// messages only (preflight.CheckRecoverNeedsTable).
func (c Config) checkRecoverNeedsTable() error {
	return preflight.CheckRecoverNeedsTable(c.OnSlotLoss == SlotLossRecover, len(c.Tables))
}

// checkSlotLoss checks OnSlotLoss against the rest of c: a known value,
// and for SlotLossRecover what Recover needs (a timestamp column in every
// table) and no AcceptSlotLoss.
func (c Config) checkSlotLoss() error {
	switch c.OnSlotLoss {
	case "", SlotLossRefuse:
		return nil
	case SlotLossRecover:
	default:
		return fmt.Errorf("--on-slot-loss %q: want %s or %s", c.OnSlotLoss, SlotLossRefuse, SlotLossRecover)
	}
	if c.AcceptSlotLoss {
		return errors.New("--on-slot-loss recover and --accept-slot-loss exclude each other: recover publishes the rows of a gap in the WAL again, " +
			"--accept-slot-loss goes on without them; choose one")
	}
	if err := checkRecoverable(c); err != nil {
		return fmt.Errorf("--on-slot-loss recover cannot be used: %w", err)
	}
	return nil
}

// recoverSlot repairs gap, which ended the last session, as `cdc-relay
// recover` does ([Recover], [recovery.Run]), and logs and counts what it did. The failed
// session's server processes are ended first, so that Recover can take
// the slot's leadership. An error a reconnect cannot cure (classify) is
// fatal; after any other, the next session finds the gap again and
// this is tried again.
func (rn *runner) recoverSlot(ctx context.Context, gap *SlotGapError) error {
	cfg := rn.cfg
	rn.log.Warn("the relay never read part of the WAL (--on-slot-loss recover): publishing the outbox rows written since its checkpoint again",
		"slot", cfg.Slot, "gap", gap.Error())
	if err := rn.orphans.End(ctx, rn.pool, cfg.Slot, cfg.ReplicationTimeout, rn.log); err != nil {
		return err
	}
	res, err := Recover(ctx, cfg, recovery.Options{})
	switch {
	case errors.Is(err, recovery.ErrNothingToRecover):
		// Repaired meanwhile, by `cdc-relay recover` or another relay.
		rn.log.Info("nothing to recover any more: the gap was repaired meanwhile", "slot", cfg.Slot)
		return nil
	case err != nil:
		return fatal.Classify(fmt.Errorf("repair the gap in the WAL of replication slot %q (--on-slot-loss recover): %w", cfg.Slot, err))
	}
	rn.metrics.SlotRecoveries.Inc()
	rn.metrics.SlotRecoveryRows.WithLabelValues("published").Add(float64(res.Published))
	rn.metrics.SlotRecoveryRows.WithLabelValues("parked").Add(float64(res.Parked))
	rn.state.slotRecoveries.Add(1)
	rn.log.Warn("repaired the gap in the WAL: outbox rows published again (consumers may see some twice); streaming on",
		"slot", cfg.Slot, "since", res.Since, "gap_from", res.Gap.Checkpoint.LSN, "gap_to", res.Gap.SlotLSN,
		"rows", res.Rows, "published", res.Published, "parked", res.Parked, "resume", res.Resume, "parked_for_webhooks", res.Adopted)
	recovery.WarnMessagesLost(rn.log, res, cfg.Messages)
	return nil
}
