package relay

import (
	"context"

	"github.com/cdc-relay/cdc-relay/replication"
)

// failoverSlot makes the session's slot a failover slot on PostgreSQL 17+
// before it streams (one created by the relay is one already), so that a
// standby with sync_replication_slots = on keeps a copy of it and its
// promotion brings the slot. It says at each session's start whether the
// slot is one and whether the server's synchronized_standby_slots is set
// (after a lost connection at debug, pgnotice.Reconnect; that the server has
// no failover slots once per relay), and warns once without it: a standby promoted then may lack the slot's
// last positions. A slot it cannot change is reported and streamed all
// the same: --on-slot-loss recover repairs what a failover loses.
func (s *session) failoverSlot(ctx context.Context) error {
	f, err := replication.LookupFailover(ctx, s.pool, s.cfg.Slot)
	if err != nil {
		return err
	}
	if !f.Supported() {
		if !s.state.noFailoverSaid.CompareAndSwap(false, true) {
			return nil
		}
		s.log.Info("PostgreSQL before 17 has no failover slots: after a failover the promoted standby has no replication slot, "+
			"and the relay refuses to start there unless --on-slot-loss recover", "slot", s.cfg.Slot, "postgres_version_num", f.Version,
			"on_slot_loss", string(s.cfg.onSlotLoss()))
		return nil
	}
	if !f.Slot {
		if err := s.repl.EnableFailover(ctx, s.cfg.Slot); err != nil {
			s.log.Warn("could not make the replication slot a failover slot; a promoted standby will not have it", "slot", s.cfg.Slot, "err", err)
			return nil
		}
		f.Slot = true
		s.log.Info("made the replication slot a failover slot", "slot", s.cfg.Slot)
	}
	s.startLog().Info("the replication slot is a failover slot", "slot", s.cfg.Slot, "synchronized_standby_slots", f.StandbySlots,
		"on_slot_loss", string(s.cfg.onSlotLoss()))
	if f.StandbySlots == "" && s.state.standbyWarned.CompareAndSwap(false, true) {
		s.log.Warn("synchronized_standby_slots is not set on the primary: the relay may be sent transactions that no standby has received, "+
			"and a standby promoted then may lack them or the slot's last positions. On the primary, set synchronized_standby_slots to the "+
			"physical replication slots of the standbys that run with sync_replication_slots = on", "slot", s.cfg.Slot)
	}
	return nil
}
