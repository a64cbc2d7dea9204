package recovery

import (
	"log/slog"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// WarnMessagesLost says on log, after a gap was repaired (res), that the
// messages of the message sources committed in it are lost: recover
// published again the tables' rows only. It names the gap's stretch of
// WAL and the time since which messages may be missing. Nothing without
// message sources.
func WarnMessagesLost(log *slog.Logger, res Result, sources []decoder.MessageMapping) {
	if len(sources) == 0 {
		return
	}
	to := res.Gap.SlotLSN
	if to == 0 {
		to = res.Resume
	}
	at, which := res.Gap.Checkpoint.Since()
	log.Warn("messages committed in the gap in the WAL are lost: they are in no table, and recover published again the outbox tables' rows only; "+
		"replay them from the application if it can, and keep the slot over a failover with a failover slot (PostgreSQL 17+)",
		"messages", outbox.Sources{Messages: sources}.Names(), "gap_from", res.Gap.Checkpoint.LSN, "gap_to", to,
		"committed_since", at.UTC(), "since_is", which)
}
