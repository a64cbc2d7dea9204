package pgtemp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
)

// StandbyOptions configures a streaming standby ([Cluster.StartStandby]).
// The zero value is an asynchronous hot standby named "standby".
type StandbyOptions struct {
	// Name is the standby's application_name and the name of its physical
	// slot on the primary: lower-case letters, digits and underscores;
	// default "standby".
	Name string
	// Synchronous makes the primary wait for this standby at every commit
	// (synchronous_standby_names): a commit that returned is on the
	// standby too, so a promotion loses none.
	Synchronous bool
	// SlotSync (PostgreSQL 17 and later) makes the standby copy the
	// primary's failover logical slots (sync_replication_slots = on), and
	// the primary send logical changes only once this standby has the WAL
	// (synchronized_standby_slots).
	SlotSync bool
}

var standbyName = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// StartStandby makes a streaming standby of c, a running primary, and
// starts it: a physical slot named opts.Name on c keeps the WAL the
// standby needs; a base backup taken over SQL (no pg_basebackup needed)
// becomes its data directory, on a port and socket directory of its own;
// the standby replays from c as a hot standby with hot_standby_feedback.
// When StartStandby returns, the standby accepts read-only connections and
// streams from c (synchronously if opts say so). Stop the standby, then c.
func (c *Cluster) StartStandby(ctx context.Context, opts StandbyOptions) (*Cluster, error) {
	if opts.Name == "" {
		opts.Name = "standby"
	}
	if !standbyName.MatchString(opts.Name) {
		return nil, fmt.Errorf("standby name %q: want lower-case letters, digits and underscores", opts.Name)
	}
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return nil, fmt.Errorf("connect to the primary: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return nil, err
	}
	if opts.SlotSync && version < 170000 {
		return nil, fmt.Errorf("slot synchronisation needs PostgreSQL 17 or later; this is %d", version)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_create_physical_replication_slot($1, true)", opts.Name); err != nil {
		return nil, fmt.Errorf("create the standby's physical slot: %w", err)
	}
	s, err := c.standbyFrom(ctx, conn, version, opts)
	if err != nil {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_drop_replication_slot($1)", opts.Name)
		return nil, err
	}
	if err := c.awaitStandby(ctx, conn, version, opts); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// standbyFrom makes the standby's directory from a base backup of c,
// configures it to replay from c, and starts it.
func (c *Cluster) standbyFrom(ctx context.Context, conn *pgx.Conn, version int, opts StandbyOptions) (*Cluster, error) {
	s, err := c.sibling()
	if err != nil {
		return nil, err
	}
	s.opts = Options{WALLevel: c.opts.WALLevel, Settings: c.standbySettings(version, opts)}
	if err := c.baseBackup(ctx, conn, version, s.data()); err != nil {
		s.remove()
		return nil, err
	}
	if err := s.configure(); err != nil {
		s.remove()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.data(), "standby.signal"), nil, 0o600); err != nil {
		s.remove()
		return nil, err
	}
	if err := s.chownData(); err != nil {
		s.remove()
		return nil, err
	}
	if err := s.start(context.WithoutCancel(ctx)); err != nil { // as in Start
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// sibling returns an empty cluster beside c: the same binaries and owner,
// a temporary directory of its own.
func (c *Cluster) sibling() (*Cluster, error) {
	s := &Cluster{bin: c.bin, cred: c.cred}
	dir, err := os.MkdirTemp("", "cdc-relay-pg-")
	if err != nil {
		return nil, err
	}
	s.dir = dir
	s.logFile = filepath.Join(dir, "postgres.log")
	if c.cred != nil {
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			s.remove()
			return nil, err
		}
	}
	return s, nil
}

// standbySettings are the standby's settings beyond pgtemp's own. Settings
// meant for the primary, copied with the data directory, are cleared.
func (c *Cluster) standbySettings(version int, opts StandbyOptions) map[string]string {
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s dbname=postgres", c.port, opts.Name)
	settings := map[string]string{
		"primary_conninfo":          "'" + conninfo + "'",
		"primary_slot_name":         "'" + opts.Name + "'",
		"hot_standby":               "on",
		"hot_standby_feedback":      "on",
		"synchronous_standby_names": "''",
	}
	if version >= 170000 {
		settings["synchronized_standby_slots"] = "''"
	}
	if opts.SlotSync {
		settings["sync_replication_slots"] = "on"
	}
	return settings
}

// awaitStandby sets what opts ask of the primary c and waits until c
// streams to the standby (and counts it as synchronous, if asked).
func (c *Cluster) awaitStandby(ctx context.Context, conn *pgx.Conn, version int, opts StandbyOptions) error {
	settings := map[string]string{}
	if opts.Synchronous {
		settings["synchronous_standby_names"] = "'" + opts.Name + "'"
	}
	if opts.SlotSync {
		settings["synchronized_standby_slots"] = "'" + opts.Name + "'"
	}
	if len(settings) > 0 {
		if err := c.appendConf("cdc-relay pgtemp, later", settings); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			return err
		}
	}
	want := "async"
	if opts.Synchronous {
		want = "sync"
	}
	return poll(ctx, 60*time.Second, "the primary streams to standby "+opts.Name+" ("+want+")", func() (bool, error) {
		var n int
		err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming' AND sync_state = $2",
			opts.Name, want).Scan(&n)
		return n > 0, err
	})
}

// poll calls cond every 50 ms until it holds, fails, ctx ends or timeout
// passes.
func poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := cond()
		if err == nil && ok {
			return nil
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("waiting until %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}
