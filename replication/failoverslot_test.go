package replication_test

import (
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/replication"
)

// TestFailoverSlot: on PostgreSQL 17+, a slot CreateSlot creates is a
// failover slot, on a primary with no standby, and EnableFailover turns
// an existing slot into one; before 17 slots are created as they always
// were, and none is a failover slot. The server's version is the same read
// either way.
func TestFailoverSlot(t *testing.T) {
	t.Parallel()
	ctx, db, admin := pg.ConnectDB(t, 2*time.Minute)
	conn, err := replication.Connect(ctx, db.URL(), "test", 10*time.Second)
	created, plain := db.Name+"_created", db.Name+"_plain"
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	version, err := conn.ServerVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var num int
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		t.Fatal(err)
	}
	if version/10000 != num/10000 || version > num {
		t.Fatalf("ServerVersion = %d, server_version_num = %d", version, num)
	}
	supported := version >= replication.FailoverVersion
	t.Logf("PostgreSQL %d: failover slots %v", num, supported)

	slot, err := conn.CreateSlot(ctx, created)
	if err != nil {
		t.Fatal(err)
	}
	if slot.ConsistentPoint == 0 || slot.Snapshot == "" || slot.Failover != supported {
		t.Fatalf("CreateSlot = %+v, want a consistent point, a snapshot, and Failover %v", slot, supported)
	}
	// The exported snapshot can be imported while the connection is idle.
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+slot.Snapshot+"'"); err != nil {
		t.Fatalf("import the new slot's snapshot: %v", err)
	}
	_ = tx.Rollback(ctx)
	checkFailover(t, admin, created, supported, num)

	if _, err := admin.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", plain); err != nil {
		t.Fatal(err)
	}
	checkFailover(t, admin, plain, false, num)
	if !supported {
		return
	}
	if err := conn.EnableFailover(ctx, plain); err != nil {
		t.Fatal(err)
	}
	checkFailover(t, admin, plain, true, num)
	if err := conn.EnableFailover(ctx, plain); err != nil {
		t.Fatalf("EnableFailover on a failover slot: %v", err)
	}
}

// checkFailover requires LookupFailover to say that slot is a failover
// slot (or not) on a server of version num.
func checkFailover(t *testing.T, q pgdb.DB, slot string, want bool, num int) {
	t.Helper()
	f, err := replication.LookupFailover(t.Context(), q, slot)
	if err != nil {
		t.Fatal(err)
	}
	if f.Slot != want || f.Version != num || f.StandbySlots != "" {
		t.Fatalf("LookupFailover(%q) = %+v, want Slot %v, Version %d, no standby slots", slot, f, want, num)
	}
}
