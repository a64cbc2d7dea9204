package pgtemp_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// TestStandbyFollowsThenTakesOver: a synchronous standby made from a
// running primary has a row committed on the primary, refuses writes,
// and after the primary crashes and it is promoted, takes writes. On
// PostgreSQL 17 and later, with slot synchronisation, a failover logical
// slot of the primary appears on the standby and survives the promotion.
// The primary is a cluster of its own: the test crashes it.
func TestStandbyFollowsThenTakesOver(t *testing.T) {
	t.Parallel()
	primary := pgtemptest.StartT(t, pgtemp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := connect(ctx, t, primary)
	var version int
	if err := p.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	slotSync := version >= 170000
	mustExec(ctx, t, p, "CREATE TABLE t (n int)")
	standby, err := primary.StartStandby(ctx, pgtemp.StandbyOptions{Name: "s1", Synchronous: true, SlotSync: slotSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Stop() })
	if slotSync {
		// Made after the standby: the standby copies a slot only once its
		// own WAL reaches back to the slot's restart position.
		mustExec(ctx, t, p, "SELECT pg_create_logical_replication_slot('logical', 'pgoutput', false, false, true)")
	}

	var slotType string
	if err := p.QueryRow(ctx, "SELECT slot_type FROM pg_replication_slots WHERE slot_name = 's1' AND active").Scan(&slotType); err != nil || slotType != "physical" {
		t.Fatalf("the standby's slot on the primary: %q, %v; want an active physical slot", slotType, err)
	}
	mustExec(ctx, t, p, "INSERT INTO t VALUES (1)")
	if err := standby.WaitReplayed(ctx, primary, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s := connect(ctx, t, standby)
	if got := count(ctx, t, s, "SELECT count(*) FROM t WHERE n = 1"); got != 1 {
		t.Fatalf("the standby has %d rows of the primary's one", got)
	}
	if _, err := s.Exec(ctx, "INSERT INTO t VALUES (2)"); err == nil {
		t.Fatal("the standby took a write before its promotion")
	}
	if slotSync {
		waitSyncedSlot(ctx, t, p, s)
	}

	if err := primary.Halt(ctx, "immediate"); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	mustExec(ctx, t, s, "INSERT INTO t VALUES (2)")
	if got := count(ctx, t, s, "SELECT count(*) FROM t"); got != 2 {
		t.Fatalf("the promoted standby has %d rows, want 2", got)
	}
	if slotSync {
		if got := count(ctx, t, s, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'logical' AND failover AND NOT temporary AND invalidation_reason IS NULL"); got != 1 {
			t.Fatalf("the failover slot after the promotion: %d rows, want 1", got)
		}
	}
}

// waitSyncedSlot waits until the standby s has the primary's failover
// slot. The standby keeps the copy only once the slot on the primary p
// needs no older catalog rows than the standby has (its feedback holds
// them from then on), so the slot is moved on meanwhile, as a consumer
// would.
func waitSyncedSlot(ctx context.Context, t *testing.T, p, s *pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for count(ctx, t, s, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'logical' AND synced AND NOT temporary") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the standby did not synchronise the failover slot within 60s")
		}
		mustExec(ctx, t, p, "SELECT pg_log_standby_snapshot(), pg_replication_slot_advance('logical', pg_current_wal_lsn())")
		time.Sleep(100 * time.Millisecond)
	}
}

func connect(ctx context.Context, t *testing.T, c *pgtemp.Cluster) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func mustExec(ctx context.Context, t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(ctx context.Context, t *testing.T, c *pgx.Conn, sql string) int {
	t.Helper()
	var n int
	if err := c.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
