package recovery

import (
	"slices"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// TestWindowAdoptable: recover parks for a webhook the rows of the
// routes whose topic goes to it (every publisher of a topic's routes
// gets its copy), by the window's predicate, and no other route's.
func TestWindowAdoptable(t *testing.T) {
	tbl := outbox.Table{Mapping: decoder.Mapping{Schema: "public", Table: "events", IDColumn: "position", TagsColumn: "tags", Routes: []decoder.Route{
		{Topic: "wallet", AnyOfTags: []string{"w"}}, {Topic: "payment", AnyOfTags: []string{"p"}}, {Topic: "payment", AnyOfTags: []string{"r"}}, {Topic: "audit", AnyOfTags: []string{"a"}}}},
		RoutePublishers: [][]string{{"kafka", "partner"}, {"kafka"}, {"partner"}, {"kafka"}}}
	a := windowAdoptable(tbl, "public.events", "partner", "ts >= 'x'")
	var got []string
	for _, r := range a.Routes {
		got = append(got, r.Topic)
	}
	if want := []string{"wallet", "payment", "payment"}; !slices.Equal(got, want) || !slices.Equal(a.RouteIndex, []int{0, 1, 2}) ||
		a.Where != "ts >= 'x'" || a.Publisher != "partner" || a.IDColumn != "position" {
		t.Errorf("partner adopts routes %v %v where %q (publisher %q, id %q); want %v [0 1 2], the window's predicate", got, a.RouteIndex, a.Where, a.Publisher, a.IDColumn, want)
	}
}
