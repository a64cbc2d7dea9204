package relay

import (
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// messagesMapping maps the outbox table of the tests' configurations.
var messagesMapping = decoder.Mapping{Schema: "public", Table: "ob", IDColumn: "id", TopicColumn: "topic", KeyColumn: "k", PayloadColumn: "body"}

// TestConfigWithMessages: the sources are named tables first, then
// message:<prefix>; a prefix must be set and given once, and a relay
// needs a table or a message source, and a table to recover a gap; with
// no table the start-up check has no outbox table.
func TestConfigWithMessages(t *testing.T) {
	table := outbox.Table{Mapping: messagesMapping}
	for _, tc := range []struct {
		name    string
		cfg     Config
		names   string
		invalid string
	}{
		{name: "tables and messages", cfg: Config{Tables: []outbox.Table{table}, Messages: []decoder.MessageMapping{{Prefix: "outbox"}, {Prefix: "audit"}}},
			names: "public.ob, message:outbox, message:audit"},
		{name: "messages only", cfg: Config{Messages: []decoder.MessageMapping{{Prefix: "outbox"}}}, names: "message:outbox"},
		{name: "nothing", cfg: Config{}, invalid: "nothing to relay"},
		{name: "no prefix", cfg: Config{Messages: []decoder.MessageMapping{{}}}, invalid: "prefix is not set"},
		{name: "a prefix twice", cfg: Config{Tables: []outbox.Table{table}, Messages: []decoder.MessageMapping{{Prefix: "outbox"}, {Prefix: "outbox"}}},
			invalid: `messages "outbox": the prefix is given twice`},
		{name: "messages only, recover", cfg: Config{Messages: []decoder.MessageMapping{{Prefix: "outbox"}}, OnSlotLoss: SlotLossRecover},
			invalid: "--on-slot-loss recover cannot repair a relay of messages only"},
		{name: "messages only, refuse", cfg: Config{Messages: []decoder.MessageMapping{{Prefix: "outbox"}}, OnSlotLoss: SlotLossRefuse}, names: "message:outbox"},
		{name: "a table and messages, recover", cfg: Config{Tables: []outbox.Table{table}, Messages: []decoder.MessageMapping{{Prefix: "outbox"}}, OnSlotLoss: SlotLossRecover},
			names: "public.ob, message:outbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.invalid == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.invalid != "" && (err == nil || !strings.Contains(err.Error(), tc.invalid)):
				t.Fatalf("Validate: %v, want %q", err, tc.invalid)
			case tc.invalid != "":
				return
			}
			if got := strings.Join(tc.cfg.SourceNames(), ", "); got != tc.names {
				t.Errorf("sources %q, want %q", got, tc.names)
			}
			checked := tc.cfg.checkedMigrations()
			if len(checked) != max(len(tc.cfg.Tables), 1) {
				t.Fatalf("%d start-up checks, want one per table, or one", len(checked))
			}
			if len(tc.cfg.Tables) == 0 && (checked[0].OutboxTable != "" || checked[0].OutboxSchema != "") {
				t.Errorf("a relay of messages only checks outbox %s.%s, want none", checked[0].OutboxSchema, checked[0].OutboxTable)
			}
		})
	}
}

// TestSourceTopicCheck: a parked event's topic (the poller's, a corrected
// one's) is checked by the allowed topics of the source that wrote it,
// and an event of a source no longer configured by those of every source.
func TestSourceTopicCheck(t *testing.T) {
	orders := decoder.DefaultMapping()
	orders.AllowedTopics = `orders\..*`
	tablesAndAudit := Config{Tables: []outbox.Table{{Mapping: orders}},
		Messages: []decoder.MessageMapping{{Prefix: "audit", AllowedTopics: `audit\..*`}}}
	twoPrefixes := Config{Messages: []decoder.MessageMapping{{Prefix: "a", AllowedTopics: `a\..*`}, {Prefix: "b", AllowedTopics: `b\..*|shared`}}}
	tests := []struct {
		name          string
		cfg           Config
		source, topic string
		allowed       bool
	}{
		{"a table's topic", tablesAndAudit, "public.outbox", "orders.created", true},
		{"a table's topic its table refuses", tablesAndAudit, "public.outbox", "audit.login", false},
		{"a message source's topic", tablesAndAudit, "message:audit", "audit.login", true},
		{"a message source's topic it refuses", tablesAndAudit, "message:audit", "orders.created", false},
		{"the second message source", twoPrefixes, "message:b", "b.events", true},
		{"the first message source", twoPrefixes, "message:a", "a.events", true},
		{"one source's topic for another", twoPrefixes, "message:a", "b.events", false},
		{"a removed source: a topic one source refuses", twoPrefixes, "public.gone", "b.events", false},
		{"a removed source: no recorded source", twoPrefixes, "", "a.events", false},
		{"not a Kafka topic", twoPrefixes, "message:b", "b.bad topic", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check, err := tt.cfg.SourceTopicCheck()
			if err != nil {
				t.Fatal(err)
			}
			if err := check(tt.source, tt.topic); (err == nil) != tt.allowed {
				t.Errorf("check(%q, %q) = %v, want allowed %v", tt.source, tt.topic, err, tt.allowed)
			}
		})
	}
	every := Config{Messages: []decoder.MessageMapping{{Prefix: "a", AllowedTopics: `a\..*|shared`}, {Prefix: "b", AllowedTopics: `b\..*|shared`}}}
	check, err := every.SourceTopicCheck()
	if err != nil {
		t.Fatal(err)
	}
	if err := check("public.gone", "shared"); err != nil {
		t.Errorf("a removed source's event to a topic every source allows: %v", err)
	}
}
