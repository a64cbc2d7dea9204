package relay

import (
	"context"
	"errors"

	"github.com/cdc-relay/cdc-relay/preflight"
)

// checkMessagesServer refuses, for a relay with message sources, a server
// whose pgoutput cannot send them (preflight.CheckMessages: PostgreSQL
// before 14); a relay of tables only asks nothing.
func checkMessagesServer(ctx context.Context, q preflight.Querier, cfg Config) error {
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
