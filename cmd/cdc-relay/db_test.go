package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// startDB starts a throwaway PostgreSQL for a test of the commands, clears
// the CDC_RELAY_ variables, and runs the statements of schema. It returns
// a context that ends with the test (after 3 minutes at most), the URL of
// the database postgres, and a connection to it.
func startDB(t *testing.T, schema ...string) (context.Context, string, *pgx.Conn) {
	t.Helper()
	pg := pgtemptest.StartT(t, pgtemp.Options{})
	url := pg.URL("postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	clearEnv(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, s := range schema {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return ctx, url, conn
}
