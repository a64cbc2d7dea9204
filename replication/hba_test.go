package replication

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// TestLogicalReplicationMatchesDatabaseLines: the relay's replication
// connection (replication=database) is let in by an ordinary pg_hba.conf
// line for its database and role, with no `replication` line, and is
// refused with only a `replication` line for the role, with a hint that
// says which line it needs. Each case starts a cluster of its own: its
// pg_hba.conf is the case's.
func TestLogicalReplicationMatchesDatabaseLines(t *testing.T) {
	t.Parallel()
	const common = "local all all trust\nhost all postgres 127.0.0.1/32 trust\n"
	tests := []struct {
		name string
		hba  string
		ok   bool
	}{
		{"a line for the database only", common + "host app relay 127.0.0.1/32 trust\n", true},
		{"a replication line only", common + "host replication relay 127.0.0.1/32 trust\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The server runs as another user when the test runs as root:
			// the file must be readable by it.
			dir, err := os.MkdirTemp("", "hba")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			hba := filepath.Join(dir, "pg_hba.conf")
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(hba, []byte(tc.hba), 0o644); err != nil {
				t.Fatal(err)
			}
			pg := pgtemptest.StartT(t, pgtemp.Options{Settings: map[string]string{"hba_file": "'" + hba + "'"}})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			admin, err := pgx.Connect(ctx, pg.URL("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close(ctx)
			for _, s := range []string{"CREATE ROLE relay LOGIN REPLICATION", "CREATE DATABASE app"} {
				if _, err := admin.Exec(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			url := strings.Replace(pg.URL("app"), "postgres@", "relay@", 1)
			c, err := Connect(ctx, url, "hba test", 10*time.Second)
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), "no pg_hba.conf entry") || !strings.Contains(err.Error(), "not the `replication` keyword's") {
					t.Fatalf("connect with a replication line only: %v; want it refused, with the hint", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("connect with a line for the database: %v", err)
			}
			defer c.Close(ctx)
			id, err := c.IdentifySystem(ctx)
			if err != nil || id.DBName != "app" {
				t.Fatalf("IDENTIFY_SYSTEM: %+v, %v; want database app", id, err)
			}
		})
	}
}
