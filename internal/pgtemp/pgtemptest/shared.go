package pgtemptest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
)

// Shared is one PostgreSQL cluster for a test package: started once, the
// first time a test asks for a database, and stopped by [Shared.Run] when
// the package's tests end. Each test gets a database of its own, cloned
// from the package's template, so that tests can run side by side
// (t.Parallel) and none pays for an initdb. A test that restarts, stops
// or reconfigures its server, or that needs a standby, starts a cluster
// of its own with [StartT] instead.
//
// A package declares one in a test file and runs its tests through it:
//
//	var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{})
//
//	func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }
//
// Replication slots are the cluster's, not a database's: a test that
// creates one names it after its database ([DB.Name]) when it may run
// beside another that creates one. A test's slots are dropped with its
// database when it ends.
type Shared struct {
	opts SharedOptions

	once    sync.Once
	cluster *pgtemp.Cluster
	err     error
	seq     atomic.Int64
}

// SharedOptions configures a [Shared] cluster. The zero value is a
// logical-replication cluster with room for 100 slots and 300
// connections, and template1 as the template.
type SharedOptions struct {
	// Options are the cluster's, as for [StartT]; Settings add to the
	// shared defaults (max_connections 300, max_replication_slots and
	// max_wal_senders 100).
	Options pgtemp.Options
	// Template, when set, is run once on a database that every test's
	// database is then a copy of (CREATE DATABASE … TEMPLATE): the place
	// for the migrations every test of the package needs.
	Template func(ctx context.Context, conn *pgx.Conn) error
}

// NewShared returns a package's shared cluster, not started yet.
func NewShared(opts SharedOptions) *Shared {
	return &Shared{opts: opts}
}

// Run runs the package's tests (m.Run) and stops the cluster afterwards,
// if a test started it; it returns m.Run's exit code, for os.Exit.
func (s *Shared) Run(m *testing.M) int {
	code := m.Run()
	if s.cluster != nil {
		_ = s.cluster.Stop()
	}
	return code
}

// templateName is the database every test's database copies.
const templateName = "pgtemptest_template"

// start starts the cluster and builds the template, once.
func (s *Shared) start() (*pgtemp.Cluster, error) {
	s.once.Do(func() {
		opts := s.opts.Options
		settings := map[string]string{
			"max_connections":       "300",
			"max_replication_slots": "100",
			"max_wal_senders":       "100",
		}
		for k, v := range opts.Settings {
			settings[k] = v
		}
		opts.Settings = settings
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s.cluster, s.err = pgtemp.Start(ctx, opts)
		if s.err == nil {
			s.err = s.buildTemplate(ctx)
		}
	})
	return s.cluster, s.err
}

// buildTemplate creates the template database and runs SharedOptions'
// Template on it.
func (s *Shared) buildTemplate(ctx context.Context) error {
	admin, err := pgx.Connect(ctx, s.cluster.URL("postgres"))
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+templateName); err != nil {
		return err
	}
	if s.opts.Template == nil {
		return nil
	}
	conn, err := pgx.Connect(ctx, s.cluster.URL(templateName))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := s.opts.Template(ctx, conn); err != nil {
		return fmt.Errorf("the shared cluster's template: %w", err)
	}
	return nil
}

// DB is one test's database on a [Shared] cluster.
type DB struct {
	// Cluster is the shared cluster: a test must not stop, restart or
	// reconfigure it.
	Cluster *pgtemp.Cluster
	// Name is the database's name, unique in the package's run: a good
	// name for the test's replication slot.
	Name string
}

// URL is a connection URL for the test's database, as the superuser.
func (d *DB) URL() string { return d.Cluster.URL(d.Name) }

// DB gives the test a database of its own on the package's shared
// cluster, a copy of the template, and drops it (with any replication
// slot in it) when the test ends. It skips or fails as [StartT] does
// when PostgreSQL's server binaries are missing.
func (s *Shared) DB(t testing.TB) *DB {
	t.Helper()
	requireBin(t)
	c, err := s.start()
	if err != nil {
		t.Fatalf("start the package's PostgreSQL: %v", err)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+templateName); err != nil {
		t.Fatalf("create the test's database: %v", err)
	}
	t.Cleanup(func() {
		if err := dropDB(c, name); err != nil {
			// Left behind, it (and its slots) would hold the shared
			// cluster's WAL for every later test.
			t.Errorf("drop the test's database %s: %v", name, err)
		}
	})
	return &DB{Cluster: c, Name: name}
}

// ConnectDB is [ConnectT] on the package's shared cluster: the test's own
// database ([Shared.DB]), a connection to it as the superuser, closed when
// the test ends, with each statement of schema run on it, and a context
// that ends when the test does, or after timeout.
func (s *Shared) ConnectDB(t testing.TB, timeout time.Duration, schema ...string) (context.Context, *DB, *pgx.Conn) {
	t.Helper()
	db := s.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, stmt := range schema {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return ctx, db, conn
}

// dropDB ends the sessions on database name, drops its replication slots,
// then the database; it tries again, all three, for a minute while one
// fails (a walsender ended a moment ago still holds its slot; a client
// still reconnecting may make one again).
func dropDB(c *pgtemp.Cluster, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	for {
		err := dropOnce(ctx, admin, name)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// dropOnce is one attempt of dropDB.
func dropOnce(ctx context.Context, admin *pgx.Conn, name string) error {
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = $1 AND pid <> pg_backend_pid()`, name); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
		WHERE database = $1`, name); err != nil {
		return err
	}
	_, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}
