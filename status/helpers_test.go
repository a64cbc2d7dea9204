package status

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// testDB is a migrated database on a throwaway cluster, with a store on its
// status table.
type testDB struct {
	url   string
	conn  *pgx.Conn
	store *Store
}

// newTestDB starts one; its context ends with the test, or after two
// minutes.
func newTestDB(t *testing.T) (context.Context, *testDB) {
	t.Helper()
	ctx, pg, conn := pgtemptest.ConnectT(t, 2*time.Minute)
	if _, err := migrations.Apply(ctx, conn, migrations.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	return ctx, &testDB{url: pg.URL("postgres"), conn: conn, store: NewStore(conn, "public", "outbox_delivery")}
}
