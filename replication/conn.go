package replication

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/keepalive"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// Conn is a replication connection (replication=database).
type Conn struct {
	pg *pgconn.PgConn
}

// Connect opens a replication connection to url. The session runs with
// TimeZone=UTC and DateStyle=ISO, which the decoder's timestamp parsing
// relies on. timeout is the replication timeout (see Options.Timeout): the
// connection sends TCP keepalives that drop a dead peer within about that
// time, and connecting gives up after it unless url sets connect_timeout.
func Connect(ctx context.Context, url, appName string, timeout time.Duration) (*Conn, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse PostgreSQL URL: %w", pgerr.Parse(err))
	}
	keepalive.PostgreSQL(cfg, timeout)
	cfg.RuntimeParams["replication"] = "database"
	cfg.RuntimeParams["TimeZone"] = "UTC"
	cfg.RuntimeParams["DateStyle"] = "ISO"
	cfg.RuntimeParams["bytea_output"] = "hex" // what the decoder turns back into bytes
	if appName != "" {
		cfg.RuntimeParams["application_name"] = appName
	}
	pg, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open replication connection: %w", pgerr.Connect(cfg, err, hint(err)))
	}
	return &Conn{pg: pg}, nil
}

// hint says what an operator can do about common replication errors.
func hint(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return ""
	}
	switch {
	case pgErr.Code == "42501" || strings.Contains(pgErr.Message, "replication role"):
		return " (the role needs the REPLICATION attribute: ALTER ROLE <name> WITH REPLICATION)"
	case strings.Contains(pgErr.Message, "pg_hba.conf"):
		return " (allow it in pg_hba.conf with a line for its database and role, such as `host app relay 10.0.0.0/8 scram-sha-256`: " +
			"a logical replication connection matches the database's lines, not the `replication` keyword's; then reload PostgreSQL)"
	case strings.Contains(pgErr.Message, "wal_level"):
		return " (set wal_level = logical and restart PostgreSQL)"
	case pgErr.Code == "55006" || strings.Contains(pgErr.Message, "is active for PID"):
		return " (another consumer is reading this slot; only one relay may run per slot)"
	case strings.Contains(pgErr.Message, "publication") && strings.Contains(pgErr.Message, "does not exist"):
		return " (create it with `cdc-relay migrate`; if it exists, it is newer than the slot's position, and pgoutput reads publications as of the WAL it decodes: the slot must be created after the publication)"
	}
	return ""
}

// PublicationMissing reports whether err is the walsender's refusal to
// decode because a publication the stream names does not exist (SQLSTATE
// 42704), as of the WAL it decodes: pgoutput reads publications with the
// catalog as it was when that WAL was written, so a publication that
// exists now may still be missing there.
func PublicationMissing(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42704" &&
		strings.HasPrefix(pgErr.Message, "publication ") && strings.HasSuffix(pgErr.Message, " does not exist")
}

// Abort closes the network connection at once. It is safe from any
// goroutine: a [Conn.Stream] in progress returns an error without
// confirming anything more. It is for a relay that must stop reading now
// (it lost its leadership); Close the Conn afterwards as usual.
func (c *Conn) Abort() { _ = c.pg.Conn().Close() }

// closeTimeout bounds the goodbye that Close writes to the server.
const closeTimeout = 5 * time.Second

// Close closes the connection. It first writes the protocol's goodbye, for
// at most a few seconds: into a silent network, that write could block.
func (c *Conn) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	return c.pg.Close(ctx)
}

// IdentifySystem returns the server's system identifier (the same on a
// cluster and its physical standbys, another for any other cluster), its
// timeline and WAL position, and the connection's database.
func (c *Conn) IdentifySystem(ctx context.Context) (pglogrepl.IdentifySystemResult, error) {
	return pglogrepl.IdentifySystem(ctx, c.pg)
}

// PID is the process id of the connection's walsender on the server.
func (c *Conn) PID() uint32 { return c.pg.PID() }

// NewSlot is a slot CreateSlot created.
type NewSlot struct {
	// ConsistentPoint is where it starts: it streams the transactions
	// committed after it.
	ConsistentPoint pglogrepl.LSN
	// Snapshot names the snapshot the slot exported: a transaction that
	// imports it (SET TRANSACTION SNAPSHOT) sees exactly the transactions
	// committed before ConsistentPoint. It is valid until the connection
	// runs its next command.
	Snapshot string
	// Failover is true for a failover slot (PostgreSQL 17+).
	Failover bool
}

// CreateSlot creates a pgoutput logical slot, exporting its snapshot. On
// PostgreSQL 17+ it is a failover slot (NewSlot.Failover): a standby that
// synchronises slots keeps a copy of it. A failover slot can be created on
// a primary that has no standby.
func (c *Conn) CreateSlot(ctx context.Context, slot string) (NewSlot, error) {
	if err := ValidSlotName(slot); err != nil {
		return NewSlot{}, err
	}
	version, err := c.ServerVersion(ctx)
	if err != nil {
		return NewSlot{}, err
	}
	failover := version >= FailoverVersion
	var res pglogrepl.CreateReplicationSlotResult
	if failover {
		res, err = c.createFailoverSlot(ctx, slot)
	} else {
		res, err = pglogrepl.CreateReplicationSlot(ctx, c.pg, slot, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "EXPORT_SNAPSHOT"})
	}
	if err != nil {
		return NewSlot{}, fmt.Errorf("create replication slot %q: %w%s", slot, err, hint(err))
	}
	lsn, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return NewSlot{}, fmt.Errorf("create replication slot %q: consistent point: %w", slot, err)
	}
	return NewSlot{ConsistentPoint: lsn, Snapshot: res.SnapshotName, Failover: failover}, nil
}

// DropSlot drops slot, which no connection may be using.
func (c *Conn) DropSlot(ctx context.Context, slot string) error {
	if err := pglogrepl.DropReplicationSlot(ctx, c.pg, slot, pglogrepl.DropReplicationSlotOptions{}); err != nil {
		return fmt.Errorf("drop replication slot %q: %w", slot, err)
	}
	return nil
}
