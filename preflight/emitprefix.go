package preflight

import (
	"context"
	"log/slog"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// WarnEmitUnmapped says on log, once at start, when the SQL helper
// cdc_relay.emit writes a prefix that none of the message sources maps
// (its events would be ignored, and lost), or one a payload-only source
// maps (each record's value would be emit's whole envelope). A relay of
// tables only (no sources) says nothing: another relay may read the
// messages. A failed read is logged at debug and changes nothing.
func WarnEmitUnmapped(ctx context.Context, q pgdb.DB, sources []decoder.MessageMapping, log *slog.Logger) {
	if len(sources) == 0 {
		return
	}
	prefix, ok, err := migrations.EmitPrefix(ctx, q)
	if err != nil || !ok {
		log.Debug("no prefix of cdc_relay.emit to check", "error", err)
		return
	}
	for _, m := range sources {
		if m.Prefix != prefix {
			continue
		}
		if m.PayloadOnly {
			log.Warn("cdc_relay.emit writes envelopes with a prefix this relay reads as payload_only: each record's value would be the whole envelope; "+
				"drop payload_only for the prefix, or run migrate with a config whose first envelope source is the one emit should write", "prefix", prefix)
		}
		return
	}
	log.Warn("cdc_relay.emit writes a prefix no messages: entry of this relay maps: the events it writes are ignored, and lost; "+
		"add the prefix to messages: (or --message-prefix), or run migrate with this relay's configuration so that emit writes one it maps",
		"prefix", prefix, "messages", outbox.Sources{Messages: sources}.Names())
}
