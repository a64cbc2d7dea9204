package decoder

import (
	"slices"
	"strings"
	"testing"
)

// TestDecodeExpectedColumnRenamed: an optional column the table had when
// the session started (Expecting) that a later Relation lacks makes the
// relation unfit, like a required one: the rows are parked, never sent
// without their id, to the template's topic, or without their headers. A
// missing timestamp column leaves the record whole but for its timestamp.
// Without Expecting, or for a column the table lacked, the row goes as
// before.
func TestDecodeExpectedColumnRenamed(t *testing.T) {
	rename := func(from, to string) []col {
		out := slices.Clone(outboxCols)
		for i := range out {
			if out[i].name == from {
				out[i].name = to
			}
		}
		return out
	}
	row := insertMsg(7, s("id-1"), s("order"), s("o-1"), s("OrderPlaced"), s("special.topic"), s(`{"n": 1}`), s(`{"traceparent": "abc"}`), s("2026-11-22 16:59:15+00"))
	tests := []struct {
		col, role, flag string
		whole           bool // the record is whole but for its timestamp
	}{
		{"id", "the event id", "--id-column ''", false},
		{"topic", "the topic column", "--topic-column ''", false},
		{"headers", "the headers column", "--headers-column ''", false},
		{"created_at", "the timestamp column", "--timestamp-column ''", true},
	}
	for _, tt := range tests {
		t.Run(tt.col, func(t *testing.T) {
			m := DefaultMapping().Expecting(names(outboxCols))
			d, err := New(m)
			if err != nil {
				t.Fatal(err)
			}
			cols := rename(tt.col, tt.col+"_renamed")
			unfit := mustDecode(t, d, relationMsg(7, "public", "outbox", cols)).Relation.Unfit
			if unfit == nil || unfit.Missing != tt.col || unfit.Timestamp != tt.whole ||
				!strings.Contains(unfit.Error(), tt.role) || !strings.Contains(unfit.Error(), tt.flag) {
				t.Fatalf("Unfit %#v, want column %q missing (%s), naming %s", unfit, tt.col, tt.role, tt.flag)
			}
			if err := m.CheckColumns(names(cols), types(cols)); err == nil || err.Error() != unfit.Error() {
				t.Fatalf("CheckColumns: %v, want the Relation's %v", err, unfit)
			}
			msg := mustDecode(t, d, row)
			if msg.Poison == nil || !strings.Contains(msg.Poison.Error(), tt.col) {
				t.Fatalf("row: poison %v, want it parked for %q", msg.Poison, tt.col)
			}
			if tt.whole != (msg.Event.Topic == "special.topic") {
				t.Errorf("topic %q: want the record's own only when whole but for its timestamp", msg.Event.Topic)
			}

			// Not expected: the row goes without the column, as before.
			plain, err := New(DefaultMapping().Expecting(names(cols)))
			if err != nil {
				t.Fatal(err)
			}
			if u := mustDecode(t, plain, relationMsg(7, "public", "outbox", cols)).Relation.Unfit; u != nil {
				t.Fatalf("a column the table lacked at the start is unfit: %v", u)
			}
			if msg := mustDecode(t, plain, row); msg.Poison != nil {
				t.Fatalf("poison %v for a table that lacked %q at the start", msg.Poison, tt.col)
			}
		})
	}
}

func TestOptionalColumns(t *testing.T) {
	m := DefaultMapping()
	if got := m.OptionalColumns(); !slices.Equal(got, []string{"id", "topic", "headers", "created_at"}) {
		t.Fatalf("OptionalColumns %q", got)
	}
	m.IDColumn, m.Routes, m.TagsColumn = "", []Route{{Topic: "t", AnyOfTags: []string{"a"}}}, "tags"
	if got := m.OptionalColumns(); !slices.Equal(got, []string{"headers", "created_at"}) {
		t.Fatalf("OptionalColumns with routes and no id %q", got)
	}
}
