package pgtemptest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var shared = NewShared(SharedOptions{
	Template: func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "CREATE TABLE from_template (id int)")
		return err
	},
})

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

// TestSharedGivesEachTestItsOwnCopy: two tests side by side each get a
// database of their own, a copy of the template; a slot a test made goes
// with its database.
func TestSharedGivesEachTestItsOwnCopy(t *testing.T) {
	var names [2]string
	t.Run("side_by_side", func(t *testing.T) {
		for i := range names {
			t.Run("", func(t *testing.T) {
				t.Parallel()
				ctx, db, conn := shared.ConnectDB(t, time.Minute)
				names[i] = db.Name
				if _, err := conn.Exec(ctx, "INSERT INTO from_template VALUES (1)"); err != nil {
					t.Fatalf("the template's table: %v", err)
				}
				if _, err := conn.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", db.Name); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
	if names[0] == names[1] {
		t.Fatalf("two tests got the same database %s", names[0])
	}
	ctx, _, conn := shared.ConnectDB(t, time.Minute)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM from_template").Scan(&n); err != nil || n != 0 {
		t.Fatalf("a new copy holds %d rows (%v), want 0: the template was written to", n, err)
	}
	var dbs int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = ANY($1)", names[:]).Scan(&dbs); err != nil || dbs != 0 {
		t.Fatalf("%d databases of the ended tests remain (%v), want 0", dbs, err)
	}
	var slots int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE database = ANY($1)", names[:]).Scan(&slots); err != nil || slots != 0 {
		t.Fatalf("%d slots of the ended tests' databases remain (%v), want 0", slots, err)
	}
}
