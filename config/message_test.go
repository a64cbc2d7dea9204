package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// readmeMessages is the documentation's example of messages (in
// docs/messages.md, after the anchor messages-in-the-config-file): an
// envelope source and a payload-only one, with no table.
func readmeMessages(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/messages.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), `<a id="messages-in-the-config-file"></a>`)
	_, block, ok2 := strings.Cut(section, "```yaml\nmessages:\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/messages.md lacks its example of messages: (a yaml block that starts with messages:, after the anchor messages-in-the-config-file)")
	}
	return "messages:\n" + block
}

func TestParseMessages(t *testing.T) {
	tests := []struct {
		name       string
		yaml       string
		wantTables int
		want       []decoder.MessageMapping
	}{
		{name: "the documentation's example, no tables", yaml: readmeMessages(t), want: []decoder.MessageMapping{
			{Prefix: "outbox", Topic: "orders.events", AllowedTopics: `orders\..*`},
			{Prefix: "audit", PayloadOnly: true, Topic: "audit.events", KeyField: "account_id", IDField: "event_id"},
		}},
		{name: "a prefix alone: the envelope names every topic", yaml: "messages: [{prefix: outbox}]",
			want: []decoder.MessageMapping{{Prefix: "outbox"}}},
		{name: "tables empty beside messages", yaml: "tables: []\nmessages: [{prefix: outbox}]",
			want: []decoder.MessageMapping{{Prefix: "outbox"}}},
		{name: "tables null beside messages", yaml: "tables: null\nmessages: [{prefix: outbox}]",
			want: []decoder.MessageMapping{{Prefix: "outbox"}}},
		{name: "tables and messages", yaml: `
tables:
  - {table: public.outbox, value: payload, topic: orders}
messages:
  - {prefix: outbox, payload_only: false, topic: null, key_field: null}
  - {prefix: 'outbox ', payload_only: true, topic: orders}
`, wantTables: 1, want: []decoder.MessageMapping{{Prefix: "outbox"}, {Prefix: "outbox ", PayloadOnly: true, Topic: "orders"}}},
		{name: "the file's allowed_topics allows a topic the default refuses", yaml: "allowed_topics: '_internal.*'\nmessages: [{prefix: p, topic: _internal.events}]",
			want: []decoder.MessageMapping{{Prefix: "p", Topic: "_internal.events"}}},
		{name: "an entry's allowed_topics replaces the file's", yaml: "allowed_topics: 'orders'\nmessages: [{prefix: p, topic: audit, allowed_topics: 'audit'}]",
			want: []decoder.MessageMapping{{Prefix: "p", Topic: "audit", AllowedTopics: "audit"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("relay.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(f.Tables) != tc.wantTables {
				t.Errorf("%d tables, want %d", len(f.Tables), tc.wantTables)
			}
			if !reflect.DeepEqual(f.Messages, tc.want) {
				t.Errorf("Messages:\n got %+v\nwant %+v", f.Messages, tc.want)
			}
			for _, m := range f.Messages {
				if !strings.Contains(f.String(), m.Name()) {
					t.Errorf("String() = %q, want it to name %s", f.String(), m.Name())
				}
			}
		})
	}
}

func TestParseMessageProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // the problems, in order, as "line: message"
	}{
		{name: "a misspelled key", yaml: "messages:\n  - prefix: outbox\n    topik: orders\n",
			want: []string{`3: unknown key "topik" in messages[0] (did you mean "topic"?)`}},
		{name: "an unknown key, nothing like a known one", yaml: "messages:\n  - {prefix: outbox, frobnicate: 1}\n",
			want: []string{`2: unknown key "frobnicate" in messages[0] (known keys: prefix, topic, payload_only, key_field, id_field, allowed_topics, publishers)`}},
		{name: "a key set twice", yaml: "messages:\n  - prefix: a\n    prefix: b\n",
			want: []string{`3: key "prefix" in messages[0] is set twice (first on line 2): keep one`}},
		{name: "no prefix", yaml: "messages:\n  - topic: orders\n",
			want: []string{"2: messages[0]: needs prefix: the prefix the application gives pg_logical_emit_message, such as outbox"}},
		{name: "prefix null", yaml: "messages:\n  - topic: orders\n    prefix: null\n",
			want: []string{"3: messages[0]: needs prefix: the prefix the application gives pg_logical_emit_message, such as outbox"}},
		{name: "prefix empty", yaml: "messages:\n  - prefix: ''\n",
			want: []string{"2: messages[0]: prefix is empty: give a value, or null (or leave the key out) for none"}},
		{name: "prefix a list", yaml: "messages:\n  - prefix: [a, b]\n",
			want: []string{"2: messages[0]: prefix: want a single value, not a list or mapping"}},
		{name: "a prefix listed twice", yaml: "messages:\n  - prefix: outbox\n  - {prefix: audit, payload_only: true, topic: audit}\n  - prefix: outbox\n",
			want: []string{"4: messages[2] (outbox): the prefix is listed already, as messages[0] (line 2): one entry per prefix"}},
		{name: "payload_only not a boolean", yaml: "messages:\n  - {prefix: p, topic: t, payload_only: yes}\n  - {prefix: q, topic: t, payload_only: [true]}\n",
			want: []string{
				"2: messages[0] (p): payload_only: want true or false",
				"3: messages[1] (q): payload_only: want true or false",
			}},
		{name: "payload_only without topic", yaml: "messages:\n  - prefix: audit\n    payload_only: true\n",
			want: []string{"3: messages[0] (audit): payload_only needs topic: the topic of every message, the content being only the record value"}},
		{name: "key_field and id_field without payload_only", yaml: "messages:\n  - prefix: outbox\n    key_field: account_id\n    id_field: event_id\n",
			want: []string{
				"3: messages[0] (outbox): key_field is for payload_only content: an envelope carries its own key and id; add payload_only: true, or remove key_field",
				"4: messages[0] (outbox): id_field is for payload_only content: an envelope carries its own key and id; add payload_only: true, or remove id_field",
			}},
		{name: "an illegal topic", yaml: "messages:\n  - {prefix: p, topic: 'orders!'}\n",
			want: []string{`2: messages[0] (p): topic: topic name "orders!" has illegal character '!' (Kafka allows [a-zA-Z0-9._-])`}},
		{name: "Kafka's own topics, by default", yaml: "messages:\n  - {prefix: p, topic: __consumer_offsets}\n",
			want: []string{`2: messages[0] (p): topic: topic "__consumer_offsets" is not allowed: a topic that starts with "__" is Kafka's own, whatever --allowed-topics allows`}},
		{name: "a topic the file's allowed_topics does not allow", yaml: "allowed_topics: 'orders\\..*'\nmessages:\n  - {prefix: p, topic: payments}\n",
			want: []string{`3: messages[0] (p): topic: topic "payments" is not allowed: it does not match --allowed-topics "orders\\..*"`}},
		{name: "a topic the entry's allowed_topics does not allow", yaml: "messages:\n  - prefix: p\n    topic: payments\n    allowed_topics: 'orders\\..*'\n",
			want: []string{`3: messages[0] (p): topic: topic "payments" is not allowed: it does not match --allowed-topics "orders\\..*"`}},
		{name: "allowed_topics not a regular expression, the file's not applied instead", yaml: "allowed_topics: payments\nmessages:\n  - {prefix: p, topic: orders, allowed_topics: 'orders.('}\n",
			want: []string{"3: messages[0] (p): allowed_topics \"orders.(\" is not a Go regular expression: error parsing regexp: missing closing ): `orders.(`"}},
		{name: "messages empty, no tables", yaml: "messages: []\n",
			want: []string{"1: messages is empty: list the message prefixes to relay, each with at least prefix:, or remove messages"}},
		{name: "messages and tables both empty", yaml: "tables: []\nmessages: null\n",
			want: []string{
				"1: tables is empty: list the outbox tables, each with at least table:, value: and topic:",
				"2: messages is empty: list the message prefixes to relay, each with at least prefix:, or remove messages",
			}},
		{name: "messages empty beside a table", yaml: "tables:\n  - {table: x, value: v, topic: t}\nmessages: []\n",
			want: []string{"3: messages is empty: list the message prefixes to relay, each with at least prefix:, or remove messages"}},
		{name: "messages not a list", yaml: "messages: {prefix: outbox}\n",
			want: []string{"1: messages: want a list of message sources (- prefix: outbox ...)"}},
		{name: "an entry not a mapping", yaml: "messages: [outbox]\n",
			want: []string{"1: messages[0]: want a mapping, such as {prefix: outbox, topic: orders.events}"}},
		{name: "a bad table beside good messages", yaml: "tables: [{table: x, topic: t}]\nmessages: [{prefix: outbox}]\n",
			want: []string{"1: tables[0] (public.x): needs value: the column that is the record value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := problemLines(t, tc.yaml); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// problemLines parses yaml, which must fail, and returns its problems as
// "line: message".
func problemLines(t *testing.T, yaml string) []string {
	t.Helper()
	f, err := Parse("relay.yaml", []byte(yaml))
	if err == nil {
		t.Fatalf("Parse: no error (file %v)", f)
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %T, want Problems: %v", err, err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, fmt.Sprintf("%d: %s", p.Line, p.Msg))
	}
	return got
}
