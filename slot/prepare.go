package slot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/leader"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/status"
)

// Prepared says what [Prepare] found or did.
type Prepared struct {
	// Created is true when Prepare created the slot.
	Created bool
	// Recreated is true when the slot it created replaced one whose
	// creator was stopped before it recorded it (unrecordedCreation).
	Recreated bool
	// Slot is the slot as it is now.
	Slot replication.Slot
	// Adopted is the number of rows with a pending status that the new
	// slot adopted (see adoptBacklog): the poller sends them.
	Adopted int64
	// InUse is true when the slot exists, the relay never read it (no
	// checkpoint row) and another consumer streams it (Slot.ActivePID): a
	// connector the relay is to take over, still running. Prepare records
	// no checkpoint for it, since the consumer confirms positions past
	// any recorded now: the first run starts from the slot's confirmed
	// position once that consumer has stopped.
	InUse bool
}

// Prepare creates cfg's replication slot when it does not exist, so
// that the events committed from now on are kept for the relay's first
// `run`, and records the slot's position as the relay's checkpoint when
// the relay has none, unless another consumer streams the slot
// (Prepared.InUse: the relay takes it over once it stopped); a slot it
// creates starts a new stream (a new stream
// id in the row, see recordStart). It never moves an existing checkpoint: a slot the
// relay read before, and that was dropped, is not created again: it
// returns a [*GapError], and `cdc-relay recover` repairs the gap. The
// role needs the REPLICATION attribute. When a table has pending values,
// the new slot adopts the rows that have one (the switch-over's backlog),
// over a replication connection to cfg.PostgresURL that exports the
// slot's snapshot.
func Prepare(ctx context.Context, db DB, cfg Config) (Prepared, error) {
	if err := replication.ValidSlotName(cfg.Slot); err != nil {
		return Prepared{}, err
	}
	res, err := prepareSlot(ctx, db, cfg, false)
	if !errors.Is(err, errMustLead) {
		return res, err
	}
	unlock, err := leadPrepare(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer unlock()
	return prepareSlot(ctx, db, cfg, true)
}

// errMustLead says prepareSlot is to create a slot that adopts rows, or
// create again one whose creator stopped before it recorded it, which
// only the slot's leader may do.
var errMustLead = errors.New("creating the slot needs its leadership")

// prepareSlot is Prepare; leading says the slot's leadership lock is
// held (leadPrepare), which creating a slot that adopts rows needs
// (errMustLead otherwise).
func prepareSlot(ctx context.Context, db DB, cfg Config, leading bool) (Prepared, error) {
	var res Prepared
	store := checkpoint.NewStore(db, cfg.CheckpointSchema, cfg.CheckpointTable)
	cp, haveStored, err := store.Load(ctx, cfg.Slot)
	if err != nil {
		return res, err
	}
	adopts := cfg.adoptsRows()
	slot, err := replication.LookupSlot(ctx, db, cfg.Slot)
	switch {
	case errors.Is(err, replication.ErrSlotNotFound) && haveStored:
		// Creating it would hide the gap from `run` (a row of an earlier
		// version proves nothing about a slot that exists).
		return res, &GapError{Slot: cfg.Slot, Checkpoint: cp, Dropped: true}
	case errors.Is(err, replication.ErrSlotNotFound) && adopts && !leading:
		return res, errMustLead
	case errors.Is(err, replication.ErrSlotNotFound):
		if res.Adopted, err = createSlot(ctx, db, cfg, time.Time{}); err != nil {
			return res, err
		}
		res.Created = true
	case err != nil:
		return res, err
	case !haveStored:
		since, unrecorded, err := unrecordedCreation(ctx, store, cfg)
		switch {
		case err != nil:
			return res, err
		case unrecorded && !leading:
			return res, errMustLead
		case unrecorded:
			if res.Adopted, err = createSlot(ctx, db, cfg, since); err != nil {
				return res, err
			}
			res.Created, res.Recreated = true, true
		}
	}
	if res.Created {
		if slot, err = replication.LookupSlot(ctx, db, cfg.Slot); err != nil {
			return res, err
		}
	}
	res.Slot = slot
	if err := slot.Usable(); err != nil {
		return res, err
	}
	if haveStored {
		return res, nil
	}
	if slot.Active && !res.Created && slot.ConfirmedFlush != 0 { // 0: being created (by another migrate, say), not streamed
		res.InUse = true
		return res, nil
	}
	return res, store.Init(ctx, cfg.Slot, slot.ConfirmedFlush)
}

// leadPrepare takes cfg's slot's leadership lock on a session of its own
// to cfg.PostgresURL, so that no relay streams or creates the slot while
// `migrate` creates it and adopts rows, and so that, migrate killed, the
// lock goes with that idle session at once, while the adopting statement
// may run on (the next creator ends it: endCreator). It waits a few
// seconds for a lock held by a session still on its way out; a relay
// that leads the slot creates it itself. unlock releases it.
func leadPrepare(ctx context.Context, cfg Config) (unlock func(), err error) {
	pc, err := pgx.ParseConfig(cfg.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("parse PostgreSQL URL: %w", pgerr.Parse(err))
	}
	pc.RuntimeParams["application_name"] = "cdc-relay migrate"
	conn, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connect to take the leadership lock of slot %q: %w", cfg.Slot, err)
	}
	unlock = func() { _ = conn.Close(context.WithoutCancel(ctx)) }
	deadline := time.Now().Add(leadPrepareWait)
	for {
		var ok bool
		if err := conn.QueryRow(ctx, leader.TryLockSQL, cfg.Slot).Scan(&ok); err != nil {
			unlock()
			return nil, fmt.Errorf("take the leadership lock of slot %q to create it: %w", cfg.Slot, err)
		}
		if ok {
			return unlock, nil
		}
		if time.Now().After(deadline) {
			unlock()
			return nil, fmt.Errorf("replication slot %q is led by a running relay (it holds the slot's leadership lock), which creates the slot and adopts the rows itself: "+
				"let it, or stop it and run migrate again", cfg.Slot)
		}
		select {
		case <-ctx.Done():
			unlock()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// leadPrepareWait is how long migrate waits for the slot's leadership
// lock before it says a relay leads the slot: a killed creator's lock
// session ends within moments.
const leadPrepareWait = 5 * time.Second

// DB is what Prepare needs of a connection (*pgx.Conn and
// *pgxpool.Pool have it).
type DB interface {
	checkpoint.DB
	status.Planner
	TxBeginner
}

// createSlot creates cfg's slot: with a function call, or, when a table
// has pending values, over a replication connection whose exported
// snapshot adopts the switch-over's backlog with the checkpoint row
// (createAdopting); a slot whose creator stopped before it recorded it
// (unrecordedCreation, since when, non-zero) is dropped and created again
// (recreateUnrecorded). It returns how many rows were adopted.
func createSlot(ctx context.Context, db DB, cfg Config, since time.Time) (int64, error) {
	if !cfg.adoptsRows() {
		return 0, createSlotSQL(ctx, db, cfg)
	}
	repl, err := replication.Connect(ctx, cfg.PostgresURL, "cdc-relay migrate", cfg.replicationTimeout())
	if err != nil {
		return 0, err
	}
	defer repl.Close(context.Background())
	log := cfg.logger()
	if !since.IsZero() {
		_, n, err := recreateUnrecorded(ctx, db, repl, cfg, since, log)
		return n, err
	}
	_, n, err := createAdopting(ctx, db, repl, cfg, log)
	return n, err
}

// createSlotSQL creates cfg's slot with a function call (on PostgreSQL
// 17+ a failover slot: not temporary, no two-phase, failover, arguments
// earlier versions do not have) and records its start (recordStart: the
// checkpoint row, a new stream id). A slot whose recording failed stays,
// without a row or without a stream id: the next `run` resumes from it,
// and gives the row an id.
func createSlotSQL(ctx context.Context, db DB, cfg Config) error {
	f, err := replication.LookupFailover(ctx, db, cfg.Slot)
	if err != nil {
		return err
	}
	sql := "SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput')"
	if f.Supported() {
		sql = "SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput', false, false, true)"
	}
	var text string
	stopWatch := WatchCreation(ctx, cfg.url(), cfg.Slot, cfg.logger())
	err = db.QueryRow(ctx, sql, cfg.Slot).Scan(&text)
	stopWatch()
	if err != nil {
		return fmt.Errorf("create replication slot %q: %w", cfg.Slot, err)
	}
	lsn, err := pglogrepl.ParseLSN(text)
	if err != nil {
		return fmt.Errorf("create replication slot %q: %w", cfg.Slot, err)
	}
	return pgx.BeginTxFunc(ctx, db, pgx.TxOptions{}, func(tx pgx.Tx) error { return recordStart(ctx, tx, cfg, lsn) })
}
