package config

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// TestTableOrdering: a table's ordering is key or topic; topic needs the
// table's topics known (routes, a fixed topic); none is the relay's only.
func TestTableOrdering(t *testing.T) {
	const routed = "  - {table: public.events, value: data, tags_column: tags, ordering: %s,\n" +
		"     routes: [{topic: wallet-events, required_tags: [wallet_id]}, {topic: payment-events, any_of_tags: [payment_id]}]}\n"
	tests := []struct {
		name     string
		tables   string
		want     []string // each table's Ordering
		problems []string // as "line: message"
	}{
		{name: "left out: the relay's", tables: "  - {table: public.outbox, value: payload, topic: orders}\n", want: []string{""}},
		{name: "key on a topic column", tables: "  - {table: public.outbox, value: payload, topic_column: t, ordering: key}\n", want: []string{"key"}},
		{name: "topic on a fixed topic", tables: "  - {table: public.events, value: data, topic: events, ordering: topic}\n", want: []string{"topic"}},
		{name: "topic on routes", tables: fmt.Sprintf(routed, "topic"), want: []string{"topic"}},
		{name: "topic beside key", tables: fmt.Sprintf(routed, "topic") + "  - {table: public.outbox, value: payload, topic: orders, key: k}\n",
			want: []string{"topic", ""}},
		{name: "none is the relay's", tables: "  - {table: public.outbox, value: payload, topic: orders, ordering: none}\n", problems: []string{
			"2: tables[0] (public.outbox): ordering none applies to the whole relay: --ordering none (or ordering: none at the file's top level); " +
				"a table's ordering is key or topic"}},
		{name: "an unknown value", tables: "  - {table: public.outbox, value: payload, topic: orders, ordering: partition}\n", problems: []string{
			`2: tables[0] (public.outbox): ordering "partition": want key (the table's events in commit order by topic and record key) or topic ` +
				"(its topics' events in commit order, with a key or without)"}},
		{name: "topic on a topic column", tables: "  - {table: public.outbox, value: payload, topic_column: t, ordering: topic}\n", problems: []string{
			"2: tables[0] (public.outbox): ordering topic needs the table's topics known at start, and a column chooses them here: " +
				"name its topics with routes: (or one fixed topic:), or set ordering: topic for the whole relay (--ordering topic)"}},
		{name: "topic on a template of a column", tables: "  - table: public.outbox\n    value: payload\n    topic: orders.{kind}\n    ordering: topic\n", problems: []string{
			"5: tables[0] (public.outbox): ordering topic needs the table's topics known at start, and a column chooses them here: " +
				"name its topics with routes: (or one fixed topic:), or set ordering: topic for the whole relay (--ordering topic)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("relay.yaml", []byte("tables:\n"+tc.tables))
			if tc.problems != nil {
				var ps Problems
				if !errors.As(err, &ps) {
					t.Fatalf("error %v, want problems %q", err, tc.problems)
				}
				var got []string
				for _, p := range ps {
					got = append(got, fmt.Sprintf("%d: %s", p.Line, p.Msg))
				}
				if !reflect.DeepEqual(got, tc.problems) {
					t.Errorf("problems:\n got %q\nwant %q", got, tc.problems)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tb := range f.Tables {
				got = append(got, tb.Ordering)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("orderings %q, want %q", got, tc.want)
			}
		})
	}
}
