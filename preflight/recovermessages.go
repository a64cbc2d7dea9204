package preflight

import (
	"errors"
	"log/slog"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// CheckRecoverNeedsTable refuses --on-slot-loss recover (recover) for a
// relay of messages only (no tables): recover publishes again the rows of
// outbox tables, and messages are in no table, so with no table it would
// publish nothing and stream on past the gap, which is --accept-slot-loss
// under another name. It reads no database.
func CheckRecoverNeedsTable(recover bool, tables int) error {
	if !recover || tables > 0 {
		return nil
	}
	return errors.New("--on-slot-loss recover cannot repair a relay of messages only: it publishes again the outbox tables' rows, " +
		"and messages are in no table, so the messages of a gap in the WAL would be lost without a word; " +
		"keep the slot over a failover with a failover slot (PostgreSQL 17+) and its standby settings, and use --on-slot-loss refuse")
}

// WarnMessagesNotRecovered says on log, once at start, that --on-slot-loss
// recover (recover) cannot repair a gap for the message sources: their
// events are in the WAL only, and a lost slot loses them; a failover slot
// (PostgreSQL 17+) keeps them. Nothing without recover or without sources.
func WarnMessagesNotRecovered(log *slog.Logger, recover bool, sources []decoder.MessageMapping) {
	if len(sources) == 0 || !recover {
		return
	}
	log.Warn("--on-slot-loss recover publishes again only the outbox tables' rows: messages are in no table, and those of a gap in the WAL are lost; "+
		"keep the slot on failover with a failover slot (PostgreSQL 17+) and its standby settings",
		"messages", outbox.Sources{Messages: sources}.Names())
}
