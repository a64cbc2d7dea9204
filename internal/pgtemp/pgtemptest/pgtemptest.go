// Package pgtemptest starts a throwaway PostgreSQL cluster (package pgtemp)
// for a test, and connects to it. Only tests import it, so the cdc-relay
// binary, which uses pgtemp for `cdc-relay demo`, does not link package
// testing.
package pgtemptest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
)

// StartT starts a cluster for a test and stops it when the test ends. It
// skips the test when PostgreSQL's server binaries are missing, except in
// CI (CI set) or when CDC_RELAY_TEST_PG asks for a version, where a missing
// PostgreSQL is a failure.
func StartT(t testing.TB, opts pgtemp.Options) *pgtemp.Cluster {
	t.Helper()
	requireBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgtemp.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

// ConnectT starts a cluster for a test as [StartT] does, connects to its
// database postgres as the superuser, and runs each statement of schema on
// that connection, failing the test at the first that fails. It returns a
// context that ends when the test does, or after timeout (connecting and
// the statements included), the cluster, and the connection, which is
// closed when the test ends.
func ConnectT(t testing.TB, timeout time.Duration, schema ...string) (context.Context, *pgtemp.Cluster, *pgx.Conn) {
	t.Helper()
	pg := StartT(t, pgtemp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, s := range schema {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return ctx, pg, conn
}

// requireBin skips the test when PostgreSQL's server binaries are
// missing, except in CI (CI set) or when CDC_RELAY_TEST_PG asks for a
// version, where a missing PostgreSQL is a failure.
func requireBin(t testing.TB) {
	t.Helper()
	if _, err := pgtemp.FindBin(); err != nil {
		if os.Getenv("CI") != "" || os.Getenv(pgtemp.VersionEnv) != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}
