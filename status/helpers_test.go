package status

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// pg is the package's PostgreSQL: every test's database is a copy of one
// with the relay's tables and the default outbox table.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{
	Template: func(ctx context.Context, conn *pgx.Conn) error {
		_, err := migrations.Apply(ctx, conn, migrations.DefaultConfig())
		return err
	},
})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// testDB is a migrated database of the test's own on the package's
// cluster, with a store on its status table.
type testDB struct {
	url   string
	conn  *pgx.Conn
	store *Store
}

// newTestDB makes one; its context ends with the test, or after two
// minutes.
func newTestDB(t *testing.T) (context.Context, *testDB) {
	t.Helper()
	ctx, db, conn := pg.ConnectDB(t, 2*time.Minute)
	return ctx, &testDB{url: db.URL(), conn: conn, store: NewStore(conn, "public", "outbox_delivery")}
}
