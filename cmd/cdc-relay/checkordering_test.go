package main

import (
	"testing"

	"github.com/cdc-relay/cdc-relay/config"
)

// TestOrderingText: check-config says each table's ordering in words:
// its own, else the file's, else the default; a key-ordered table's topic
// that a topic-ordered table names is said to be ordered by topic; and the
// orderings run would refuse are a problem.
func TestOrderingText(t *testing.T) {
	const (
		events = "  - {table: public.events, value: data, topic: events, ordering: topic}\n"
		orders = "  - {table: public.orders, value: payload, topic_column: topic}\n"
		shared = "  - {table: public.audit, value: payload, topic: events, ordering: key}\n"
		keyed  = "a parked event holds the later events of its topic and record key; events without a key are never held"
		topics = "a parked event holds every later event of its topic, with a key or without, until it is delivered"
	)
	for _, tc := range []struct {
		name    string
		file    string
		want    []string // each table's line
		problem string
	}{
		{"the default", "tables:\n" + orders, []string{"ordering: key (the default): " + keyed}, ""},
		{"the file's none", "ordering: none\ntables:\n" + orders, []string{"ordering: none (the file's): later events overtake a parked one"}, ""},
		{"the file's topic", "ordering: topic\ntables:\n" + orders, []string{"ordering: topic (the file's), of every topic: " + topics}, ""},
		{"a table by topic beside one by key", "tables:\n" + events + orders + shared, []string{
			"ordering: topic, of its topics events: " + topics,
			"ordering: key (the default): " + keyed,
			"ordering: key: " + keyed + "; but events, a topic of a table with ordering: topic, is ordered by topic"}, ""},
		{"a table by topic under the file's none", "ordering: none\ntables:\n" + events, []string{"ordering: topic, of its topics events: " + topics},
			"table public.events: ordering topic beside --ordering none: a relay that lets later events overtake parked ones orders no topic; " +
				"use --ordering key (the default) with it, or remove the table's ordering"},
		{"a table by key under the file's none", "ordering: none\ntables:\n" + shared, []string{"ordering: key: " + keyed},
			"table public.audit: ordering key under --ordering none: the relay holds no key, so later events of a key would overtake " +
				"a parked one all the same; use --ordering key (the default), or remove the table's ordering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := config.Parse("relay.yaml", []byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			byTopic := topicOrdered(f)
			for i, tb := range f.Tables {
				if got := orderingText(tb, f.Ordering, byTopic); got != tc.want[i] {
					t.Errorf("table %s:\n got %q\nwant %q", tb.Name(), got, tc.want[i])
				}
			}
			if got := orderingProblem(f); got != tc.problem {
				t.Errorf("problem %q, want %q", got, tc.problem)
			}
		})
	}
}
