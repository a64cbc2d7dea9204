package slot

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/replication"
)

// TestPrepareSlotMakesAFailoverSlot: the slot `migrate` creates with SQL
// is a failover slot on PostgreSQL 17+, on a primary with no standby, and
// is created as before on earlier versions.
func TestPrepareSlotMakesAFailoverSlot(t *testing.T) {
	t.Parallel()
	db := sharedPG.DB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cfg := defaultConfig()
	cfg.PostgresURL, cfg.Slot = db.URL(), db.Name
	if _, err := migrations.Apply(ctx, conn, migrationsOf(cfg)); err != nil {
		t.Fatal(err)
	}
	res, err := Prepare(ctx, conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created {
		t.Fatalf("Prepare did not create the slot: %+v", res)
	}
	f, err := replication.LookupFailover(ctx, conn, cfg.Slot)
	if err != nil {
		t.Fatal(err)
	}
	if f.Slot != f.Supported() {
		t.Fatalf("PostgreSQL %d: the slot is a failover slot: %v, want %v", f.Version, f.Slot, f.Supported())
	}
}
