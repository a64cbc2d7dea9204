package outbox

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/status"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// routedTable is an event store routed by tags: wallet-events to Kafka
// and the partner, payment-events to Kafka, audit to the partner alone
// and, by a second route of its topic, to Kafka too.
func routedTable() Table {
	return Table{Mapping: decoder.Mapping{Schema: "public", Table: "events", IDColumn: "position", TagsColumn: "tags", Routes: []decoder.Route{
		{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}},
		{Topic: "payment-events", AnyOfTags: []string{"payment_id"}},
		{Topic: "audit", AnyOfTags: []string{"audit"}},
		{Topic: "audit", AnyOfTags: []string{"x"}},
	}}, RoutePublishers: [][]string{{"kafka", "partner"}, {"kafka"}, {"partner"}, {"kafka"}}}
}

// adoptedBy describes an Adoptable as a switch-over adopts by it:
// "publisher: adopt=W routes[i]=W …", an own predicate marked with *.
func adoptedBy(a status.Adoptable) string {
	own := map[bool]string{true: "*"}
	out := fmt.Sprintf("%s: adopt=%s%s", a.Publisher, a.Where, own[a.OwnWhere])
	for i, r := range a.Routes {
		out += fmt.Sprintf(" routes[%d](%s)=%s%s", a.RouteIndex[i], r.Topic, a.RouteWhere[i], own[a.OwnRouteWhere[i]])
	}
	if len(a.Pending) > 0 {
		out += " pending=" + strings.Join(a.Pending, ",")
	}
	return out
}

// TestAdoptables: a table is adopted once per publisher its events go to,
// each with the routes whose topic the publisher gets (every route of a
// topic that any of its routes sends to it) and that publisher's
// predicates: one given for all applies to each, one given per publisher
// is that publisher's own; rows of a pending status for each publisher.
func TestAdoptables(t *testing.T) {
	for _, tc := range []struct {
		name string
		with func(*Table)
		want []string
	}{
		{"nothing to adopt", func(*Table) {}, nil},
		{"the table's for all", func(t *Table) { t.Adopt = "position > 10" }, []string{
			"kafka: adopt=position > 10 routes[0](wallet-events)= routes[1](payment-events)= routes[2](audit)= routes[3](audit)=",
			"partner: adopt=position > 10 routes[0](wallet-events)= routes[2](audit)= routes[3](audit)="}},
		{"a route's per publisher, the table's per publisher", func(t *Table) {
			t.AdoptBy = map[string]string{"kafka": "position > 10", "partner": "false"}
			t.RouteAdoptBy = []map[string]string{{"kafka": "position > 600", "partner": "position > 540"}}
		}, []string{
			"kafka: adopt=position > 10* routes[0](wallet-events)=position > 600* routes[1](payment-events)= routes[2](audit)= routes[3](audit)=",
			"partner: adopt=false* routes[0](wallet-events)=position > 540* routes[2](audit)= routes[3](audit)="}},
		{"a route's for all", func(t *Table) { t.RouteAdopt = []string{"", "position > 550"} }, []string{
			"kafka: adopt= routes[0](wallet-events)= routes[1](payment-events)=position > 550 routes[2](audit)= routes[3](audit)=",
			"partner: adopt= routes[0](wallet-events)= routes[2](audit)= routes[3](audit)="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := routedTable()
			tc.with(&tb)
			var got []string
			for _, a := range tb.Adoptables("public.events") {
				if a.Source != "public.events" || a.IDColumn != "position" || a.TagsColumn != "tags" {
					t.Errorf("%+v: want the table's source, id and tags columns", a)
				}
				got = append(got, adoptedBy(a))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("adoptables\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestAdoptablesWithoutRoutes: a table without routes is adopted once per
// publisher of the table, rows of a pending status for each, by its
// predicate for each.
func TestAdoptablesWithoutRoutes(t *testing.T) {
	tb := Table{Mapping: decoder.Mapping{Schema: "public", Table: "outbox", IDColumn: "id", TopicTemplate: "orders"},
		Publishers: []string{"partner", "kafka"}, WriteBack: &writeback.Columns{StatusColumn: "status", Pending: []string{"NEW"}},
		AdoptBy: map[string]string{"kafka": "id > 4", "partner": "id > 2"}}
	var got []string
	for _, a := range tb.Adoptables("public.outbox") {
		got = append(got, adoptedBy(a))
	}
	want := []string{"partner: adopt=id > 2* pending=NEW", "kafka: adopt=id > 4* pending=NEW"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("adoptables %q, want %q", got, want)
	}
	tb.AdoptBy = nil
	if got := tb.Adoptables("public.outbox"); len(got) != 2 || got[0].Where != "" || got[1].Pending[0] != "NEW" {
		t.Errorf("pending values alone: %+v, want each publisher's pending rows", got)
	}
}

// TestAdoptPublishersOf: a route's events go to the publishers of every
// route of its topic; a table's, or a table without routes, to all of its
// publishers.
func TestAdoptPublishersOf(t *testing.T) {
	tb := routedTable()
	for _, tc := range []struct {
		route int
		want  []string
	}{
		{-1, []string{"kafka", "partner"}},
		{0, []string{"kafka", "partner"}},
		{1, []string{"kafka"}},
		{2, []string{"partner", "kafka"}},
		{3, []string{"partner", "kafka"}},
	} {
		if got := tb.AdoptPublishersOf(tc.route); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("AdoptPublishersOf(%d) = %q, want %q", tc.route, got, tc.want)
		}
	}
	if got := (Table{}).AdoptPublishersOf(0); !reflect.DeepEqual(got, []string{KafkaPublisher}) {
		t.Errorf("a table without routes: %q, want kafka", got)
	}
}

// TestValidateAdoptPerPublisher: a predicate given per publisher names
// every publisher of its events, including those another route of the
// topic sends to, and no other, none blank; a predicate is given as one
// or per publisher, not both.
func TestValidateAdoptPerPublisher(t *testing.T) {
	for _, tc := range []struct {
		name string
		with func(*Table)
		want string
	}{
		{"every publisher named", func(t *Table) {
			t.AdoptBy = map[string]string{"kafka": "position > 1", "partner": "false"}
			t.RouteAdoptBy = []map[string]string{nil, {"kafka": "position > 2"}, {"kafka": "false", "partner": "position > 3"}}
		}, ""},
		{"the table's leaves one out", func(t *Table) { t.AdoptBy = map[string]string{"kafka": "position > 1"} },
			`table public.events: adopt names no predicate for publisher "partner", which the table's events go to: its backlog would be adopted by nobody`},
		{"a route's leaves out one of its topic's", func(t *Table) { t.RouteAdoptBy = []map[string]string{nil, nil, {"partner": "position > 3"}} },
			`table public.events: routes[2].adopt names no predicate for publisher "kafka", which the route's events (topic audit) go to (routes[3] sends topic audit to it`},
		{"a route's names one its events do not go to", func(t *Table) {
			t.RouteAdoptBy = []map[string]string{nil, {"kafka": "position > 2", "partner": "position > 1"}}
		}, `table public.events: routes[1].adopt.partner: the route's events (topic payment-events) go to kafka only, not to publisher "partner"`},
		{"blank", func(t *Table) { t.AdoptBy = map[string]string{"kafka": " ", "partner": "false"} },
			"table public.events: adopt.kafka is empty: give the publisher's predicate, or false to adopt nothing for it"},
		{"both forms", func(t *Table) {
			t.Adopt, t.AdoptBy = "position > 1", map[string]string{"kafka": "false", "partner": "false"}
		},
			"table public.events: adopt is given both as one predicate and per publisher"},
		{"both forms on a route", func(t *Table) {
			t.RouteAdopt, t.RouteAdoptBy = []string{"position > 1"}, []map[string]string{{"kafka": "false", "partner": "false"}}
		}, "table public.events: routes[0].adopt is given both as one predicate and per publisher"},
		{"more than the routes", func(t *Table) { t.RouteAdoptBy = make([]map[string]string, 5) }, "table public.events: 5 route adopt predicates for 4 routes"},
		{"without id", func(t *Table) {
			t.Mapping.IDColumn, t.AdoptBy = "", map[string]string{"kafka": "false", "partner": "false"}
		}, "table public.events: adopting rows needs its id column"},
	} {
		tb := routedTable()
		tc.with(&tb)
		err := Sources{Tables: []Table{tb}}.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}
