package pgtemp_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// TestCopyIsAClone: a cold copy has the source's system identifier and
// data, no replication slot, a port of its own, and both run after it;
// what is written to one afterwards is not in the other. The source is a
// cluster of its own: Copy stops it.
func TestCopyIsAClone(t *testing.T) {
	t.Parallel()
	ctx, src, conn := pgtemptest.ConnectT(t, 2*time.Minute,
		"CREATE TABLE t (v text)", "INSERT INTO t VALUES ('before')",
		"SELECT pg_create_logical_replication_slot('s', 'pgoutput')")
	conn.Close(ctx)
	cp, err := src.Copy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	if cp.URL("postgres") == src.URL("postgres") {
		t.Fatalf("the copy listens where the source does: %s", cp.URL("postgres"))
	}
	a, b := connectTo(ctx, t, src), connectTo(ctx, t, cp)
	runSQL(ctx, t, a, "INSERT INTO t VALUES ('source')")
	runSQL(ctx, t, b, "INSERT INTO t VALUES ('copy')")
	for _, tt := range []struct {
		name  string
		conn  *pgx.Conn
		rows  string
		slots int
	}{{"source", a, "before,source", 1}, {"copy", b, "before,copy", 0}} {
		var rows string
		var slots int
		if err := tt.conn.QueryRow(ctx, "SELECT string_agg(v, ',' ORDER BY v), (SELECT count(*) FROM pg_replication_slots) FROM t").Scan(&rows, &slots); err != nil {
			t.Fatal(err)
		}
		if rows != tt.rows || slots != tt.slots {
			t.Errorf("%s: rows %q, %d slots; want %q, %d", tt.name, rows, slots, tt.rows, tt.slots)
		}
	}
	if sa, sb := systemID(ctx, t, a), systemID(ctx, t, b); sa != sb {
		t.Errorf("system identifiers differ: %s and %s; a copy keeps the source's", sa, sb)
	}
}

func connectTo(ctx context.Context, t *testing.T, c *pgtemp.Cluster) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func runSQL(ctx context.Context, t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func systemID(ctx context.Context, t *testing.T, c *pgx.Conn) string {
	t.Helper()
	var id string
	if err := c.QueryRow(ctx, "SELECT system_identifier::text FROM pg_control_system()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}
