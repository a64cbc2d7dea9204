package replication_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// pg is the package's PostgreSQL: each test's database is a copy of one
// with a table t and a publication p of it.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{
	Template: func(ctx context.Context, conn *pgx.Conn) error {
		for _, sql := range []string{"CREATE TABLE t (id int)", "CREATE PUBLICATION p FOR TABLE t"} {
			if _, err := conn.Exec(ctx, sql); err != nil {
				return err
			}
		}
		return nil
	},
})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }
