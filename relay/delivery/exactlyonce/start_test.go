package exactlyonce

import (
	"regexp"
	"testing"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/sink"
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
			stream, take := OwnPosition(tt.row, tt.rec, tt.found)
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
			ok, left := OnServerTimeline(tt.rec, tt.server, tt.history)
			if ok != tt.wantOK || left != tt.wantLeft {
				t.Errorf("OnServerTimeline = %v, %s; want %v, %s", ok, left, tt.wantOK, tt.wantLeft)
			}
		})
	}
}
