package outbox

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/progress"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// full names a column with every key Columns knows.
var full = Table{
	Mapping: decoder.Mapping{
		Schema: "app", Table: "outbox", IDColumn: "id", KeyColumn: "k", PayloadColumn: "v",
		TopicTemplate: "t.{kind}.{region}", TopicColumn: "tc", HeaderColumns: []string{"a_col", "b_col"},
		HeaderNames: []string{"a"}, HeadersColumn: "hs", TimestampColumn: "at", TagsColumn: "tags",
		Routes: []decoder.Route{{Topic: "r", RequiredTags: []string{"x"}, AnyOfTags: []string{"y"}}},
	},
	WriteBack: &writeback.Columns{StatusColumn: "st", Pending: []string{"NEW"}, DeliveredAtColumn: "da",
		ErrorColumn: "err", AttemptsColumn: "n", NextAttemptColumn: "next"},
	Adopt:           "id > 4",
	AdoptBy:         map[string]string{"kafka": "id > 3"},
	RouteAdopt:      []string{"id > 5"},
	RouteAdoptBy:    []map[string]string{{"partner": "id > 6"}},
	Ordering:        "topic",
	Publishers:      []string{"kafka", "partner"},
	RoutePublishers: [][]string{{"partner"}},
}

func TestColumns(t *testing.T) {
	want := []Column{
		{Name: "id", Key: "id"}, {Name: "k", Key: "key"}, {Name: "v", Key: "value"},
		{Name: "kind", Key: "topic"}, {Name: "region", Key: "topic"}, {Name: "tc", Key: "topic_column"},
		{Name: "a_col", Key: "headers.a"}, {Name: "b_col", Key: "headers.b_col"}, {Name: "hs", Key: "headers_column"},
		{Name: "at", Key: "timestamp"}, {Name: "tags", Key: "tags_column"},
		{Name: "st", Key: "write_back.status_column"}, {Name: "da", Key: "write_back.delivered_at_column"},
		{Name: "err", Key: "write_back.error_column"}, {Name: "n", Key: "write_back.attempts_column"},
		{Name: "next", Key: "write_back.next_attempt_column"},
	}
	if got := full.Columns(); !reflect.DeepEqual(got, want) {
		t.Errorf("Columns():\n got %+v\nwant %+v", got, want)
	}
	if got := full.Name(); got != "app.outbox" {
		t.Errorf("Name() = %q", got)
	}
}

func TestClone(t *testing.T) {
	c := full.Clone()
	if !reflect.DeepEqual(c, full) {
		t.Fatalf("Clone() = %+v, want %+v", c, full)
	}
	c.Mapping.HeaderColumns[0] = "changed"
	c.Mapping.HeaderNames[0] = "changed"
	c.Mapping.Routes[0].RequiredTags[0] = "changed"
	c.Mapping.Routes[0].AnyOfTags[0] = "changed"
	c.WriteBack.Pending[0] = "changed"
	c.WriteBack.StatusColumn = "changed"
	c.RouteAdopt[0] = "changed"
	c.AdoptBy["kafka"] = "changed"
	c.RouteAdoptBy[0]["partner"] = "changed"
	c.Publishers[0] = "changed"
	c.RoutePublishers[0][0] = "changed"
	m := full.Mapping
	if m.HeaderColumns[0] != "a_col" || m.HeaderNames[0] != "a" || m.Routes[0].RequiredTags[0] != "x" ||
		m.Routes[0].AnyOfTags[0] != "y" || full.WriteBack.Pending[0] != "NEW" || full.WriteBack.StatusColumn != "st" || full.RouteAdopt[0] != "id > 5" ||
		full.Publishers[0] != "kafka" || full.RoutePublishers[0][0] != "partner" || full.AdoptBy["kafka"] != "id > 3" || full.RouteAdoptBy[0]["partner"] != "id > 6" {
		t.Errorf("changing the clone changed the table: %+v %+v %q %q %q", m, full.WriteBack, full.RouteAdopt, full.Publishers, full.RoutePublishers)
	}
}

// TestPublishers: a route's publishers are its own, else the table's,
// else Kafka's; a table's are all of those, each once.
func TestPublishers(t *testing.T) {
	routes := []decoder.Route{{Topic: "a", RequiredTags: []string{"x"}}, {Topic: "b", RequiredTags: []string{"y"}}, {Topic: "c", RequiredTags: []string{"z"}}}
	for _, tc := range []struct {
		name    string
		t       Table
		perItem [][]string // RoutePublishersOf(i) for each route, or of 0 without routes
		all     []string
	}{
		{"none", Table{}, [][]string{{"kafka"}}, []string{"kafka"}},
		{"the table's", Table{Publishers: []string{"partner", "kafka"}}, [][]string{{"partner", "kafka"}}, []string{"partner", "kafka"}},
		{"routes, none", Table{Mapping: decoder.Mapping{Routes: routes}}, [][]string{{"kafka"}, {"kafka"}, {"kafka"}}, []string{"kafka"}},
		{"routes, their own and the table's",
			Table{Mapping: decoder.Mapping{Routes: routes}, Publishers: []string{"analytics"}, RoutePublishers: [][]string{{"kafka", "partner"}, nil}},
			[][]string{{"kafka", "partner"}, {"analytics"}, {"analytics"}}, []string{"kafka", "partner", "analytics"}},
		{"a route's own past the routes", Table{RoutePublishers: [][]string{{"partner"}}}, [][]string{{"kafka"}}, []string{"kafka"}},
	} {
		for i, want := range tc.perItem {
			if got := tc.t.RoutePublishersOf(i); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: RoutePublishersOf(%d) = %q, want %q", tc.name, i, got, want)
			}
		}
		if got := tc.t.AllPublishers(); !reflect.DeepEqual(got, tc.all) {
			t.Errorf("%s: AllPublishers() = %q, want %q", tc.name, got, tc.all)
		}
	}
}

// TestAdopts: a table adopts by a predicate with its own, or a route's;
// not with a route predicate past its routes, nor with pending values
// alone.
func TestAdopts(t *testing.T) {
	routes := []decoder.Route{{Topic: "a", RequiredTags: []string{"x"}}, {Topic: "b", RequiredTags: []string{"y"}}}
	for _, tc := range []struct {
		name string
		t    Table
		want bool
	}{
		{"none", Table{Mapping: decoder.Mapping{Routes: routes}}, false},
		{"pending values only", Table{WriteBack: &writeback.Columns{StatusColumn: "s", Pending: []string{"NEW"}}}, false},
		{"the table's", Table{Adopt: "id > 4"}, true},
		{"the second route's", Table{Mapping: decoder.Mapping{Routes: routes}, RouteAdopt: []string{"", "id > 4"}}, true},
		{"empty route predicates", Table{Mapping: decoder.Mapping{Routes: routes}, RouteAdopt: []string{"", ""}}, false},
		{"a route predicate without routes", Table{RouteAdopt: []string{"id > 4"}}, false},
		{"the table's per publisher", Table{AdoptBy: map[string]string{"kafka": "false"}}, true},
		{"the second route's per publisher", Table{Mapping: decoder.Mapping{Routes: routes}, RouteAdoptBy: []map[string]string{nil, {"kafka": "id > 4"}}}, true},
		{"empty mappings", Table{Mapping: decoder.Mapping{Routes: routes}, AdoptBy: map[string]string{}, RouteAdoptBy: []map[string]string{{}}}, false},
	} {
		if got := tc.t.Adopts(); got != tc.want {
			t.Errorf("%s: Adopts() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestValidateAdopt: a table that adopts by a predicate, its own or a
// route's, needs its id column; route predicates are no more than the
// routes.
func TestValidateAdopt(t *testing.T) {
	m := decoder.Mapping{Schema: "public", Table: "events", Routes: []decoder.Route{{Topic: "a", RequiredTags: []string{"x"}}}}
	for _, tc := range []struct {
		name string
		t    Table
		want string
	}{
		{"the table's, without id", Table{Mapping: m, Adopt: "position > 4"}, "table public.events: adopting rows needs its id column"},
		{"a route's, without id", Table{Mapping: m, RouteAdopt: []string{"position > 4"}}, "table public.events: adopting rows needs its id column"},
		{"more than the routes", Table{Mapping: m, RouteAdopt: []string{"", "position > 4"}}, "table public.events: 2 route adopt predicates for 1 routes"},
		{"a route's, with id", func() Table {
			m := m
			m.IDColumn = "position"
			return Table{Mapping: m, RouteAdopt: []string{"position > 4"}}
		}(), ""},
	} {
		err := Sources{Tables: []Table{tc.t}}.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestTopics: a table's topics are known from its routes or a literal
// topic, and unknown when a column chooses them.
func TestTopics(t *testing.T) {
	for _, c := range []struct {
		name string
		m    decoder.Mapping
		want []string
	}{
		{"literal topic", decoder.Mapping{TopicTemplate: "events"}, []string{"events"}},
		{"routes, each once", decoder.Mapping{TopicColumn: "", Routes: []decoder.Route{{Topic: "a"}, {Topic: "b"}, {Topic: "a"}}}, []string{"a", "b"}},
		{"template of a column", decoder.Mapping{TopicTemplate: "orders.{kind}"}, nil},
		{"topic column", decoder.Mapping{TopicColumn: "topic"}, nil},
	} {
		if got := (Table{Mapping: c.m}).Topics(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Topics() = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestOrderedTopics: the topics of the tables with ordering: topic, each
// once in the tables' order; a table ordered by key adds none, even of a
// topic it shares.
func TestOrderedTopics(t *testing.T) {
	table := func(ordering string, topics ...string) Table {
		var routes []decoder.Route
		for _, topic := range topics {
			routes = append(routes, decoder.Route{Topic: topic})
		}
		return Table{Mapping: decoder.Mapping{Routes: routes}, Ordering: ordering}
	}
	tables := []Table{table(OrderingTopic, "wallet", "payment"), table("", "orders", "wallet"), table("key", "audit"), table(OrderingTopic, "payment", "ledger")}
	if got, want := OrderedTopics(tables), []string{"wallet", "payment", "ledger"}; !reflect.DeepEqual(got, want) {
		t.Errorf("OrderedTopics = %q, want %q", got, want)
	}
	if got := OrderedTopics(tables[1:3]); got != nil {
		t.Errorf("OrderedTopics of tables ordered by key = %q, want none", got)
	}
}

// TestProgressTablesFollowTheStream: a publisher's rows in the progress
// table are kept for the topics whose events go to it, as the stream
// sends them: a topic's copy goes to every publisher of the topic's
// routes, so a topic one of whose routes names the publisher is its.
func TestProgressTablesFollowTheStream(t *testing.T) {
	tbl := Table{
		Mapping: decoder.Mapping{Schema: "public", Table: "events", IDColumn: "position", Routes: []decoder.Route{
			{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}},
			{Topic: "payment-events", AnyOfTags: []string{"payment_id"}},
			{Topic: "payment-events", AnyOfTags: []string{"refund_id"}},
			{Topic: "audit", AnyOfTags: []string{"audit_id"}},
		}},
		RoutePublishers:    [][]string{{"kafka", "partner"}, nil, {"partner"}, {"partner"}},
		Progress:           &progress.Table{Schema: "public", Name: "outbox_topic_progress", Publisher: "KafkaPublisher"},
		ProgressPublishers: map[string]string{"partner": "WebhookPublisher"},
	}
	got := map[string][]string{}
	for _, pp := range tbl.ProgressTables() {
		got[pp.Publisher+"="+pp.Table.Publisher] = pp.Source.Topics
	}
	want := map[string][]string{
		"kafka=KafkaPublisher":     {"wallet-events", "payment-events"},
		"partner=WebhookPublisher": {"wallet-events", "payment-events", "audit"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ProgressTables' topics %v, want %v", got, want)
	}
	tbl.Progress.Publisher = ""
	if pts := tbl.ProgressTables(); len(pts) != 1 || pts[0].Publisher != "partner" {
		t.Errorf("without Kafka's rows: %+v, want partner's alone", pts)
	}
}
