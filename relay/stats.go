package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cdc-relay/cdc-relay/replication"
)

// Querier runs one query (*pgxpool.Pool and *pgx.Conn have it).
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DatabaseStats is what PostgreSQL says of a relay's slot and status table
// at one moment: enough to report lag, retained WAL, parked events and
// failover when no relay runs.
type DatabaseStats struct {
	// At is when the figures were read.
	At time.Time
	// WALEnd is the server's current WAL write position.
	WALEnd pglogrepl.LSN
	// SlotExists says whether the slot exists; the slot fields below are
	// zero otherwise. SlotActive: a process streams it now.
	SlotExists, SlotActive bool
	// Confirmed is the slot's confirmed_flush_lsn; Restart its restart_lsn,
	// the oldest WAL it keeps.
	Confirmed, Restart pglogrepl.LSN
	// Failed and Dead count the status table's FAILED and DEAD rows.
	Failed, Dead int64
	// Failover is the server's version and synchronized_standby_slots,
	// and whether the slot is a failover slot.
	Failover replication.Failover
}

// LagBytes is the WAL written after the slot's confirmed position; -1
// without a slot.
func (s DatabaseStats) LagBytes() int64 {
	if !s.SlotExists {
		return -1
	}
	return max(0, int64(s.WALEnd)-int64(s.Confirmed))
}

// WALRetained is the WAL the slot keeps on the server, in bytes; -1 without
// a slot.
func (s DatabaseStats) WALRetained() int64 {
	if !s.SlotExists || s.Restart == 0 {
		return -1
	}
	return max(0, int64(s.WALEnd)-int64(s.Restart))
}

// ReadDatabaseStats reads cfg's slot and status table. It needs no
// privilege beyond what the relay's role has (pg_replication_slots is
// readable by every role).
func ReadDatabaseStats(ctx context.Context, db Querier, cfg Config) (DatabaseStats, error) {
	s := DatabaseStats{At: time.Now()}
	var confirmed, restart pgtype.Text
	var active pgtype.Bool
	var walEnd string
	err := db.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, s.confirmed_flush_lsn::text, s.restart_lsn::text, s.active
		FROM (SELECT 1) one LEFT JOIN pg_replication_slots s ON s.slot_name = $1`, cfg.Slot).Scan(&walEnd, &confirmed, &restart, &active)
	if err != nil {
		return s, fmt.Errorf("read slot %q: %w", cfg.Slot, err)
	}
	if s.WALEnd, err = pglogrepl.ParseLSN(walEnd); err != nil {
		return s, fmt.Errorf("read the server's WAL position: %w", err)
	}
	if confirmed.Valid || restart.Valid || active.Valid {
		s.SlotExists, s.SlotActive = true, active.Bool
		if confirmed.Valid {
			s.Confirmed, _ = pglogrepl.ParseLSN(confirmed.String)
		}
		if restart.Valid {
			s.Restart, _ = pglogrepl.ParseLSN(restart.String)
		}
	}
	if s.Failover, err = replication.LookupFailover(ctx, db, cfg.Slot); err != nil {
		return s, err
	}
	status := pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize()
	err = db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'FAILED'), count(*) FILTER (WHERE status = 'DEAD')
		FROM `+status+` WHERE status IN ('FAILED', 'DEAD')`).Scan(&s.Failed, &s.Dead)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
			return s, fmt.Errorf("count parked events: the status table %s does not exist: run `cdc-relay migrate` with the same table flags", status)
		}
		return s, fmt.Errorf("count parked events in %s: %w", status, err)
	}
	return s, nil
}
