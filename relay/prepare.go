package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/replication"
)

// PreparedSlot says what [PrepareSlot] found or did.
type PreparedSlot struct {
	// Created is true when PrepareSlot created the slot.
	Created bool
	// Slot is the slot as it is now.
	Slot replication.Slot
	// Adopted is the number of rows with a pending status that the new
	// slot adopted (see adoptBacklog): the poller sends them.
	Adopted int64
}

// PrepareSlot creates cfg's replication slot when it does not exist, so
// that the events committed from now on are kept for the relay's first
// `run`, and records the slot's position as the relay's checkpoint when
// the relay has none; a slot it creates starts a new stream (a new stream
// id in the row, see recordStart). It never moves an existing checkpoint: a slot the
// relay read before, and that was dropped, is not created again: it
// returns a [*SlotGapError], and `cdc-relay recover` repairs the gap. The
// role needs the REPLICATION attribute. When a table has pending values,
// the new slot adopts the rows that have one (the switch-over's backlog),
// over a replication connection to cfg.PostgresURL that exports the
// slot's snapshot.
func PrepareSlot(ctx context.Context, db PrepareDB, cfg Config) (PreparedSlot, error) {
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
		if res.Adopted, err = createSlot(ctx, db, cfg); err != nil {
			return res, err
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

// PrepareDB is what PrepareSlot needs of a connection (*pgx.Conn has it).
type PrepareDB interface {
	checkpoint.DB
	TxBeginner
}

// createSlot creates cfg's slot: with a function call, or, when a table
// has pending values, over a replication connection whose exported
// snapshot adopts the switch-over's backlog with the checkpoint row
// (recordNewSlot). It returns how many rows were adopted.
func createSlot(ctx context.Context, db PrepareDB, cfg Config) (int64, error) {
	if len(cfg.adoptables()) == 0 {
		return 0, createSlotSQL(ctx, db, cfg)
	}
	repl, err := replication.Connect(ctx, cfg.PostgresURL, "cdc-relay migrate", cmp.Or(cfg.ReplicationTimeout, DefaultConfig().ReplicationTimeout))
	if err != nil {
		return 0, err
	}
	defer repl.Close(context.Background())
	created, err := repl.CreateSlot(ctx, cfg.Slot)
	if err != nil {
		return 0, err
	}
	return recordNewSlot(ctx, db, repl, cfg, created, cfg.Logger)
}

// createSlotSQL creates cfg's slot with a function call (on PostgreSQL
// 17+ a failover slot: not temporary, no two-phase, failover, arguments
// earlier versions do not have) and records its start (recordStart: the
// checkpoint row, a new stream id). A slot whose recording failed stays,
// without a row or without a stream id: the next `run` resumes from it,
// and gives the row an id.
func createSlotSQL(ctx context.Context, db PrepareDB, cfg Config) error {
	f, err := replication.LookupFailover(ctx, db, cfg.Slot)
	if err != nil {
		return err
	}
	sql := "SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput')"
	if f.Supported() {
		sql = "SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput', false, false, true)"
	}
	var text string
	if err := db.QueryRow(ctx, sql, cfg.Slot).Scan(&text); err != nil {
		return fmt.Errorf("create replication slot %q: %w", cfg.Slot, err)
	}
	lsn, err := pglogrepl.ParseLSN(text)
	if err != nil {
		return fmt.Errorf("create replication slot %q: %w", cfg.Slot, err)
	}
	return pgx.BeginTxFunc(ctx, db, pgx.TxOptions{}, func(tx pgx.Tx) error { return recordStart(ctx, tx, cfg, lsn) })
}
