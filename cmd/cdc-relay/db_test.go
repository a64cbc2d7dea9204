package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// pg is the package's PostgreSQL. The tests that use it run one at a
// time (they set the process's environment), so the slot the commands
// make by default, cdc_relay, is one test's at a time, dropped with its
// database.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{})

// startDB makes a database of the test's own on the package's cluster for
// a test of the commands, clears the CDC_RELAY_ variables, and runs the
// statements of schema. It returns a context that ends with the test
// (after 3 minutes at most), the database's URL, and a connection to it.
func startDB(t *testing.T, schema ...string) (context.Context, string, *pgx.Conn) {
	t.Helper()
	clearEnv(t)
	ctx, db, conn := pg.ConnectDB(t, 3*time.Minute, schema...)
	return ctx, db.URL(), conn
}
