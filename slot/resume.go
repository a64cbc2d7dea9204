package slot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/replication"
)

// Resume returns the position a session streams from, over q (queries,
// statements, and a transaction for the switch-over's backlog) and repl,
// and stores it in the checkpoint row before anything is confirmed. An
// error the operator must act on is a [fatal.Error].
//
// The checkpoint row is saved before each confirmation, so the slot's
// confirmed position is never ahead of it while only the relay confirms:
//   - a slot behind the row lost its last confirmations (PostgreSQL 15 does
//     not always persist them at shutdown): the session starts from the
//     row, and PostgreSQL skips the transactions that end before it;
//   - a slot ahead of the row was re-created or advanced by another
//     consumer: the transactions between were never read by the relay, so
//     the session refuses to start (see [GapError]) unless
//     Config.AcceptSlotLoss is set; except a slot a promoted standby
//     synchronised from the old primary (a failover slot), whose position
//     the relay confirmed there only once it was saved, in a save that
//     may not have reached the standby;
//   - a missing slot is created, unless the row shows an earlier slot
//     existed: the same gap, from the row to now.
//
// A slot it creates records its checkpoint row with the switch-over's
// backlog it adopts, in one transaction (recordNewSlot).
//
// The lines every start logs (the slot found, resuming from its position
// or from the row ahead of it) go to routine, the others to log: the
// relay logs the routine ones at debug after a lost connection.
func Resume(ctx context.Context, q DB, repl *replication.Conn, store *checkpoint.Store, cfg Config, log, routine *slog.Logger) (pglogrepl.LSN, error) {
	cp, haveStored, err := store.Load(ctx, cfg.Slot)
	if err != nil {
		return 0, err
	}
	slot, err := replication.LookupSlot(ctx, q, cfg.Slot)
	switch {
	case errors.Is(err, replication.ErrSlotNotFound):
		if haveStored && !cfg.AcceptSlotLoss {
			return 0, fatal.Error{Err: &GapError{Slot: cfg.Slot, Checkpoint: cp, Dropped: true}}
		}
		return createRecorded(ctx, q, repl, cfg, log, cp, haveStored)
	case err != nil:
		return 0, err
	}
	if !haveStored {
		if since, ok, err := unrecordedCreation(ctx, store, cfg); err != nil {
			return 0, err
		} else if ok {
			return recreateRecorded(ctx, q, repl, cfg, since, log)
		}
	}
	if err := checkFound(slot, cp, haveStored, cfg); err != nil {
		return 0, err
	}
	start := slot.ConfirmedFlush
	routine.Info("replication slot found", "slot", cfg.Slot, "confirmed", start, "wal_retained", slot.Retained())
	if haveStored {
		warnAdoptIgnored(log, slot, cfg)
	}
	switch {
	case !haveStored:
		log.Info("resuming from the slot's confirmed position (no checkpoint row yet)", "slot", cfg.Slot, "at", start)
	case start > cp.LSN && !cp.WriteAhead:
		// Saved by a relay from before the write-ahead rule: it lagged
		// its confirmations, so the slot being ahead proves nothing.
		log.Info("resuming from the slot's confirmed position (checkpoint row from an earlier version)", "slot", cfg.Slot, "at", start)
	case start > cp.LSN && cfg.AcceptSlotLoss:
		log.Warn("the slot is ahead of the relay's checkpoint (--accept-slot-loss): transactions between them are not relayed",
			"slot", cfg.Slot, "checkpoint", cp.LSN, "slot_confirmed", start)
	case start > cp.LSN && slot.Synced:
		// A failover slot a promoted standby copied: the old primary's
		// relay confirmed this position only once it was saved there,
		// and the standby had that WAL; the save did not reach it.
		log.Info("resuming from the slot's confirmed position, ahead of the checkpoint row: the slot was synchronised from the old primary, "+
			"where the relay had saved and confirmed it; the row's last saves did not reach this server before the failover",
			"slot", cfg.Slot, "at", start, "checkpoint", cp.LSN)
	case start > cp.LSN:
		return 0, fatal.Error{Err: &GapError{Slot: cfg.Slot, Checkpoint: cp, SlotLSN: start}}
	case cp.LSN > start:
		// Routine after a restart of PostgreSQL, which does not always
		// persist the slot's last confirmations at shutdown.
		routine.Info("resuming from the checkpoint row, ahead of the slot's confirmed position (the slot lost its last confirmations)",
			"slot", cfg.Slot, "at", cp.LSN, "slot_confirmed", start)
		start = cp.LSN
	default:
		routine.Info("resuming from the slot's confirmed position", "slot", cfg.Slot, "at", start)
	}
	if err := store.Save(ctx, cfg.Slot, start); err != nil {
		return 0, err
	}
	return start, nil
}

// checkFound returns why the session cannot stream slot, found by resume
// with the checkpoint row cp (if haveStored), or nil.
func checkFound(slot replication.Slot, cp checkpoint.Checkpoint, haveStored bool, cfg Config) error {
	if slot.Lost && haveStored && !cfg.AcceptSlotLoss {
		// Invalidated: as good as dropped, since the relay's position.
		return fatal.Error{Err: &GapError{Slot: cfg.Slot, Checkpoint: cp, Dropped: true, Invalidated: true}}
	}
	if err := slot.Usable(); err != nil {
		return fatal.Error{Err: err}
	}
	if slot.ConfirmedFlush == 0 {
		// Listed before its consistent point is found: it is being
		// created (by migrate, say), and waits for open transactions.
		return fmt.Errorf("replication slot %q is still being created (it waits for the transactions open when it began); trying again", cfg.Slot)
	}
	if !haveStored && slot.Active {
		// Not a relay's: a relay saves the row before it streams. The
		// connector the relay takes over from (Debezium's, say) still
		// reads the slot, and confirms positions past any the relay could
		// save now; its last is where the relay starts, once it stopped.
		return &InUseError{Slot: slot}
	}
	if !haveStored && cfg.adoptsRows() {
		// A slot the relay creates records its checkpoint row with the
		// backlog it adopts: this one did not (a migrate creating it now,
		// a relay stopped before it could, or someone else).
		return fmt.Errorf("replication slot %q exists but the relay never recorded it, and tables have pending values or adopt:, whose rows from before the slot "+
			"would never be sent: if `cdc-relay migrate --config` is creating it now, this passes once it is done; otherwise drop the slot "+
			"(SELECT pg_drop_replication_slot('%s')) so that the relay creates it and adopts them, or run `cdc-relay migrate --config FILE` "+
			"without adopt: to start from the slot as it is, without adopting", cfg.Slot, cfg.Slot)
	}
	return nil
}

// InUseError says the relay cannot start on a slot that another consumer
// streams and that the relay never read (it has no checkpoint row for it):
// the slot of a connector the relay is to take over, still running. It is
// not fatal: the relay tries again, and starts from the slot's confirmed
// position once that consumer has stopped.
type InUseError struct {
	// Slot is the slot as found, Active, with its ActivePID and ActiveApp.
	Slot replication.Slot
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("replication slot %q is streamed by another consumer (%s) and the relay never read it: "+
		"the relay takes it over from its confirmed position once that consumer has stopped, and sends again what the consumer read after its last confirmation: "+
		"stop the consumer (a Debezium connector: DELETE /connectors/NAME on Kafka Connect's REST API, which confirms its last position); trying again",
		e.Slot.Name, e.Slot.Consumer())
}

// warnAdoptIgnored says, when a table of cfg has an adopt predicate, that
// it is ignored: slot exists, and rows are adopted only when the relay
// creates its slot. The operator may have added adopt: after the slot was
// created, expecting the rows to be sent.
func warnAdoptIgnored(log *slog.Logger, slot replication.Slot, cfg Config) {
	if !cfg.Adopts() {
		return
	}
	log.Warn("adopt: is ignored: the replication slot exists, and rows are adopted only when the relay creates its slot "+
		"(if this relay created it, they were adopted then: remove adopt: from the config). To adopt now, stop every relay of the slot, "+
		"drop the slot and its checkpoint row, and start again: events committed meanwhile that the predicate does not select are not sent; "+
		"or publish the rows beside the running relay with `cdc-relay backfill`",
		"slot", cfg.Slot, "confirmed", slot.ConfirmedFlush,
		"drop", fmt.Sprintf("SELECT pg_drop_replication_slot('%s'); DELETE FROM %s WHERE slot_name = '%s'",
			cfg.Slot, pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize(), cfg.Slot))
}

// GapError says the relay never read a stretch of the WAL: its slot was
// dropped (Dropped; after a failover to a standby that had no copy of it,
// say) or invalidated (Invalidated too), or re-created or advanced by
// another consumer (SlotLSN ahead of the checkpoint). Outbox rows
// committed in the gap may be missing from Kafka; `cdc-relay recover`
// publishes them again, and so does a relay run with --on-slot-loss
// recover (relay.Config.OnSlotLoss).
type GapError struct {
	// Slot is the replication slot's name.
	Slot string
	// Checkpoint is the relay's last saved position on the slot.
	Checkpoint checkpoint.Checkpoint
	// SlotLSN is the slot's confirmed position, when it exists.
	SlotLSN pglogrepl.LSN
	// Dropped is true when the slot does not exist, or was invalidated.
	Dropped bool
	// Invalidated is true when the slot exists but PostgreSQL invalidated
	// it: it removed WAL the slot still needed (max_slot_wal_keep_size).
	Invalidated bool
}

// Error says what the gap is and the ways out; its text is what the
// relay has always said.
func (e *GapError) Error() string {
	ago := time.Since(e.Checkpoint.UpdatedAt).Round(time.Second)
	at, which := e.Checkpoint.Since()
	what := fmt.Sprintf("Outbox rows committed since then may be missing from Kafka. "+
		"Run `cdc-relay recover` with the same flags to publish them again from the outbox table (by its timestamp column, from %s: %s, less recover's --margin, 10m unless you give another) and resume, "+
		"start with --on-slot-loss recover to have the relay do so itself, or start with --accept-slot-loss to go on without them", at.UTC().Format(time.RFC3339), which)
	if e.Invalidated {
		return fmt.Sprintf("replication slot %q was invalidated by PostgreSQL: it removed WAL the slot still needed (max_slot_wal_keep_size), "+
			"and the relay's checkpoint shows it read the slot up to %s, saved %s ago (%s). %s; and consider a larger max_slot_wal_keep_size",
			e.Slot, e.Checkpoint.LSN, ago, e.Checkpoint.UpdatedAt.UTC().Format(time.RFC3339), what)
	}
	if e.Dropped {
		return fmt.Sprintf("replication slot %q does not exist, but the relay's checkpoint shows it read the slot up to %s, saved %s ago (%s): the slot was dropped, or PostgreSQL failed over to a server without it. %s",
			e.Slot, e.Checkpoint.LSN, ago, e.Checkpoint.UpdatedAt.UTC().Format(time.RFC3339), what)
	}
	return fmt.Sprintf("replication slot %q is at %s, ahead of the relay's checkpoint %s saved %s ago (%s): the slot was re-created or advanced by another consumer, "+
		"and the relay never read the WAL from %s to %s. %s",
		e.Slot, e.SlotLSN, e.Checkpoint.LSN, ago, e.Checkpoint.UpdatedAt.UTC().Format(time.RFC3339), e.Checkpoint.LSN, e.SlotLSN, what)
}

// checkAdoptBeforeSlot plans and counts cfg's adopt predicates
// (CheckAdopt) before the slot is created, and logs what they select. A
// predicate PostgreSQL refuses for good, or that selects no row, stops the
// relay with no slot created.
func checkAdoptBeforeSlot(ctx context.Context, q DB, cfg Config, log *slog.Logger) error {
	n, err := CheckAdopt(ctx, q, cfg)
	var nothing *NothingToAdoptError
	switch {
	case errors.As(err, &nothing):
		return fatal.Error{Err: fmt.Errorf("%w (no slot was created); then start the relay again", err)}
	case err != nil && adoptRefused(err, cfg):
		return refuseAdopt(err, "no slot was created", cfg)
	case err != nil:
		return err
	}
	if cfg.Adopts() && log != nil {
		log.Info("adopt selects rows now; the slot adopts those committed before its consistent point", "rows", n)
	}
	return nil
}

// createRecorded creates cfg's slot and records it (recordNewSlot: its
// checkpoint row, and the backlog it adopts), and returns where the
// session streams from. cp and haveStored are the checkpoint row found.
// A slot that will adopt rows is created only once PostgreSQL has planned
// the adopt predicates (CheckAdopt); one it refuses for good stops the
// relay (refuseAdopt), before the slot waits for open transactions.
func createRecorded(ctx context.Context, q DB, repl *replication.Conn, cfg Config, log *slog.Logger, cp checkpoint.Checkpoint, haveStored bool) (pglogrepl.LSN, error) {
	if !haveStored {
		if err := checkAdoptBeforeSlot(ctx, q, cfg, log); err != nil {
			return 0, err
		}
	}
	adopting := cfg
	if haveStored {
		// A slot created again over a gap: the first one adopted what
		// the predicates select.
		adopting = cfg.withoutAdopt()
	}
	created, _, err := createAdopting(ctx, q, repl, adopting, log)
	if err != nil {
		return 0, err
	}
	lsn := created.ConsistentPoint
	if haveStored {
		log.Warn("replication slot created again (--accept-slot-loss): transactions committed while it did not exist are not relayed",
			"slot", cfg.Slot, "checkpoint", cp.LSN, "at", lsn)
	} else {
		log.Info("replication slot created", "slot", cfg.Slot, "at", lsn)
	}
	return lsn, nil
}

// recreateRecorded heals cfg's slot, created by a creator stopped before
// it recorded it (unrecordedCreation, begun at since), as
// recreateUnrecorded does, and returns where the session streams from:
// the new slot's consistent point.
func recreateRecorded(ctx context.Context, q DB, repl *replication.Conn, cfg Config, since time.Time, log *slog.Logger) (pglogrepl.LSN, error) {
	created, _, err := recreateUnrecorded(ctx, q, repl, cfg, since, log)
	if err != nil {
		return 0, err
	}
	log.Info("replication slot created again", "slot", cfg.Slot, "at", created.ConsistentPoint)
	return created.ConsistentPoint, nil
}
