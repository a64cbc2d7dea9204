package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// startDB starts a throwaway PostgreSQL for a test of the commands, clears
// the CDC_RELAY_ variables, and runs the statements of schema. It returns
// a context that ends with the test (after 3 minutes at most), the URL of
// the database postgres, and a connection to it.
func startDB(t *testing.T, schema ...string) (context.Context, string, *pgx.Conn) {
	t.Helper()
	clearEnv(t)
	ctx, pg, conn := pgtemptest.ConnectT(t, 3*time.Minute, schema...)
	return ctx, pg.URL("postgres"), conn
}
