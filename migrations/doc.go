// Package migrations prepares a database for the relay: the relay's own
// tables (the status table of failed deliveries, the checkpoint table, the
// table of paused topics, [PauseTable], and the table of backfills,
// [BackfillTable]), the default outbox table when it does not exist yet,
// the reset trigger of an outbox table whose write-back lists pending
// values, and the publication. With no outbox table named (a relay of
// logical decoding messages only) it prepares the relay's tables and a
// publication of no table. [CreateEmit] creates the SQL helper
// cdc_relay.emit, which writes an event as a transactional logical
// decoding message in the relay's envelope (emit.go, sql/emit.sql).
//
// The relay's tables are created by versioned SQL files embedded in the
// binary, applied in order under an advisory lock every time (each file is
// idempotent, so [Apply] converges on the tables its configuration names)
// and recorded in a history table, for people. Each runs in a transaction,
// except one whose first line is outsideTransaction: its statements run
// one at a time (CREATE INDEX CONCURRENTLY), an invalid index an
// interrupted build left dropped first and built again. The outbox table and
// the publication depend on the configuration, so they are reconciled on
// every run instead: created when missing, never altered or dropped. So is
// the reset trigger, which follows the configuration: created when the
// table has pending values, replaced when it is stale, dropped when the
// values are gone, and left alone (unlocked) when it is current.
package migrations
