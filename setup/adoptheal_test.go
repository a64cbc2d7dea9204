package setup

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/checkpoint"
)

// TestMigrateAdoptHealsAnUnrecordedSlot: a slot whose creator recorded
// its intent and was killed before it recorded the slot (no checkpoint
// row, nothing adopted) is not refused as a slot that exists: migrate
// creates it again and adopts, once it may lead the slot; while a relay
// leads it, migrate leaves it to the relay, adopting nothing. What is
// left of the creator's adopting session is ended first. Once
// recorded, a migrate again is refused as before.
func TestMigrateAdoptHealsAnUnrecordedSlot(t *testing.T) {
	t.Parallel()
	ctx, db, conn := pgtemptestConnect(t)
	url := db.URL()
	rc := adoptConfig("position > (SELECT last_position FROM progress)")
	rc.Slot = db.Name // slots are the cluster's
	if _, err := Migrate(ctx, url, rc, Options{NoSlot: true}); err != nil {
		t.Fatal(err)
	}
	store := checkpoint.NewStore(conn, rc.CheckpointSchema, rc.CheckpointTable)
	if err := store.BeginCreate(ctx, rc.Slot); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", rc.Slot); err != nil {
		t.Fatal(err)
	}
	before := queryStrings(ctx, t, conn, "SELECT restart_lsn::text FROM pg_replication_slots WHERE slot_name = '"+rc.Slot+"'")[0]

	relay := queryStrings(ctx, t, conn, "SELECT pg_try_advisory_lock(hashtextextended('cdc-relay/' || '"+rc.Slot+"', 0))::text")
	if _, err := Migrate(ctx, url, rc, Options{}); err == nil || !strings.Contains(err.Error(), "led by a running relay") || relay[0] != "true" {
		t.Errorf("migrate while a relay leads the slot: %v; want it left to the relay", err)
	}
	if n := queryStrings(ctx, t, conn, "SELECT count(*)::text FROM outbox_delivery"); n[0] != "0" {
		t.Errorf("%s rows adopted while a relay leads the slot, want none", n[0])
	}
	queryStrings(ctx, t, conn, "SELECT pg_advisory_unlock_all()::text")

	// What is left of the killed creator: its adopting session, named.
	left, err := pgx.Connect(ctx, url+"&application_name=cdc-relay%20adopt%20"+rc.Slot)
	if err != nil {
		t.Fatal(err)
	}
	defer left.Close(context.Background())
	res, err := Migrate(ctx, url, rc, Options{})
	if err != nil || !res.Slot.Created || !res.Slot.Recreated || res.Slot.Adopted != 6 {
		t.Fatalf("migrate over the unrecorded slot = %+v, %v; want it created again, 6 rows adopted", res.Slot, err)
	}
	adopted := queryStrings(ctx, t, conn, "SELECT event_id FROM outbox_delivery WHERE reload ORDER BY id")
	after := queryStrings(ctx, t, conn, "SELECT restart_lsn::text FROM pg_replication_slots WHERE slot_name = '"+rc.Slot+"'")[0]
	if got := strings.Join(adopted, " "); got != "5 6 7 8 9 10" || after == before {
		t.Errorf("adopted %q by a slot at %s (the old one at %s); want 5 to 10 once, by a new slot", got, after, before)
	}
	if err := left.Ping(ctx); err == nil {
		t.Errorf("the killed creator's adopting session is still there")
	}
	if _, creating, err := store.Creating(ctx, rc.Slot); err != nil || creating {
		t.Errorf("the intent after the slot was recorded: %v, %v; want it gone", creating, err)
	}
	_, err = Migrate(ctx, url, rc, Options{})
	if !errors.As(err, new(*AdoptSlotExistsError)) {
		t.Errorf("migrate again, the slot recorded: %v; want it refused", err)
	}
}
