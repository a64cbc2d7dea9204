package relay

import (
	"context"
	"log/slog"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/slot"
)

// SlotGapError says the relay never read a stretch of the WAL (see
// [slot.GapError]): `cdc-relay recover` publishes the rows of the gap
// again, and so does a relay run with --on-slot-loss recover
// (Config.OnSlotLoss).
type SlotGapError = slot.GapError

// SlotConfig is what the slot's lifecycle (package slot: `migrate`'s
// slot, the session's resume) reads of c; a relay made by New gives it
// --postgres-url-file's latest connection string for new connections.
func (c Config) SlotConfig() slot.Config {
	sc := slot.Config{
		Slot:               c.Slot,
		PostgresURL:        c.PostgresURL,
		Tables:             c.Tables,
		StatusSchema:       c.StatusSchema,
		StatusTable:        c.StatusTable,
		CheckpointSchema:   c.CheckpointSchema,
		CheckpointTable:    c.CheckpointTable,
		AcceptSlotLoss:     c.AcceptSlotLoss,
		ReplicationTimeout: c.ReplicationTimeout,
		Logger:             c.Logger,
	}
	if c.liveURL != nil {
		sc.LiveURL = c.liveURL.Get
	}
	return sc
}

// resume returns the position a session streams from (slot.Resume): the
// slot, created when missing, checked against the checkpoint row. What
// the operator must act on (a fatal.Error) ends Run.
func resume(ctx context.Context, q slot.DB, repl *replication.Conn, store *checkpoint.Store, cfg Config, log, routine *slog.Logger) (pglogrepl.LSN, error) {
	return slot.Resume(ctx, q, repl, store, cfg.SlotConfig(), log, routine)
}
