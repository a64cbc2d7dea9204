package relay

import (
	"context"
	"errors"
	"log/slog"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/preflight"
	"github.com/cdc-relay/cdc-relay/recovery"
)

// checkMessagesServer refuses, for a relay with message sources, a server
// whose pgoutput cannot send them (preflight.CheckMessages: PostgreSQL
// before 14); a relay of tables only asks nothing.
func checkMessagesServer(ctx context.Context, q pgdb.Querier, cfg Config) error {
	if len(cfg.Messages) == 0 {
		return nil
	}
	p, err := preflight.CheckMessages(ctx, q)
	if err != nil {
		return err
	}
	if p != nil {
		return errors.New(p.Msg)
	}
	return nil
}

// warnMessagesNotRecovered says, once at start, that --on-slot-loss
// recover cannot repair a gap for the message sources: their events are
// in the WAL only, and a lost slot loses them; a failover slot
// (PostgreSQL 17+) keeps them.
func (r *Relay) warnMessagesNotRecovered() {
	if len(r.cfg.Messages) == 0 || r.cfg.onSlotLoss() != SlotLossRecover {
		return
	}
	r.log.Warn("--on-slot-loss recover publishes again only the outbox tables' rows: messages are in no table, and those of a gap in the WAL are lost; "+
		"keep the slot on failover with a failover slot (PostgreSQL 17+) and its standby settings",
		"messages", r.cfg.SourceNames()[len(r.cfg.Tables):])
}

// checkRecoverNeedsTable refuses --on-slot-loss recover for a relay of
// messages only: recover publishes again the rows of outbox tables, and
// messages are in no table, so with no table it would publish nothing and
// stream on past the gap, which is --accept-slot-loss under another name.
func (c Config) checkRecoverNeedsTable() error {
	if c.OnSlotLoss != SlotLossRecover || len(c.Tables) > 0 {
		return nil
	}
	return errors.New("--on-slot-loss recover cannot repair a relay of messages only: it publishes again the outbox tables' rows, " +
		"and messages are in no table, so the messages of a gap in the WAL would be lost without a word; " +
		"keep the slot over a failover with a failover slot (PostgreSQL 17+) and its standby settings, and use --on-slot-loss refuse")
}

// warnMessagesLost says, after a gap was repaired (res), that the
// messages committed in it are lost: recover published again the tables'
// rows only. It names the gap's stretch of WAL and the time since which
// messages may be missing. Nothing without message sources.
func warnMessagesLost(log *slog.Logger, cfg Config, res recovery.Result) {
	if len(cfg.Messages) == 0 {
		return
	}
	to := res.Gap.SlotLSN
	if to == 0 {
		to = res.Resume
	}
	at, which := res.Gap.Checkpoint.Since()
	log.Warn("messages committed in the gap in the WAL are lost: they are in no table, and recover published again the outbox tables' rows only; "+
		"replay them from the application if it can, and keep the slot over a failover with a failover slot (PostgreSQL 17+)",
		"messages", cfg.SourceNames()[len(cfg.Tables):], "gap_from", res.Gap.Checkpoint.LSN, "gap_to", to,
		"committed_since", at.UTC(), "since_is", which)
}

// warnEmitUnmapped says, once at start, when the SQL helper cdc_relay.emit
// writes a prefix that no message source of cfg maps (its events would be
// ignored, and lost), or one a payload-only source maps (each record's
// value would be emit's whole envelope). A relay of tables only says
// nothing: another relay may read the messages. A failed read is logged
// at debug and changes nothing.
func warnEmitUnmapped(ctx context.Context, q pgdb.DB, cfg Config, log *slog.Logger) {
	if len(cfg.Messages) == 0 {
		return
	}
	prefix, ok, err := migrations.EmitPrefix(ctx, q)
	if err != nil || !ok {
		log.Debug("no prefix of cdc_relay.emit to check", "error", err)
		return
	}
	for _, m := range cfg.Messages {
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
		"prefix", prefix, "messages", cfg.SourceNames()[len(cfg.Tables):])
}
