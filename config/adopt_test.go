package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// adoptFile is an event store routed to Kafka and a webhook publisher,
// its wallet route's adopt (and the table's, the payment route's, the
// audit route's, the table's publishers) in the file's places.
const adoptFile = `publishers:
  partner:
    webhook: {url: https://partner.example/hooks, secret_file: /s}
tables:
  - table: public.events
    id: position
    value: data
    tags_column: tags
    routes:
      - topic: wallet-events
        required_tags: [wallet_id]
        publishers: [kafka, partner]
        adopt:%s
      - {topic: payment-events, any_of_tags: [payment_id]%s}
      - {topic: audit, any_of_tags: [audit]%s}
    adopt:%s
    publishers: %s
`

// progressOf is an event store's predicate for a topic and publisher.
func progressOf(topic, publisher string) string {
	return fmt.Sprintf("position > (SELECT last_position FROM outbox_topic_progress WHERE topic = '%s' AND publisher = '%s')", topic, publisher)
}

// TestParseAdoptPerPublisher: adopt, a table's or a route's, is one
// predicate for every publisher of its events, or a mapping of publisher
// to predicate (false adopting nothing for one), read into AdoptBy and
// RouteAdoptBy; one predicate stays Adopt and RouteAdopt.
func TestParseAdoptPerPublisher(t *testing.T) {
	wallet := "\n          kafka: " + progressOf("wallet-events", "KafkaPublisher") +
		"\n          partner: " + progressOf("wallet-events", "WebhookPublisher")
	for _, tc := range []struct {
		name                          string
		wallet, payment, audit, table string
		publishers                    string
		adopt                         string
		adoptBy                       map[string]string
		routeAdopt                    []string
		routeAdoptBy                  []map[string]string
		tableFor                      map[string]string // the table's predicate for each publisher of its events (outbox.Table.AdoptOf)
	}{
		{name: "a route's per publisher, the table's one for all", wallet: wallet, table: " position > 4000", publishers: "[kafka]",
			adopt: "position > 4000",
			routeAdoptBy: []map[string]string{{"kafka": progressOf("wallet-events", "KafkaPublisher"),
				"partner": progressOf("wallet-events", "WebhookPublisher")}, nil, nil},
			tableFor: map[string]string{"kafka": "position > 4000", "partner": "position > 4000"}},
		{name: "false for one publisher", wallet: " {kafka: position > 600, partner: false}", publishers: "[kafka]",
			routeAdoptBy: []map[string]string{{"kafka": "position > 600", "partner": "false"}, nil, nil},
			tableFor:     map[string]string{"kafka": "", "partner": ""}},
		{name: "the table's per publisher, a route's one for all", wallet: " position > 600", table: "\n      kafka: position > 550\n      partner: false",
			publishers: "[kafka, partner]", adoptBy: map[string]string{"kafka": "position > 550", "partner": "false"},
			routeAdopt: []string{"position > 600", "", ""},
			tableFor:   map[string]string{"kafka": "position > 550", "partner": "false"}},
		{name: "one for all, the table's and a route's", wallet: " position > 600", table: " position > 550", publishers: "[kafka, partner]",
			adopt: "position > 550", routeAdopt: []string{"position > 600", "", ""},
			tableFor: map[string]string{"kafka": "position > 550", "partner": "position > 550"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := fmt.Sprintf(adoptFile, tc.wallet, tc.payment, tc.audit, tc.table, tc.publishers)
			if tc.table == "" {
				yaml = strings.Replace(yaml, "    adopt:\n", "", 1)
			}
			f, err := Parse("relay.yaml", []byte(yaml))
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, yaml)
			}
			tb := f.Tables[0]
			if tb.Adopt != tc.adopt || !reflect.DeepEqual(tb.AdoptBy, tc.adoptBy) || !reflect.DeepEqual(tb.RouteAdopt, tc.routeAdopt) ||
				!reflect.DeepEqual(tb.RouteAdoptBy, tc.routeAdoptBy) {
				t.Errorf("adopt %q %q, routes' %q %q; want %q %q, %q %q", tb.Adopt, tb.AdoptBy, tb.RouteAdopt, tb.RouteAdoptBy,
					tc.adopt, tc.adoptBy, tc.routeAdopt, tc.routeAdoptBy)
			}
			if !tb.Adopts() {
				t.Error("Adopts() = false")
			}
			got := map[string]string{}
			for _, p := range tb.AllPublishers() {
				got[p], _ = tb.AdoptOf(-1, p)
			}
			if !reflect.DeepEqual(got, tc.tableFor) {
				t.Errorf("the table's adopt per publisher %q, want %q", got, tc.tableFor)
			}
		})
	}
}

// TestParseAdoptPerPublisherProblems: a mapping that leaves out a
// publisher the events go to (the route's own, the table's, or one of
// another route of the same topic), names one they do not go to, has an
// empty or a non-scalar predicate, or is empty, is a problem on its
// line, saying what to do; a list is none of adopt's forms.
func TestParseAdoptPerPublisherProblems(t *testing.T) {
	for _, tc := range []struct {
		name                          string
		wallet, payment, audit, table string
		publishers                    string
		want                          []string
	}{
		{name: "a route's leaves out a publisher", wallet: " {kafka: position > 600}", table: " position > 1", publishers: "[kafka]",
			want: []string{`13: tables[0] (public.events): routes[0].adopt names no predicate for publisher "partner", which the route's events (topic wallet-events) go to: ` +
				`its backlog would be adopted by nobody; give it one (partner: position > …), or false to adopt nothing for it`}},
		{name: "a route's names a publisher its events do not go to", wallet: " position > 1",
			payment: ", adopt: {kafka: position > 550, partner: position > 500}", table: " position > 1", publishers: "[kafka]",
			want: []string{`14: tables[0] (public.events): routes[1].adopt.partner: the route's events (topic payment-events) go to kafka only, not to publisher "partner": ` +
				`remove routes[1].adopt.partner, or add the publisher to publishers:`}},
		{name: "the table's leaves one out, and names an undefined one", wallet: " position > 1", table: "\n      kafka: position > 550\n      partnr: position > 500",
			publishers: "[kafka, partner]", want: []string{
				`16: tables[0] (public.events): adopt names no predicate for publisher "partner", which the table's events go to: ` +
					`its backlog would be adopted by nobody; give it one (partner: position > …), or false to adopt nothing for it`,
				`18: tables[0] (public.events): adopt.partnr: the table's events go to kafka, partner only, not to publisher "partnr": ` +
					`remove adopt.partnr, or add the publisher to publishers:`}},
		{name: "another route of the topic sends it to the publisher", wallet: " position > 1", audit: ", adopt: {kafka: position > 1}",
			table: " position > 1", publishers: "[kafka]",
			want: []string{`15: tables[0] (public.events): routes[2].adopt names no predicate for publisher "partner", which the route's events (topic audit) go to ` +
				`(routes[3] sends topic audit to it: an event's copy of a topic goes to every publisher of the topic's routes): ` +
				`its backlog would be adopted by nobody; give it one (partner: position > …), or false to adopt nothing for it`}},
		{name: "empty and non-scalar predicates", wallet: "\n          kafka: ''\n          partner: [x]", table: " position > 1", publishers: "[kafka]",
			want: []string{
				`14: tables[0] (public.events): routes[0].adopt.kafka is empty: give publisher kafka's predicate, such as "position > 4000", or false to adopt nothing for it`,
				`15: tables[0] (public.events): routes[0].adopt.partner: want an SQL predicate over the table's columns, such as "position > 4000", or false to adopt nothing for partner`}},
		{name: "a null predicate, and one named twice", wallet: "\n          kafka:\n          partner: false\n          partner: true", table: " position > 1", publishers: "[kafka]",
			want: []string{
				`14: tables[0] (public.events): routes[0].adopt.kafka is empty: give publisher kafka's predicate, such as "position > 4000", or false to adopt nothing for it`,
				`16: tables[0] (public.events): routes[0].adopt.partner is set twice (first on line 15): keep one`}},
		{name: "an empty mapping, and a list", wallet: " {}", table: " [position > 1]", publishers: "[kafka]",
			want: []string{
				`13: tables[0] (public.events): routes[0].adopt is empty: give each publisher of the events its predicate, such as {kafka: position > 4000, partner: position > 3500}, or remove adopt`,
				`16: tables[0] (public.events): adopt: want an SQL predicate over the table's columns, or a mapping of publisher to predicate, such as {kafka: position > 4000, partner: position > 3500}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			audit := tc.audit
			yaml := fmt.Sprintf(adoptFile, tc.wallet, tc.payment, audit, tc.table, tc.publishers)
			if tc.name == "another route of the topic sends it to the publisher" {
				yaml = strings.Replace(yaml, "      - {topic: audit, any_of_tags: [audit]"+audit+"}\n",
					"      - {topic: audit, any_of_tags: [audit]"+audit+"}\n      - {topic: audit, any_of_tags: [x], publishers: [partner]}\n", 1)
			}
			checkProblems(t, yaml, tc.want)
		})
	}
}
