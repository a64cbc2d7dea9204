package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cdc-relay/cdc-relay/checkpoint"
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
	// (expect.go): a later start refuses while it lacks one.
	Columns []string `json:"columns,omitempty"`
}

// sameMark reports whether two marks say the same.
func sameMark(a, b storedMark) bool {
	return a.OID == b.OID && a.Stamp == b.Stamp && slices.Equal(a.Columns, b.Columns)
}

// markKey names outbox table i of cfg in the publication marks.
func markKey(cfg Config, i int) string {
	m := cfg.Migrations(i)
	return m.OutboxSchema + "." + m.OutboxTable
}

// startWatches starts the session's table watches and records what they
// found in the checkpoint row. They start from the marks of the Run's
// last session, else from those the checkpoint row keeps, so that a
// change of the publication while no session watched it (a reconnect, a
// restart, no relay running) stops the relay as one between two checks
// does (see watchTable).
func (s *session) startWatches(ctx context.Context) error {
	prev, stored, err := s.previousMarks(ctx)
	if err != nil {
		return err
	}
	if s.watch, err = watchTables(ctx, s.pool, s.cfg, s.start, prev, s.stopStream, s.log); err != nil {
		return err
	}
	s.onEnd(func() { s.watchMarks = s.watch.marks() }) // for the next session
	marks := make(map[string]storedMark, len(s.watch))
	for i, m := range s.watch.marks() {
		marks[markKey(s.cfg, i)] = storedMark{OID: m.oid, Stamp: m.stamp, Columns: s.expected[i]}
	}
	if len(marks) == 0 || maps.EqualFunc(marks, stored, sameMark) {
		return nil
	}
	return setPublicationMarks(ctx, s.store, s.cfg.Slot, marks)
}

// previousMarks returns the marks the session's watches start from (nil
// for none), and those the checkpoint row holds. The checkpoint row's
// stand at the session's start, with the commit time of its position.
func (s *session) previousMarks(ctx context.Context) ([]watchMark, map[string]storedMark, error) {
	raw, err := s.store.PublicationMarks(ctx, s.cfg.Slot)
	if err != nil {
		return nil, nil, err
	}
	var stored map[string]storedMark
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &stored); err != nil {
			s.log.Warn("the checkpoint row's publication marks are unreadable: the table watches start from the publication as it is now", "err", err)
			stored = nil
		}
	}
	if len(s.watchMarks) > 0 || len(stored) == 0 {
		return s.watchMarks, stored, nil
	}
	cp, _, err := s.store.Load(ctx, s.cfg.Slot)
	if err != nil {
		return nil, nil, err
	}
	marks := make([]watchMark, len(s.cfg.Tables))
	for i := range s.cfg.Tables {
		if m, ok := stored[markKey(s.cfg, i)]; ok {
			marks[i] = watchMark{oid: m.OID, stamp: m.Stamp, at: checkpoint.Position{LSN: s.start, CommitTime: cp.CommitTime}}
		}
	}
	return marks, stored, nil
}

// recordPublication records in slot's checkpoint row what the publication
// publishes of each outbox table now: after recover has republished the
// rows a change of the publication may have hidden, the next relay starts
// from the publication as it is. The expected columns stored are kept:
// a column renamed is still refused at the next start (expect.go).
func recordPublication(ctx context.Context, db pgdb.DB, store *checkpoint.Store, cfg Config) error {
	stored, err := storedMarks(ctx, store, cfg.Slot)
	if err != nil {
		return err
	}
	marks := make(map[string]storedMark, len(cfg.Tables))
	for i := range cfg.Tables {
		p, err := migrations.LookupPublication(ctx, db, cfg.Migrations(i))
		if err != nil {
			return err
		}
		key := markKey(cfg, i)
		marks[key] = storedMark{OID: p.TableOID, Stamp: p.Stamp, Columns: stored[key].Columns}
	}
	return setPublicationMarks(ctx, store, cfg.Slot, marks)
}

// checkExpectedColumns refuses, before recover publishes anything, an
// outbox table that lacks an optional column it had when a relay last
// started on the slot (the publication marks' Columns): its rows would
// go out without their id, to another topic, or without their headers,
// as a start refuses too (expect.go).
func checkExpectedColumns(ctx context.Context, db pgdb.DB, store *checkpoint.Store, cfg Config) error {
	stored, err := storedMarks(ctx, store, cfg.Slot)
	if err != nil {
		return err
	}
	for i := range cfg.Tables {
		had := stored[markKey(cfg, i)].Columns
		if len(had) == 0 {
			continue
		}
		m := cfg.Migrations(i)
		names, _, err := tableColumns(ctx, db, m.OutboxSchema, m.OutboxTable)
		if err != nil {
			return err
		}
		if lacks := lacking(had, names); len(names) > 0 && len(lacks) > 0 {
			return fatalError{fmt.Errorf("outbox table %s lacks the column %s it had when the relay last started on slot %q: its rows would be published without it. "+
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
