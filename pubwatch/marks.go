package pubwatch

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// storedMark is an outbox table's entry in the checkpoint row's
// publication marks: what its watch found right when a relay last started
// on the slot (or what recover republished under).
type storedMark struct {
	OID   uint32 `json:"oid"`
	Stamp string `json:"stamp"`
	// Columns are the optional columns of the mapping the table had then
	// (ExpectedMappings): a later start refuses while it lacks one.
	Columns []string `json:"columns,omitempty"`
}

// sameMark reports whether two marks say the same.
func sameMark(a, b storedMark) bool {
	return a.OID == b.OID && a.Stamp == b.Stamp && slices.Equal(a.Columns, b.Columns)
}

// Session is where one session's watches start from.
type Session struct {
	// Start is where the session resumes.
	Start pglogrepl.LSN
	// Prev are the marks of the Run's last session's watches
	// (Watches.Marks), or nil.
	Prev []Mark
	// Expected are the optional columns each outbox table is expected to
	// have (ExpectedMappings), table i at index i, kept in the marks.
	Expected [][]string
	// Stop ends the session's stream, after a failed check.
	Stop func()
}

// Watch checks each outbox table of cfg once, returns the session's
// watches, and records what they found in the checkpoint row. They start
// from the marks of the Run's last session, else from those the
// checkpoint row keeps, so that a change of the publication while no
// session watched it (a reconnect, a restart, no relay running) stops the
// relay as one between two checks does (see watchTable). An error is a
// [fatal.Error] when the publication does not publish a table's inserts;
// when only recording failed, the watches come with it.
func Watch(ctx context.Context, db pgdb.DB, cfg Config, s Session) (Watches, error) {
	prev, stored, err := previousMarks(ctx, cfg, s)
	if err != nil {
		return nil, err
	}
	ws, err := watchTables(ctx, db, cfg, s.Start, prev, s.Stop)
	if err != nil {
		return nil, err
	}
	marks := make(map[string]storedMark, len(ws))
	for i, m := range ws.Marks() {
		var cols []string
		if i < len(s.Expected) {
			cols = s.Expected[i]
		}
		marks[markKey(cfg, i)] = storedMark{OID: m.oid, Stamp: m.stamp, Columns: cols}
	}
	if len(marks) == 0 || maps.EqualFunc(marks, stored, sameMark) {
		return ws, nil
	}
	return ws, setPublicationMarks(ctx, cfg.Store, cfg.Slot, marks)
}

// previousMarks returns the marks the session's watches start from (nil
// for none), and those the checkpoint row holds. The checkpoint row's
// stand at the session's start, with the commit time of its position.
func previousMarks(ctx context.Context, cfg Config, s Session) ([]Mark, map[string]storedMark, error) {
	raw, err := cfg.Store.PublicationMarks(ctx, cfg.Slot)
	if err != nil {
		return nil, nil, err
	}
	var stored map[string]storedMark
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &stored); err != nil {
			cfg.Log.Warn("the checkpoint row's publication marks are unreadable: the table watches start from the publication as it is now", "err", err)
			stored = nil
		}
	}
	if len(s.Prev) > 0 || len(stored) == 0 {
		return s.Prev, stored, nil
	}
	cp, _, err := cfg.Store.Load(ctx, cfg.Slot)
	if err != nil {
		return nil, nil, err
	}
	marks := make([]Mark, len(cfg.Tables))
	for i := range cfg.Tables {
		if m, ok := stored[markKey(cfg, i)]; ok {
			marks[i] = Mark{oid: m.OID, stamp: m.Stamp, at: checkpoint.Position{LSN: s.Start, CommitTime: cp.CommitTime}}
		}
	}
	return marks, stored, nil
}

// RecordPublication records in the slot's checkpoint row what the
// publication publishes of each outbox table now: after recover has
// republished the rows a change of the publication may have hidden, the
// next relay starts from the publication as it is. The expected columns
// stored are kept: a column renamed is still refused at the next start
// (ExpectedMappings).
func RecordPublication(ctx context.Context, db pgdb.DB, cfg Config) error {
	stored, err := storedMarks(ctx, cfg.Store, cfg.Slot)
	if err != nil {
		return err
	}
	marks := make(map[string]storedMark, len(cfg.Tables))
	for i := range cfg.Tables {
		p, err := migrations.LookupPublication(ctx, db, cfg.migrations(i))
		if err != nil {
			return err
		}
		key := markKey(cfg, i)
		marks[key] = storedMark{OID: p.TableOID, Stamp: p.Stamp, Columns: stored[key].Columns}
	}
	return setPublicationMarks(ctx, cfg.Store, cfg.Slot, marks)
}

// CheckExpectedColumns refuses with a [fatal.Error], before recover
// publishes anything, an outbox table that lacks an optional column it had
// when a relay last started on the slot (the publication marks' Columns):
// its rows would go out without their id, to another topic, or without
// their headers, as a start refuses too (ExpectedMappings).
func CheckExpectedColumns(ctx context.Context, db pgdb.DB, cfg Config) error {
	stored, err := storedMarks(ctx, cfg.Store, cfg.Slot)
	if err != nil {
		return err
	}
	for i := range cfg.Tables {
		had := stored[markKey(cfg, i)].Columns
		if len(had) == 0 {
			continue
		}
		m := cfg.Tables[i]
		names, _, err := tableColumns(ctx, db, m.Schema, m.Table)
		if err != nil {
			return err
		}
		if lacks := lacking(had, names); len(names) > 0 && len(lacks) > 0 {
			return fatal.Error{Err: fmt.Errorf("outbox table %s lacks the column %s it had when the relay last started on slot %q: its rows would be published without it. "+
				"Rename it back, or map the column that now holds it, then run recover again", markKey(cfg, i), strings.Join(lacks, ", "), cfg.Slot)}
		}
	}
	return nil
}

// storedMarks returns slot's publication marks by markKey; none when the
// row has none or they are unreadable.
func storedMarks(ctx context.Context, store *checkpoint.Store, slot string) (map[string]storedMark, error) {
	raw, err := store.PublicationMarks(ctx, slot)
	if err != nil || raw == "" {
		return nil, err
	}
	var stored map[string]storedMark
	if json.Unmarshal([]byte(raw), &stored) != nil {
		return nil, nil
	}
	return stored, nil
}

func setPublicationMarks(ctx context.Context, store *checkpoint.Store, slot string, marks map[string]storedMark) error {
	doc, err := json.Marshal(marks)
	if err != nil {
		return fmt.Errorf("encode the publication marks: %w", err)
	}
	return store.SetPublicationMarks(ctx, slot, string(doc))
}
