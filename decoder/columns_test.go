package decoder

import (
	"slices"
	"testing"
)

// TestMappingColumns: every column the decoder reads, once, whatever role
// names it; the tags column instead of the topic column with routes.
func TestMappingColumns(t *testing.T) {
	routed := DefaultMapping()
	routed.Routes = []Route{{Topic: "t", AnyOfTags: []string{"a"}}}
	routed.TagsColumn = "tags"
	routed.TopicTemplate = ""
	for _, tt := range []struct {
		name string
		m    Mapping
		want []string
	}{
		{"default", DefaultMapping(), []string{"id", "aggregate_id", "payload", "topic", "headers", "created_at", "event_type", "aggregate_type"}},
		{"routed", routed, []string{"id", "aggregate_id", "payload", "tags", "headers", "created_at", "event_type", "aggregate_type"}},
		{"payload only", Mapping{Schema: "s", Table: "t", PayloadColumn: "body", TopicTemplate: "events.{kind}"}, []string{"body", "kind"}},
	} {
		if got := tt.m.Columns(); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Columns() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
