package replication

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// Slot is a replication slot as pg_replication_slots shows it.
type Slot struct {
	// Name of the slot.
	Name string
	// Plugin is the output plugin; the relay needs "pgoutput".
	Plugin string
	// SameDatabase is true when the slot belongs to the database the
	// lookup's connection is on.
	SameDatabase bool
	// Database is the database the slot belongs to, and Current the one
	// the lookup's connection is on ("" for a physical slot's).
	Database, Current string
	// ConfirmedFlush is the position the slot's consumer confirmed last:
	// the stream resumes after it.
	ConfirmedFlush pglogrepl.LSN
	// Active is true while a walsender streams the slot.
	Active bool
	// ActivePID is the server process that streams the slot while it is
	// Active, and ActiveApp that process's application_name ("" when
	// unknown): who else reads a slot the relay is to take over.
	ActivePID int32
	ActiveApp string
	// RetainedBytes is how much WAL the slot keeps on the server's disk:
	// from its restart position to the current WAL position.
	RetainedBytes int64
	// Lost is true when PostgreSQL invalidated the slot: it removed WAL
	// the slot still needed (max_slot_wal_keep_size), so the slot cannot
	// stream any more.
	Lost bool
	// Synced is true for a slot that a standby copied from its primary
	// (PostgreSQL 17+ failover slots, `sync_replication_slots`), also
	// once that standby was promoted: its confirmed position is one the
	// old primary's consumer confirmed.
	Synced bool
}

// ErrSlotNotFound is returned (wrapped) by [LookupSlot] for a slot that
// does not exist.
var ErrSlotNotFound = errors.New("replication slot does not exist")

// LookupSlot reads slot name from pg_replication_slots.
func LookupSlot(ctx context.Context, q pgdb.DB, name string) (Slot, error) {
	s := Slot{Name: name}
	var confirmed string
	err := q.QueryRow(ctx, `SELECT coalesce(plugin, ''), coalesce(confirmed_flush_lsn::text, ''),
		coalesce(database = current_database(), false), coalesce(database, ''), current_database(), active,
		coalesce(active_pid, 0), coalesce((SELECT application_name FROM pg_stat_activity a WHERE a.pid = s.active_pid), ''),
		coalesce(pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END, restart_lsn), 0)::bigint,
		coalesce(wal_status = 'lost', false),
		coalesce((to_jsonb(s) ->> 'synced')::boolean, false) -- PostgreSQL 17+
		FROM pg_replication_slots s WHERE slot_name = $1`, name).Scan(&s.Plugin, &confirmed, &s.SameDatabase, &s.Database, &s.Current, &s.Active,
		&s.ActivePID, &s.ActiveApp, &s.RetainedBytes, &s.Lost, &s.Synced)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return s, fmt.Errorf("%w: %q", ErrSlotNotFound, name)
	case err != nil:
		return s, fmt.Errorf("look up replication slot %q: %w", name, err)
	}
	if confirmed != "" {
		if s.ConfirmedFlush, err = pglogrepl.ParseLSN(confirmed); err != nil {
			return s, fmt.Errorf("replication slot %q: confirmed_flush_lsn %q: %w", name, confirmed, err)
		}
	}
	return s, nil
}

// SlotActive reports whether a walsender streams slot name; a slot that
// does not exist is not active.
func SlotActive(ctx context.Context, q pgdb.DB, name string) (bool, error) {
	s, err := LookupSlot(ctx, q, name)
	if errors.Is(err, ErrSlotNotFound) {
		return false, nil
	}
	return s.Active, err
}

// Usable returns an error that says what to do when the relay cannot
// stream this slot: a physical slot, one of another output plugin (a
// Debezium connector's with decoderbufs, say, which the relay cannot take
// over), or one of another database.
func (s Slot) Usable() error {
	const own = "choose another --slot (slot: in a config file): `cdc-relay migrate` creates it, a pgoutput slot of the relay's own"
	switch {
	case s.Plugin == "":
		return fmt.Errorf("replication slot %q is a physical slot; the relay needs a logical slot of pgoutput: %s", s.Name, own)
	case s.Plugin != "pgoutput":
		return fmt.Errorf("replication slot %q uses plugin %q; the relay needs pgoutput and cannot read it, nor take it over: %s", s.Name, s.Plugin, own)
	case !s.SameDatabase:
		return fmt.Errorf("replication slot %q belongs to another database (%q; the URL names %q): connect to %q to read it, or %s",
			s.Name, s.Database, s.Current, s.Database, own)
	}
	if s.Lost {
		return fmt.Errorf("replication slot %q was invalidated by PostgreSQL: it removed WAL the slot still needed (max_slot_wal_keep_size), "+
			"so events committed since the slot's position may be missing from Kafka. Run `cdc-relay recover` (it creates the slot again and "+
			"publishes the outbox rows written since the relay's checkpoint), and consider a larger max_slot_wal_keep_size", s.Name)
	}
	return nil
}

// Consumer describes the process that streams an Active slot for a
// person: its pid and application_name.
func (s Slot) Consumer() string {
	if s.ActiveApp == "" {
		return fmt.Sprintf("server process %d", s.ActivePID)
	}
	return fmt.Sprintf("server process %d, application_name %q", s.ActivePID, s.ActiveApp)
}

// Retained describes RetainedBytes for a person: 512 B, 3.2 MiB, 1.5 GiB.
func (s Slot) Retained() string {
	const unit = 1024
	n := s.RetainedBytes
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
