package relay

import (
	"slices"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// orderingTable is a table named name whose topics are the routes' topics,
// or chosen by a column without any, with its own ordering.
func orderingTable(name, ordering string, topics ...string) outbox.Table {
	m := decoder.Mapping{Schema: "public", Table: name, PayloadColumn: "payload", TopicColumn: "topic"}
	if len(topics) > 0 {
		m.TopicColumn, m.TagsColumn = "", "tags"
		for _, topic := range topics {
			m.Routes = append(m.Routes, decoder.Route{Topic: topic, AnyOfTags: []string{"x"}})
		}
	}
	return outbox.Table{Mapping: m, Ordering: ordering}
}

// TestCheckOrdering: a table's ordering is key or topic, topic only on
// known topics and never beside --ordering none or exactly-once, key not
// under --ordering topic; each refusal names the table and what to do.
func TestCheckOrdering(t *testing.T) {
	events := orderingTable("events", OrderingTopic, "wallet", "payments")
	orders := orderingTable("orders", "")
	for _, tc := range []struct {
		name        string
		ordering    string
		exactlyOnce bool
		tables      []outbox.Table
		want        string // the error, "" for none
		topics      []string
	}{
		{name: "no table's own", ordering: OrderingKey, tables: []outbox.Table{orders}},
		{name: "topic beside key", ordering: OrderingKey, tables: []outbox.Table{events, orders}, topics: []string{"wallet", "payments"}},
		{name: "two tables by topic, a topic shared", ordering: OrderingKey,
			tables: []outbox.Table{events, orderingTable("ledger", OrderingTopic, "payments", "ledger"), orderingTable("o", OrderingKey, "wallet")},
			topics: []string{"wallet", "payments", "ledger"}},
		{name: "topic under --ordering topic", ordering: OrderingTopic, tables: []outbox.Table{events, orders}},
		{name: "key on a topic column", ordering: OrderingKey, tables: []outbox.Table{orderingTable("orders", OrderingKey)}},
		{name: "none on a table", ordering: OrderingKey, tables: []outbox.Table{orderingTable("orders", OrderingNone)},
			want: "table public.orders: ordering none applies to the whole relay: --ordering none (ordering: none at the config file's top level); " +
				"a table's ordering is key or topic"},
		{name: "an unknown value", ordering: OrderingKey, tables: []outbox.Table{orderingTable("orders", "partition")},
			want: `table public.orders: ordering "partition": want key (the table's events in commit order by topic and record key) or topic ` +
				"(its topics' events in commit order, with a key or without)"},
		{name: "key under --ordering topic", ordering: OrderingTopic, tables: []outbox.Table{orderingTable("orders", OrderingKey)},
			want: "table public.orders: ordering key under --ordering topic: the relay orders every topic by topic; to order only some tables' topics " +
				"by topic, leave --ordering key (the default) and set ordering: topic on those tables"},
		{name: "key under --ordering none", ordering: OrderingNone, tables: []outbox.Table{orderingTable("orders", OrderingKey)},
			want: "table public.orders: ordering key under --ordering none: the relay holds no key, so later events of a key would overtake " +
				"a parked one all the same; use --ordering key (the default), or remove the table's ordering"},
		{name: "topic beside --ordering none", ordering: OrderingNone, tables: []outbox.Table{events},
			want: "table public.events: ordering topic beside --ordering none: a relay that lets later events overtake parked ones orders no topic; " +
				"use --ordering key (the default) with it, or remove the table's ordering"},
		{name: "topic in exactly-once delivery", ordering: OrderingKey, exactlyOnce: true, tables: []outbox.Table{events},
			want: "table public.events: ordering topic is not built for exactly-once delivery yet: remove the table's ordering (its events are then " +
				"ordered by key), or use at-least-once delivery (leave --delivery out)"},
		{name: "topic on a topic column", ordering: OrderingKey, tables: []outbox.Table{orderingTable("orders", OrderingTopic)},
			want: "table public.orders: ordering topic needs the table's topics known at start, and a column chooses them: name its topics " +
				"with routes (or one fixed topic), or order every topic by topic (--ordering topic)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Ordering: tc.ordering, Tables: tc.tables, ExactlyOnce: ExactlyOnce{Enabled: tc.exactlyOnce}}
			err := cfg.CheckOrdering()
			if got := errText(err); got != tc.want {
				t.Fatalf("CheckOrdering() = %q, want %q", got, tc.want)
			}
			if err == nil && !slices.Equal(cfg.topicOrdered(), tc.topics) {
				t.Errorf("topicOrdered() = %q, want %q", cfg.topicOrdered(), tc.topics)
			}
		})
	}
}

// errText is err's message, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimSpace(err.Error())
}
