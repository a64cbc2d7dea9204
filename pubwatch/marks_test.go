package pubwatch

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// TestRecordPublicationKeepsTheExpectedColumns: recover records the
// publication as it is now, but keeps the optional columns a start found
// in the table, so that the next start still refuses while one is renamed
// rather than sending its events without it.
func TestRecordPublicationKeepsTheExpectedColumns(t *testing.T) {
	t.Parallel()
	db := newWatchDB(t, sharedPG.DB(t))
	ctx := context.Background()
	m := migrations.DefaultConfig()
	store := checkpoint.NewStore(db.conn, m.CheckpointSchema, m.CheckpointTable)
	cfg := testConfig(store)
	if err := store.Save(ctx, cfg.Slot, 0x100); err != nil {
		t.Fatal(err)
	}
	key := markKey(cfg, 0)
	had := []string{"id", "topic", "headers", "created_at"}
	if err := setPublicationMarks(ctx, store, cfg.Slot, map[string]storedMark{key: {OID: 1, Stamp: "old", Columns: had}}); err != nil {
		t.Fatal(err)
	}
	if err := RecordPublication(ctx, db.conn, cfg); err != nil {
		t.Fatal(err)
	}
	raw, err := store.PublicationMarks(ctx, cfg.Slot)
	if err != nil {
		t.Fatal(err)
	}
	var marks map[string]storedMark
	if err := json.Unmarshal([]byte(raw), &marks); err != nil {
		t.Fatal(err)
	}
	if m := marks[key]; m.Stamp == "old" || !slices.Equal(m.Columns, had) {
		t.Fatalf("recorded %+v, want the publication as it is now with the columns %q kept", m, had)
	}
}

// TestRecoverRefusesARenamedExpectedColumn: recover refuses, naming the
// column, an outbox table that lacks an optional column a start found in
// it, rather than publish its rows without it.
func TestRecoverRefusesARenamedExpectedColumn(t *testing.T) {
	t.Parallel()
	db := newWatchDB(t, sharedPG.DB(t))
	ctx := context.Background()
	m := migrations.DefaultConfig()
	store := checkpoint.NewStore(db.conn, m.CheckpointSchema, m.CheckpointTable)
	cfg := testConfig(store)
	if err := store.Save(ctx, cfg.Slot, 0x100); err != nil {
		t.Fatal(err)
	}
	if err := setPublicationMarks(ctx, store, cfg.Slot, map[string]storedMark{markKey(cfg, 0): {OID: 1, Stamp: "s", Columns: []string{"id", "topic"}}}); err != nil {
		t.Fatal(err)
	}
	if err := CheckExpectedColumns(ctx, db.conn, cfg); err != nil {
		t.Fatalf("refused a table with every column: %v", err)
	}
	db.exec("ALTER TABLE outbox RENAME COLUMN topic TO destination")
	err := CheckExpectedColumns(ctx, db.conn, cfg)
	if !fatal.Is(err) || !strings.Contains(err.Error(), "lacks the column topic") {
		t.Fatalf("checkExpectedColumns = %v, want a fatal error naming the column topic", err)
	}
}
