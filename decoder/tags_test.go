package decoder

import (
	"slices"
	"strings"
	"testing"
)

// eventsCols is an event store's table: tags text[] of "key=value".
var eventsCols = []col{
	{"type", 1043}, {"tags", oidTextArray}, {"data", oidJSON}, {"transaction_id", 5069},
	{"position", oidInt8}, {"occurred_at", oidTimestamptz},
}

func eventsMapping() Mapping {
	return Mapping{
		Schema: "public", Table: "events", IDColumn: "position", PayloadColumn: "data",
		TimestampColumn: "occurred_at", HeaderColumns: []string{"type"}, TagsColumn: "tags",
		Routes: []Route{
			{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}},
			{Topic: "payment-events", AnyOfTags: []string{"payment_id", "transfer_id"}},
			{Topic: "big-wallet", RequiredTags: []string{"wallet_id=w-big"}},
		},
	}
}

func TestRoutesByTags(t *testing.T) {
	tests := []struct {
		name string
		typ  uint32
		tags *string
		want []string
	}{
		{"one required tag", oidTextArray, s(`{wallet_id=w1}`), []string{"wallet-events"}},
		{"two routes", oidTextArray, s(`{wallet_id=w1,transfer_id=t9}`), []string{"wallet-events", "payment-events"}},
		{"any of", oidTextArray, s(`{payment_id=p1}`), []string{"payment-events"}},
		{"a bare key tag", oidTextArray, s(`{payment_id}`), []string{"payment-events"}},
		{"key=value route", oidTextArray, s(`{wallet_id=w-big}`), []string{"wallet-events", "big-wallet"}},
		{"no prefix match", oidTextArray, s(`{wallet_idx=1,payment=2}`), nil},
		{"quoted elements", oidTextArray, s(`{"wallet_id=a b","x=\"q\\\\"}`), []string{"wallet-events"}},
		{"NULL element", oidTextArray, s(`{NULL,transfer_id=1}`), []string{"payment-events"}},
		{"empty array", oidTextArray, s(`{}`), nil},
		{"bounds other than the default", oidTextArray, s(`[0:1]={wallet_id=w1,x}`), []string{"wallet-events"}},
		{"NULL column", oidTextArray, nil, nil},
		{"jsonb array", oidJSONB, s(`["wallet_id=w1", "payment_id=p"]`), []string{"wallet-events", "payment-events"}},
		{"jsonb object", oidJSONB, s(`{"wallet_id": "w-big", "n": 3}`), []string{"wallet-events", "big-wallet"}},
		{"jsonb object null value", oidJSONB, s(`{"transfer_id": null}`), []string{"payment-events"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(eventsMapping())
			if err != nil {
				t.Fatal(err)
			}
			cols := slices.Clone(eventsCols)
			cols[1].oid = tt.typ
			mustDecode(t, d, relationMsg(7, "public", "events", cols))
			mustDecode(t, d, beginMsg(100))
			m := mustDecode(t, d, insertMsg(7, s("MoneyTransferred"), tt.tags, s(`{"amount":5}`), s("771"), s("42"), s("2026-11-23 10:00:00+00")))
			if m.Kind != KindEvent || m.Poison != nil {
				t.Fatalf("kind %v poison %v", m.Kind, m.Poison)
			}
			if !m.Routed || m.Event.Topic != "" {
				t.Fatalf("routed %v topic %q", m.Routed, m.Event.Topic)
			}
			if !slices.Equal(m.Routes, tt.want) {
				t.Fatalf("routes %q, want %q", m.Routes, tt.want)
			}
			if m.Event.Key != nil || string(m.Event.ID) != "42" || string(m.Event.Value) != `{"amount":5}` {
				t.Fatalf("event %+v", m.Event)
			}
		})
	}
}

// TestRoutesNamingOneTopic: two routes that name one topic send the event
// to it once, where the first of them is; a third route, to another topic,
// gets its own copy. Matching allocates nothing once the decoder's buffers
// have grown.
func TestRoutesNamingOneTopic(t *testing.T) {
	m := eventsMapping()
	m.Routes = []Route{
		{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}},
		{Topic: "payment-events", AnyOfTags: []string{"payment_id"}},
		{Topic: "wallet-events", AnyOfTags: []string{"transfer_id"}},
	}
	d, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	mustDecode(t, d, relationMsg(7, "public", "events", eventsCols))
	mustDecode(t, d, beginMsg(100))
	insert := insertMsg(7, s("T"), s(`{wallet_id=w1,transfer_id=t1,payment_id=p1}`), s(`{}`), s("771"), s("42"), nil)
	msg := mustDecode(t, d, insert)
	if want := []string{"wallet-events", "payment-events"}; !slices.Equal(msg.Routes, want) {
		t.Fatalf("routes %q, want %q: one copy per topic", msg.Routes, want)
	}
	msg = mustDecode(t, d, insertMsg(7, s("T"), s(`{transfer_id=t1}`), s(`{}`), s("771"), s("43"), nil))
	if want := []string{"wallet-events"}; !slices.Equal(msg.Routes, want) {
		t.Fatalf("routes %q, want %q", msg.Routes, want)
	}
	tb := d.tables[0]
	tags := column{data: []byte(`{wallet_id=w1,transfer_id=t1}`)}
	if allocs := testing.AllocsPerRun(1000, func() {
		if _, err := d.route(tb, tags, oidTextArray); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("matching two routes to one topic allocates %.0f times, want 0", allocs)
	}
}

func TestMalformedTagsArePoison(t *testing.T) {
	for _, tags := range []string{`{wallet_id`, `{"a`, `{{a,b},{c,d}}`, `{a}x`} {
		d, _ := New(eventsMapping())
		mustDecode(t, d, relationMsg(7, "public", "events", eventsCols))
		mustDecode(t, d, beginMsg(100))
		m := mustDecode(t, d, insertMsg(7, s("T"), s(tags), s(`{}`), s("1"), s("1"), nil))
		if m.Poison == nil || !strings.Contains(m.Poison.Error(), `tags column "tags"`) {
			t.Errorf("tags %q: poison %v", tags, m.Poison)
		}
	}
}

func TestRoutesAreValidated(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Mapping)
		want string
	}{
		{"no tags column", func(m *Mapping) { m.TagsColumn = "" }, "set it"},
		{"route without tags", func(m *Mapping) { m.Routes[0].RequiredTags = nil }, "route 1"},
		{"illegal topic", func(m *Mapping) { m.Routes[1].Topic = "a b" }, "illegal character"},
		{"internal topic", func(m *Mapping) { m.Routes[1].Topic = "__consumer_offsets" }, "not allowed"},
		{"empty tag", func(m *Mapping) { m.Routes[0].AnyOfTags = []string{""} }, "want key or key=value"},
	}
	for _, tt := range tests {
		m := eventsMapping()
		tt.edit(&m)
		if _, err := New(m); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestTagsColumnType(t *testing.T) {
	d, _ := New(eventsMapping())
	cols := slices.Clone(eventsCols)
	cols[1].oid = 25
	m := mustDecode(t, d, relationMsg(7, "public", "events", cols))
	if m.Relation.Unfit == nil || !strings.Contains(m.Relation.Unfit.Error(), "tags column") {
		t.Fatalf("unfit %v", m.Relation.Unfit)
	}
}

func TestSeveralTables(t *testing.T) {
	orders := Mapping{Schema: "sales", Table: "outbox", IDColumn: "id", KeyColumn: "aggregate_id", PayloadColumn: "payload",
		TopicTemplate: "orders.{event_type}", HeaderColumns: []string{"event_type"}, HeaderNames: []string{"eventType"}}
	d, err := New(DefaultMapping(), orders, eventsMapping())
	if err != nil {
		t.Fatal(err)
	}
	ordersCols := []col{{"id", 2950}, {"aggregate_id", 2950}, {"event_type", 25}, {"payload", 25}}
	if m := mustDecode(t, d, relationMsg(1, "public", "outbox", outboxCols)); m.Kind != KindRelation || m.Relation.Table != 0 {
		t.Fatalf("relation 1: %+v", m)
	}
	if m := mustDecode(t, d, relationMsg(2, "sales", "outbox", ordersCols)); m.Kind != KindRelation || m.Relation.Table != 1 || m.Relation.OID != 2 {
		t.Fatalf("relation 2: %+v", m)
	}
	if m := mustDecode(t, d, relationMsg(3, "public", "events", eventsCols)); m.Relation.Table != 2 {
		t.Fatalf("relation 3: %+v", m)
	}
	if m := mustDecode(t, d, relationMsg(4, "sales", "orders", ordersCols)); m.Kind != KindIgnored {
		t.Fatalf("an unmapped table: %+v", m)
	}
	mustDecode(t, d, beginMsg(100))
	m := mustDecode(t, d, insertMsg(2, s("e1"), s("o-1"), s("OrderCreated"), s(`{"total":1}`)))
	if m.Event.Table != 1 || m.Event.Topic != "orders.OrderCreated" || string(m.Event.Key) != "o-1" || m.Routed {
		t.Fatalf("orders event %+v", m)
	}
	if h := headerMap(m.Event.Headers); h["eventType"] != "OrderCreated" || h["id"] != "e1" || len(h) != 2 {
		t.Fatalf("headers %v", h)
	}
	m = mustDecode(t, d, insertMsg(1, s("e2"), s("Order"), s("o-2"), s("Created"), nil, s(`{}`), nil, nil))
	if m.Event.Table != 0 || m.Event.Topic != "outbox.event.Order" {
		t.Fatalf("outbox event %+v", m)
	}
	m = mustDecode(t, d, insertMsg(3, s("T"), s(`{transfer_id=1}`), s(`{}`), s("1"), s("9"), nil))
	if m.Event.Table != 2 || !slices.Equal(m.Routes, []string{"payment-events"}) {
		t.Fatalf("events event %+v", m)
	}
	if m := mustDecode(t, d, insertMsg(4, s("x"), s("y"), s("z"), s("w"))); m.Kind != KindIgnored {
		t.Fatalf("insert into an unmapped table: %+v", m)
	}
	if _, err := New(DefaultMapping(), DefaultMapping()); err == nil || !strings.Contains(err.Error(), "mapped twice") {
		t.Fatalf("the same table twice: %v", err)
	}
}
