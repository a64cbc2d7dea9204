package pgtemp

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Addr is the cluster's host:port, for a multi-host connection string.
func (c *Cluster) Addr() string { return "127.0.0.1:" + strconv.Itoa(c.port) }

// Halt stops the server in mode ("fast" or "immediate": a crash, as far as
// the cluster's data can tell) and keeps its directory; Stop removes it.
func (c *Cluster) Halt(ctx context.Context, mode string) error {
	return c.run(ctx, "pg_ctl", "-D", c.data(), "-m", mode, "-w", "stop")
}

// Promote promotes a standby ([Cluster.StartStandby]) and returns once it
// is a primary that accepts writes.
func (c *Cluster) Promote(ctx context.Context) error {
	return c.run(ctx, "pg_ctl", "-D", c.data(), "-w", "-t", "60", "promote")
}

// WaitReplayed waits until the standby c has replayed the primary's WAL up
// to the primary's current position, or timeout passes.
func (c *Cluster) WaitReplayed(ctx context.Context, primary *Cluster, timeout time.Duration) error {
	lsn, err := queryText(ctx, primary, "SELECT pg_current_wal_lsn()::text")
	if err != nil {
		return fmt.Errorf("read the primary's WAL position: %w", err)
	}
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("connect to the standby: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return poll(ctx, timeout, "the standby replays up to "+lsn, func() (bool, error) {
		var done bool
		err := conn.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", lsn).Scan(&done)
		return done, err
	})
}

// queryText runs a query of one text value on c's database postgres.
func queryText(ctx context.Context, c *Cluster, sql string) (string, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var s string
	err = conn.QueryRow(ctx, sql).Scan(&s)
	return s, err
}

// StartAgain starts a server that Halt stopped, on the same port with its
// data, and returns once it accepts connections.
func (c *Cluster) StartAgain(ctx context.Context) error { return c.start(ctx) }
