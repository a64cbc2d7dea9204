package relay

import (
	"context"
	"regexp"
	"testing"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/slot"
)

// TestOwnPosition: the checkpoint topic's position is taken only when it
// is this stream's: the same stream id (a restart, a takeover, a promoted
// standby whose slot and row came from the old primary), or a record and
// a row both from before stream ids (the upgrade, once). A record of
// another stream (a copy of the database, a slot created again) is not;
// nor is a record without an id once the row has one.
func TestOwnPosition(t *testing.T) {
	const a, b = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, tt := range []struct {
		name       string
		row        string
		rec        sink.Checkpoint
		found      bool
		wantStream string // "new": a new id
		wantTake   bool
	}{
		{"same stream: a restart or a takeover", a, sink.Checkpoint{Stream: a, LSN: 0x20}, true, a, true},
		{"another stream: a copy, or the slot created again", a, sink.Checkpoint{Stream: b, LSN: 0x20}, true, a, false},
		{"a record of an earlier version, the row has an id", a, sink.Checkpoint{LSN: 0x20}, true, a, false},
		{"no record", a, sink.Checkpoint{}, false, a, false},
		{"the upgrade: neither has an id", "", sink.Checkpoint{LSN: 0x20}, true, "new", true},
		{"a row without an id continues the record's stream", "", sink.Checkpoint{Stream: b, LSN: 0x20}, true, b, true},
		{"a row without an id and no record", "", sink.Checkpoint{}, false, "new", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stream, take := ownPosition(tt.row, tt.rec, tt.found)
			if take != tt.wantTake {
				t.Errorf("take = %v, want %v", take, tt.wantTake)
			}
			switch {
			case tt.wantStream == "new" && (!hex32.MatchString(stream) || stream == a || stream == b):
				t.Errorf("stream = %q, want a new id of 32 hex digits", stream)
			case tt.wantStream != "new" && stream != tt.wantStream:
				t.Errorf("stream = %q, want %q", stream, tt.wantStream)
			}
		})
	}
}

// TestOnServerTimeline: the checkpoint topic's position is this server's
// when written on its timeline, or on an ancestor at or before the point
// where this server's history left it. Past that point (a standby promoted
// without all of the old primary's WAL), on a later timeline, or on one
// not in the history, it is not. A record without a timeline (an earlier
// version's) is judged by its stream alone.
func TestOnServerTimeline(t *testing.T) {
	history := []replication.TimelineSwitch{{Parent: 1, At: 0x3000160}, {Parent: 2, At: 0x5000000}}
	for _, tt := range []struct {
		name     string
		rec      sink.Checkpoint
		server   int32
		history  []replication.TimelineSwitch
		wantOK   bool
		wantLeft pglogrepl.LSN
	}{
		{"same timeline", sink.Checkpoint{Timeline: 3, LSN: 0x9000000}, 3, nil, true, 0},
		{"same timeline, timeline 1", sink.Checkpoint{Timeline: 1, LSN: 0x9000000}, 1, nil, true, 0},
		{"no timeline: an earlier version's record", sink.Checkpoint{LSN: 0x9000000}, 3, history, true, 0},
		{"the parent, before its switch point", sink.Checkpoint{Timeline: 2, LSN: 0x4000000}, 3, history, true, 0x5000000},
		{"the parent, at its switch point", sink.Checkpoint{Timeline: 2, LSN: 0x5000000}, 3, history, true, 0x5000000},
		{"the parent, past its switch point: an asynchronous failover", sink.Checkpoint{Timeline: 2, LSN: 0x5000001}, 3, history, false, 0x5000000},
		{"an older ancestor, before its switch point", sink.Checkpoint{Timeline: 1, LSN: 0x3000000}, 3, history, true, 0x3000160},
		{"an older ancestor, past its switch point", sink.Checkpoint{Timeline: 1, LSN: 0x4000000}, 3, history, false, 0x3000160},
		{"an earlier timeline not in the history: another branch", sink.Checkpoint{Timeline: 2, LSN: 0x100}, 4, []replication.TimelineSwitch{{Parent: 1, At: 0x3000160}, {Parent: 3, At: 0x6000000}}, false, 0},
		{"a later timeline: the server is the old primary", sink.Checkpoint{Timeline: 4, LSN: 0x100}, 3, history, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ok, left := onServerTimeline(tt.rec, tt.server, tt.history)
			if ok != tt.wantOK || left != tt.wantLeft {
				t.Errorf("onServerTimeline = %v, %s; want %v, %s", ok, left, tt.wantOK, tt.wantLeft)
			}
		})
	}
}

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
