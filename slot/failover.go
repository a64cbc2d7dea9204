package slot

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/replication"
)

// FailoverSaid is what EnsureFailover says once per relay, not at each
// session's start. The zero value has said nothing. It is safe for
// concurrent use.
type FailoverSaid struct {
	noFailover     atomic.Bool // the server (before PostgreSQL 17) has no failover slots
	noStandbySlots atomic.Bool // synchronized_standby_slots is not set
}

// Failover is how a session's start treats its slot as a failover slot:
// Slot on the server q reads, over the session's replication connection
// Repl.
type Failover struct {
	Slot string
	Repl *replication.Conn
	// OnSlotLoss is the relay's --on-slot-loss, for the lines that say
	// what a failover would do.
	OnSlotLoss string
	Said       *FailoverSaid
	// Log is the relay's; StartLog the session's start-up lines' (quieter
	// after a lost connection).
	Log, StartLog *slog.Logger
}

// EnsureFailover makes the slot a failover slot on PostgreSQL 17+ before
// it streams (one created by the relay is one already), so that a standby
// with sync_replication_slots = on keeps a copy of it and its promotion
// brings the slot. It says at each session's start whether the slot is
// one and whether the server's synchronized_standby_slots is set (on
// f.StartLog; that the server has no failover slots once per relay), and
// warns once without it: a standby promoted then may lack the slot's last
// positions. A slot it cannot change is reported and streamed all the
// same: --on-slot-loss recover repairs what a failover loses. Only reading
// the server's settings fails it.
func EnsureFailover(ctx context.Context, q pgdb.DB, f Failover) error {
	fo, err := replication.LookupFailover(ctx, q, f.Slot)
	if err != nil {
		return err
	}
	if !fo.Supported() {
		if !f.Said.noFailover.CompareAndSwap(false, true) {
			return nil
		}
		f.Log.Info("PostgreSQL before 17 has no failover slots: after a failover the promoted standby has no replication slot, "+
			"and the relay refuses to start there unless --on-slot-loss recover", "slot", f.Slot, "postgres_version_num", fo.Version,
			"on_slot_loss", f.OnSlotLoss)
		return nil
	}
	if !fo.Slot {
		if err := f.Repl.EnableFailover(ctx, f.Slot); err != nil {
			f.Log.Warn("could not make the replication slot a failover slot; a promoted standby will not have it", "slot", f.Slot, "err", err)
			return nil
		}
		fo.Slot = true
		f.Log.Info("made the replication slot a failover slot", "slot", f.Slot)
	}
	f.StartLog.Info("the replication slot is a failover slot", "slot", f.Slot, "synchronized_standby_slots", fo.StandbySlots,
		"on_slot_loss", f.OnSlotLoss)
	if fo.StandbySlots == "" && f.Said.noStandbySlots.CompareAndSwap(false, true) {
		f.Log.Warn("synchronized_standby_slots is not set on the primary: the relay may be sent transactions that no standby has received, "+
			"and a standby promoted then may lack them or the slot's last positions. On the primary, set synchronized_standby_slots to the "+
			"physical replication slots of the standbys that run with sync_replication_slots = on", "slot", f.Slot)
	}
	return nil
}
