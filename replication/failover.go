package replication

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// FailoverVersion is the first PostgreSQL version (as server_version_num)
// with failover slots: a standby with sync_replication_slots = on keeps a
// copy of such a slot, and its promotion gives the new primary the slot.
const FailoverVersion = 170000

// ServerVersion is the server's version as server_version_num (150014 for
// 15.14), read from the server_version the connection reported at start,
// or asked with SHOW when that does not parse.
func (c *Conn) ServerVersion(ctx context.Context) (int, error) {
	if v := parseServerVersion(c.pg.ParameterStatus("server_version")); v > 0 {
		return v, nil
	}
	res, err := c.pg.Exec(ctx, "SHOW server_version_num").ReadAll()
	if err != nil {
		return 0, fmt.Errorf("read the server's version: %w", err)
	}
	if len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 1 {
		return 0, fmt.Errorf("read the server's version: unexpected answer to SHOW server_version_num")
	}
	v, err := strconv.Atoi(string(res[0].Rows[0][0]))
	if err != nil {
		return 0, fmt.Errorf("read the server's version: %w", err)
	}
	return v, nil
}

// parseServerVersion turns a server_version such as "15.14 (Debian
// 15.14-1)", "18.6" or "19devel" into server_version_num's form (major
// times 10000 plus minor), or 0 when it is not of version 10 or later.
func parseServerVersion(s string) int {
	digits := func(s string) (int, string) {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		n, err := strconv.Atoi(s[:i])
		if err != nil {
			return -1, s
		}
		return n, s[i:]
	}
	major, rest := digits(s)
	if major < 10 {
		return 0
	}
	minor := 0
	if after, ok := strings.CutPrefix(rest, "."); ok {
		if m, _ := digits(after); m > 0 {
			minor = m
		}
	}
	return major*10000 + minor
}

// createFailoverSlot creates a pgoutput failover slot, exporting its
// snapshot, with the option list of PostgreSQL 17+ (FAILOVER has no
// other syntax). The answer has the columns of EXPORT_SNAPSHOT's.
func (c *Conn) createFailoverSlot(ctx context.Context, slot string) (pglogrepl.CreateReplicationSlotResult, error) {
	sql := fmt.Sprintf("CREATE_REPLICATION_SLOT %s LOGICAL pgoutput (SNAPSHOT 'export', FAILOVER true)", slot)
	return pglogrepl.ParseCreateReplicationSlot(c.pg.Exec(ctx, sql))
}

// EnableFailover makes slot a failover slot (ALTER_REPLICATION_SLOT, on a
// PostgreSQL 17+ primary). No connection may be streaming the slot.
func (c *Conn) EnableFailover(ctx context.Context, slot string) error {
	if err := ValidSlotName(slot); err != nil {
		return err
	}
	if _, err := c.pg.Exec(ctx, fmt.Sprintf("ALTER_REPLICATION_SLOT %s (FAILOVER true)", slot)).ReadAll(); err != nil {
		return fmt.Errorf("make replication slot %q a failover slot: %w%s", slot, err, hint(err))
	}
	return nil
}

// Failover is what a server says of failover slots and of one slot.
type Failover struct {
	// Version is the server's server_version_num.
	Version int
	// Slot is true when the slot exists and is a failover slot.
	Slot bool
	// StandbySlots is the server's synchronized_standby_slots: the physical
	// slots of the standbys a failover slot's consumer waits for, so that
	// each of them has every position the consumer is sent. Empty when it
	// is not set, or before PostgreSQL 17.
	StandbySlots string
}

// Supported reports whether the server has failover slots (PostgreSQL
// 17+).
func (f Failover) Supported() bool { return f.Version >= FailoverVersion }

// LookupFailover reads the server's version and synchronized_standby_slots,
// and whether slot name is a failover slot. It works on every version:
// before 17 a slot is never one.
func LookupFailover(ctx context.Context, q pgdb.DB, name string) (Failover, error) {
	var f Failover
	var standby pgtype.Text
	err := q.QueryRow(ctx, `SELECT current_setting('server_version_num')::int,
		coalesce((SELECT (to_jsonb(s) ->> 'failover')::bool FROM pg_replication_slots s WHERE s.slot_name = $1), false),
		current_setting('synchronized_standby_slots', true)`, name).Scan(&f.Version, &f.Slot, &standby)
	if err != nil {
		return f, fmt.Errorf("read the failover settings of replication slot %q: %w", name, err)
	}
	f.StandbySlots = standby.String
	return f, nil
}
