package relay

import (
	"context"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/slot"
)

// TestNewSlotStartsANewStream: a slot migrate's PrepareSlot creates
// records a new stream id with its checkpoint row, another for each slot;
// a slot that exists keeps its row's.
func TestNewSlotStartsANewStream(t *testing.T) {
	t.Parallel()
	db := sharedPG.DB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := migrations.Apply(ctx, conn, migrations.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.PostgresURL = db.URL()
	store := checkpoint.NewStore(conn, cfg.CheckpointSchema, cfg.CheckpointTable)
	if id, err := store.Stream(ctx, "none"); err != nil || id != "" {
		t.Fatalf("Stream of a slot without a row = %q, %v; want none", id, err)
	}
	if err := store.SetStream(ctx, "none", "x"); err == nil {
		t.Fatal("SetStream of a slot without a row succeeded; want an error")
	}
	seen := map[string]string{}
	prepare := func() (slot.Prepared, error) { return slot.Prepare(ctx, conn, cfg.SlotConfig()) }
	for _, slot := range []string{db.Name + "_first", db.Name + "_second"} {
		cfg.Slot = slot
		if res, err := prepare(); err != nil || !res.Created {
			t.Fatalf("PrepareSlot(%s) = %+v, %v; want the slot created", slot, res, err)
		}
		id, err := store.Stream(ctx, slot)
		if err != nil || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
			t.Fatalf("stream id of new slot %s = %q, %v; want 32 hex digits", slot, id, err)
		}
		if other, ok := seen[id]; ok {
			t.Fatalf("slots %s and %s got the same stream id %s", other, slot, id)
		}
		seen[id] = slot
		if _, err := prepare(); err != nil {
			t.Fatal(err)
		}
		if again, _ := store.Stream(ctx, slot); again != id {
			t.Fatalf("PrepareSlot of existing slot %s changed its stream id from %s to %s", slot, id, again)
		}
	}
}
