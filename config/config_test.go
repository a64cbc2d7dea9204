package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// fullExample is the package doc's example: two tables, one written back
// to, one routed by tags; with comments and null values.
const fullExample = `postgres_url: postgres://relay@db/app     # or the environment variable
kafka: {brokers: ["kafka:9092"]}
slot: cdc_relay
publication: cdc_relay
tables:
  - table: public.notification_outbox
    id: id                      # column → header "id"
    key: deal_id                # column → record key
    value: payload              # column → record value
    topic: "notifications.{template}"   # literal or {column} template
    topic_column: null          # a column that, when not null, overrides topic
    headers: {template: template, recipient_id: recipient_id}  # header ← column
    headers_column: null        # a jsonb object column merged into headers
    timestamp: created_at
    write_back:                 # optional
      status_column: status
      delivered: DELIVERED
      failed: FAILED
      delivered_at_column: processed_at
      error_column: null
  - table: public.events
    id: position
    value: data
    tags_column: tags           # text[] of "key=value" or "key"
    routes:
      - {topic: wallet-events, required_tags: [wallet_id]}
      - {topic: payment-events, any_of_tags: [payment_id, transfer_id]}
    adopt: position > 4000      # the rows to send once when the slot is created
`

func TestParseGood(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		// check inspects the parsed file.
		check func(t *testing.T, f *File)
	}{
		{name: "the package doc's example", yaml: fullExample, check: func(t *testing.T, f *File) {
			want := File{
				PostgresURL: "postgres://relay@db/app",
				Kafka:       Kafka{Brokers: []string{"kafka:9092"}},
				Slot:        "cdc_relay",
				Publication: "cdc_relay",
			}
			got := *f
			got.Tables = nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("top level:\n got %#v\nwant %#v", got.Tables, want)
			}
			if len(f.Tables) != 2 {
				t.Fatalf("%d tables, want 2", len(f.Tables))
			}
			m0 := decoder.Mapping{
				Schema: "public", Table: "notification_outbox",
				IDColumn: "id", KeyColumn: "deal_id", PayloadColumn: "payload",
				TopicTemplate: "notifications.{template}", TimestampColumn: "created_at",
				HeaderColumns: []string{"template", "recipient_id"}, HeaderNames: []string{"template", "recipient_id"},
			}
			if got := f.Tables[0].Mapping; !reflect.DeepEqual(got, m0) {
				t.Errorf("tables[0].Mapping():\n got %+v\nwant %+v", got, m0)
			}
			wb := &writeback.Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED", DeliveredAtColumn: "processed_at"}
			if got := f.Tables[0].WriteBack; !reflect.DeepEqual(got, wb) {
				t.Errorf("tables[0].WriteBack() = %+v, want %+v", got, wb)
			}
			m1 := decoder.Mapping{
				Schema: "public", Table: "events", IDColumn: "position", PayloadColumn: "data", TagsColumn: "tags",
				Routes: []decoder.Route{
					{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}},
					{Topic: "payment-events", AnyOfTags: []string{"payment_id", "transfer_id"}},
				},
			}
			if got := f.Tables[1].Mapping; !reflect.DeepEqual(got, m1) {
				t.Errorf("tables[1].Mapping():\n got %+v\nwant %+v", got, m1)
			}
			if got := f.Tables[1].WriteBack; got != nil {
				t.Errorf("tables[1].WriteBack() = %+v, want nil", got)
			}
			if f.Tables[0].Adopt != "" || f.Tables[1].Adopt != "position > 4000" {
				t.Errorf("adopt = %q, %q; want none, then the predicate", f.Tables[0].Adopt, f.Tables[1].Adopt)
			}
			if f.Tables[0].RouteAdopt != nil || f.Tables[1].RouteAdopt != nil {
				t.Errorf("route adopt = %q, %q; want none", f.Tables[0].RouteAdopt, f.Tables[1].RouteAdopt)
			}
		}},
		{name: "a route's own adopt, beside the table's", yaml: `
tables:
  - table: public.events
    id: position
    value: data
    tags_column: tags
    routes:
      - {topic: wallet-events, required_tags: [wallet_id], adopt: "position > (SELECT last_position FROM outbox_topic_progress WHERE topic = 'wallet-events' AND publisher = 'KafkaPublisher')"}
      - topic: payment-events
        any_of_tags: [payment_id]
        adopt: |
          position > 550 -- the old poller's
      - {topic: audit, any_of_tags: [x]}
    adopt: position > 4000
`, check: func(t *testing.T, f *File) {
			tb := f.Tables[0]
			want := []string{"position > (SELECT last_position FROM outbox_topic_progress WHERE topic = 'wallet-events' AND publisher = 'KafkaPublisher')",
				"position > 550 -- the old poller's\n", ""}
			if !reflect.DeepEqual(tb.RouteAdopt, want) || tb.Adopt != "position > 4000" || !tb.Adopts() {
				t.Errorf("route adopt %q, adopt %q; want %q and the table's", tb.RouteAdopt, tb.Adopt, want)
			}
			routes := []decoder.Route{{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}}, {Topic: "payment-events", AnyOfTags: []string{"payment_id"}},
				{Topic: "audit", AnyOfTags: []string{"x"}}}
			if !reflect.DeepEqual(tb.Mapping.Routes, routes) {
				t.Errorf("routes %+v, want %+v", tb.Mapping.Routes, routes)
			}
			if f.Warnings != nil {
				t.Errorf("warnings: %v", f.Warnings)
			}
		}},
		{name: "a minimal table in schema public", yaml: "tables: [{table: outbox, value: payload, topic: orders}]", check: func(t *testing.T, f *File) {
			want := decoder.Mapping{Schema: "public", Table: "outbox", PayloadColumn: "payload", TopicTemplate: "orders"}
			if got := f.Tables[0].Mapping; !reflect.DeepEqual(got, want) {
				t.Errorf("Mapping() = %+v, want %+v", got, want)
			}
			if f.Tables[0].Name() != "public.outbox" {
				t.Errorf("Name() = %q", f.Tables[0].Name())
			}
			if f.Kafka.Brokers != nil || f.Slot != "" || f.PostgresURL != "" {
				t.Errorf("absent settings are set: %v", f)
			}
		}},
		{name: "headers keep the file's order", yaml: `
tables:
  - table: app.outbox
    value: payload
    topic_column: topic
    headers:
      zeta: z_col
      alpha: a_col
      mid: m_col
`, check: func(t *testing.T, f *File) {
			m := f.Tables[0].Mapping
			if want := []string{"zeta", "alpha", "mid"}; !reflect.DeepEqual(m.HeaderNames, want) {
				t.Errorf("HeaderNames = %q, want %q", m.HeaderNames, want)
			}
			if want := []string{"z_col", "a_col", "m_col"}; !reflect.DeepEqual(m.HeaderColumns, want) {
				t.Errorf("HeaderColumns = %q, want %q", m.HeaderColumns, want)
			}
			if m.Schema != "app" || m.TopicColumn != "topic" || m.TopicTemplate != "" {
				t.Errorf("Mapping() = %+v", m)
			}
		}},
		{name: "the optional top-level keys, values as written, an alias", yaml: `
status_table: relay.delivery
checkpoint_table: relay.checkpoint
allowed_topics: 'orders\..*|payments'
ordering: none
kafka:
  brokers:
    - k1:9092
    - k2:9092
  compression: ZSTD # any case, as the flag takes it
  batch_max_bytes: 4194304
tables:
  - table: public.a
    value: payload
    topic: orders.{type}
    headers: &h {type: type}
    write_back: {status_column: state, delivered: 1, failed: 2, delivered_at_column: null}
    id: id
  - table: public.b
    value: payload
    topic: payments
    headers: *h
`, check: func(t *testing.T, f *File) {
			if f.StatusTable != "relay.delivery" || f.CheckpointTable != "relay.checkpoint" || f.AllowedTopics != `orders\..*|payments` || f.Ordering != "none" {
				t.Errorf("top level: %v", f)
			}
			if want := []string{"k1:9092", "k2:9092"}; !reflect.DeepEqual(f.Kafka.Brokers, want) {
				t.Errorf("brokers = %q", f.Kafka.Brokers)
			}
			if f.Kafka.Compression != "zstd" || f.Kafka.BatchMaxBytes != 4194304 {
				t.Errorf("kafka = %+v, want compression zstd and batch_max_bytes 4194304", f.Kafka)
			}
			if wb := f.Tables[0].WriteBack; wb == nil || wb.Delivered != "1" || wb.Failed != "2" || wb.DeliveredAtColumn != "" {
				t.Errorf("write_back = %+v", wb)
			}
			if m := f.Tables[1].Mapping; !reflect.DeepEqual(m.HeaderNames, []string{"type"}) || !reflect.DeepEqual(m.HeaderColumns, []string{"type"}) {
				t.Errorf("aliased headers = %q ← %q", m.HeaderNames, m.HeaderColumns)
			}
		}},
		{name: "a key column and a topic template from one column", yaml: `
tables:
  - {table: public.outbox, id: id, key: aggregate_id, value: payload, topic: "{topic}", timestamp: created_at}
`, check: func(t *testing.T, f *File) {
			got := f.Tables[0].Columns()
			want := []outbox.Column{{Name: "id", Key: "id"}, {Name: "aggregate_id", Key: "key"}, {Name: "payload", Key: "value"}, {Name: "topic", Key: "topic"}, {Name: "created_at", Key: "timestamp"}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Columns() = %+v, want %+v", got, want)
			}
		}},
		{name: "a progress table, its columns defaulted", yaml: `
tables:
  - table: public.events
    progress: {table: app.outbox_topic_progress, publisher: KafkaPublisher, position_column: pos}
    id: position
    value: data
    topic: wallet-events
`, check: func(t *testing.T, f *File) {
			pt := f.Tables[0].Progress
			if pt == nil || pt.Schema != "app" || pt.Name != "outbox_topic_progress" || pt.Publisher != "KafkaPublisher" || pt.PositionColumn != "pos" ||
				pt.TopicColumn != "topic" || pt.StatusColumn != "status" || !reflect.DeepEqual(pt.Paused, []string{"PAUSED", "FAILED"}) {
				t.Errorf("progress = %+v", pt)
			}
			if src := f.Tables[0].ProgressSource(); !reflect.DeepEqual(src.Topics, []string{"wallet-events"}) || src.IDColumn != "position" {
				t.Errorf("progress source = %+v, want the template's one topic", src)
			}
		}},
		{name: "a progress table kept for Kafka and a webhook", yaml: `
publishers:
  partner: {webhook: {url: "https://partner.example/hooks", secret_env: PARTNER_SECRET}}
tables:
  - table: public.events
    id: position
    value: data
    tags_column: tags
    routes:
      - {topic: wallet-events, required_tags: [wallet_id], publishers: [kafka, partner]}
      - {topic: payment-events, any_of_tags: [payment_id]}
    progress: {table: outbox_topic_progress, publisher: KafkaPublisher, publishers: {partner: WebhookPublisher}}
`, check: func(t *testing.T, f *File) {
			type kept struct {
				publisher, team string
				topics          []string
			}
			var got []kept
			for _, pp := range f.Tables[0].ProgressTables() {
				got = append(got, kept{pp.Publisher, pp.Table.Publisher, pp.Source.Topics})
			}
			want := []kept{{"kafka", "KafkaPublisher", []string{"wallet-events", "payment-events"}}, {"partner", "WebhookPublisher", []string{"wallet-events"}}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ProgressTables() = %+v, want %+v", got, want)
			}
			if c := f.Tables[0].Clone(); !reflect.DeepEqual(c.ProgressPublishers, map[string]string{"partner": "WebhookPublisher"}) {
				t.Errorf("clone's progress publishers %v", c.ProgressPublishers)
			}
		}},
		{name: "a progress table kept for a webhook alone", yaml: `
publishers:
  partner: {webhook: {url: "https://partner.example/hooks", secret_env: PARTNER_SECRET}}
tables:
  - {table: public.events, id: position, value: data, topic: wallet-events, publishers: [partner], progress: {table: outbox_topic_progress, publishers: {partner: WebhookPublisher}}}
`, check: func(t *testing.T, f *File) {
			pts := f.Tables[0].ProgressTables()
			if len(pts) != 1 || pts[0].Publisher != "partner" || pts[0].Table.Publisher != "WebhookPublisher" || !reflect.DeepEqual(pts[0].Source.Topics, []string{"wallet-events"}) {
				t.Errorf("ProgressTables() = %+v, want partner's alone", pts)
			}
		}},
		{name: "a table's time zone", yaml: `
tables:
  - {table: public.outbox, value: payload, topic: t, timestamp: created_at, time_zone: America/New_York}
`, check: func(t *testing.T, f *File) {
			if m := f.Tables[0].Mapping; m.TimeZone != "America/New_York" {
				t.Errorf("mapping's time zone %q, want America/New_York", m.TimeZone)
			}
		}},
		{name: "the unit of a bigint timestamp column", yaml: `
tables:
  - {table: public.outbox, value: payload, topic: t, timestamp: created_epoch, timestamp_unit: s}
`, check: func(t *testing.T, f *File) {
			if m := f.Tables[0].Mapping; m.TimestampUnit != decoder.UnitSeconds || m.TimestampColumn != "created_epoch" {
				t.Errorf("mapping's timestamp %q in %q, want created_epoch in s", m.TimestampColumn, m.TimestampUnit)
			}
		}},
		{name: "the converters of Debezium's outbox router", yaml: `
tables:
  - {table: public.outboxevent, key: aggregateid, value: payload, topic: t, key_converter: json, value_converter: json-with-schema}
`, check: func(t *testing.T, f *File) {
			if m := f.Tables[0].Mapping; m.KeyConverter != decoder.ConverterJSON || m.ValueConverter != decoder.ConverterJSONWithSchema {
				t.Errorf("converters %s and %s, want json and json-with-schema", m.KeyConverter, m.ValueConverter)
			}
		}},
		{name: "the router's JSON payload expansion", yaml: `
tables:
  - table: public.outboxevent
    value: payload
    topic: t
    value_converter: json
    expand_json_payload: true
    json_payload_null_behavior: optional_bytes
    json_payload_empty_array_behavior: optional_string
`, check: func(t *testing.T, f *File) {
			m := f.Tables[0].Mapping
			if !m.ExpandJSONPayload || m.JSONPayloadNullBehavior != decoder.JSONNullOptionalBytes || m.JSONPayloadEmptyArrayBehavior != decoder.JSONEmptyArrayOptionalString {
				t.Errorf("expand %t, null %s, empty array %s; want true, optional_bytes, optional_string",
					m.ExpandJSONPayload, m.JSONPayloadNullBehavior, m.JSONPayloadEmptyArrayBehavior)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("relay.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tc.check(t, f)
		})
	}
}

func TestParseProblems(t *testing.T) {
	const minimal = "  - {table: public.outbox, value: payload, topic: orders}\n"
	tests := []struct {
		name string
		yaml string
		want []string // the problems, in order, as "line: message"
	}{
		{name: "a misspelled key of a table", yaml: `
postgres_url: postgres://relay@db/app
kafka: {brokers: ["kafka:9092"]}
slot: cdc_relay
publication: cdc_relay
tables:
  - tabel: public.outbox
    value: payload
    topic: orders
`, want: []string{
			`7: unknown key "tabel" in tables[0] (did you mean "table"?)`,
			`7: tables[0]: needs table: the outbox table, as schema.table`,
		}},
		{name: "a misspelled top-level key", yaml: "slots: x\ntables:\n" + minimal,
			want: []string{`1: unknown key "slots" (did you mean "slot"?)`}},
		{name: "an unknown key, nothing like a known one", yaml: "tables:\n" + minimal + "frobnicate: 1\n",
			want: []string{`3: unknown key "frobnicate" (known keys: postgres_url, kafka, slot, publication, tables, messages, status_table, checkpoint_table, allowed_topics, ordering, publishers)`}},
		{name: "kafka takes brokers only", yaml: "kafka: {broker: [k:9092]}\ntables:\n" + minimal,
			want: []string{`1: unknown key "broker" in kafka (did you mean "brokers"?)`}},
		{name: "brokers not a list", yaml: "kafka: {brokers: k:9092}\ntables:\n" + minimal,
			want: []string{`1: kafka.brokers: want a list, such as ["kafka-1:9092", "kafka-2:9092"]`}},
		{name: "an unknown codec", yaml: "kafka: {compression: brotli}\ntables:\n" + minimal,
			want: []string{`1: kafka.compression "brotli": want one of none, gzip, snappy, lz4, zstd`}},
		{name: "a batch size too small", yaml: "kafka: {batch_max_bytes: 512}\ntables:\n" + minimal,
			want: []string{`1: kafka.batch_max_bytes "512": want 1024 to 104857600 bytes, and no more than the brokers' message.max.bytes`}},
		{name: "a batch size not a number", yaml: "kafka: {batch_max_bytes: 1MB}\ntables:\n" + minimal,
			want: []string{`1: kafka.batch_max_bytes "1MB": want 1024 to 104857600 bytes, and no more than the brokers' message.max.bytes`}},
		{name: "a key set twice", yaml: "slot: a\nslot: b\ntables:\n" + minimal,
			want: []string{`2: key "slot" is set twice (first on line 1): keep one`}},
		{name: "an empty file", yaml: "", want: []string{"1: the file is empty: it needs tables: or messages: (see `cdc-relay check-config -h`)"}},
		{name: "only a comment", yaml: "# nothing\n", want: []string{"1: the file is empty: it needs tables: or messages: (see `cdc-relay check-config -h`)"}},
		{name: "no tables", yaml: "slot: cdc_relay\n",
			want: []string{"1: no tables and no messages: list the outbox tables under tables:, each with at least table:, value: and topic:, " +
				"or the prefixes of pg_logical_emit_message under messages:, each with at least prefix:"}},
		{name: "tables empty", yaml: "slot: cdc_relay\ntables: []\n",
			want: []string{"2: tables is empty: list the outbox tables, each with at least table:, value: and topic:"}},
		{name: "the top level a list", yaml: "- table: x\n", want: []string{"1: the file: want a mapping of settings (postgres_url:, kafka:, slot:, publication:, tables:, messages:, publishers:)"}},
		{name: "no value", yaml: "tables:\n  - table: x\n    topic: t\n",
			want: []string{"2: tables[0] (public.x): needs value: the column that is the record value"}},
		{name: "value null", yaml: "tables:\n  - table: x\n    topic: t\n    value: null\n",
			want: []string{"4: tables[0] (public.x): needs value: the column that is the record value"}},
		{name: "value empty", yaml: "tables:\n  - table: x\n    topic: t\n    value: ''\n",
			want: []string{"4: tables[0] (public.x): value is empty: give a value, or null (or leave the key out) for none"}},
		{name: "no topic", yaml: "tables:\n  - table: x\n    value: v\n",
			want: []string{"2: tables[0] (public.x): needs topic (a topic, or a template such as orders.{type}), topic_column, or routes"}},
		{name: "routes and topic", yaml: `
tables:
  - table: public.events
    value: data
    topic: events
    tags_column: tags
    routes:
      - {topic: wallet-events, required_tags: [wallet_id]}
`, want: []string{"5: tables[0] (public.events): topic and routes exclude each other: routes choose the topics; remove topic"}},
		{name: "routes without tags_column", yaml: `
tables:
  - table: public.events
    value: data
    routes:
      - {topic: wallet-events, required_tags: [wallet_id]}
`, want: []string{"5: tables[0] (public.events): routes need tags_column: the column of tags the routes match"}},
		{name: "a route without tags, one without topic", yaml: `
tables:
  - table: public.audit
    value: data
    topic: audit
  - table: public.events
    id: position
    value: data
    tags_column: tags
    routes:
      - {topic: wallet-events, required_tags: [wallet_id]}
      - {topic: payment-events, required_tags: []}
      - {any_of_tags: [x]}
`, want: []string{
			"12: tables[1] (public.events): routes[1] needs required_tags or any_of_tags",
			"13: tables[1] (public.events): routes[2] needs topic",
		}},
		{name: "a route's topic is a name", yaml: `
tables:
  - table: public.events
    value: data
    tags_column: tags
    routes:
      - topic: "events.{type}"
        any_of_tags: [x]
      - {topic: "bad topic", any_of_tags: [x]}
      - {topic: ok, anyof_tags: [x]}
      - {topic: ok, any_of_tags: x}
`, want: []string{
			`7: tables[0] (public.events): routes[0]: topic "events.{type}": a route's topic is a topic name, not a template`,
			`9: tables[0] (public.events): routes[1]: topic: topic name "bad topic" has illegal character ' ' (Kafka allows [a-zA-Z0-9._-])`,
			`10: unknown key "anyof_tags" in tables[0].routes[2] (did you mean "any_of_tags"?)`,
			`10: tables[0] (public.events): routes[2] needs required_tags or any_of_tags`,
			`11: tables[0] (public.events): routes[3].any_of_tags: want a list, such as [payment_id, transfer_id]`,
			`11: tables[0] (public.events): routes[3] needs required_tags or any_of_tags`,
		}},
		{name: "write_back with routes", yaml: "tables:\n  - table: x\n    id: id\n    value: v\n    tags_column: tags\n    routes: [{topic: t, any_of_tags: [a]}]\n    write_back: {status_column: s, delivered: D, failed: F}\n",
			want: []string{"7: tables[0] (public.x): write_back is not supported with routes: an event that matches no route has no outcome to write back"}},
		{name: "adopt empty, and without id", yaml: "tables:\n  - {table: x, value: v, topic: t, adopt: '  '}\n  - {table: y, value: v, topic: t, adopt: position > 4000}\n",
			want: []string{
				`2: tables[0] (public.x): adopt is empty: an SQL predicate over the table's columns, such as "position > 4000", or remove adopt`,
				`3: tables[1] (public.y): adopt needs id: the relay reads each adopted row by its id column`,
			}},
		{name: "progress incomplete, and without id", yaml: "tables:\n  - {table: x, value: v, topic: t, progress: {publisher: P}}\n  - {table: y, value: v, topic: t, progress: {table: p, publisher: P, paused: PAUSED, postion_column: pos}}\n",
			want: []string{
				`2: tables[0] (public.x): progress needs table: the team's progress table, such as outbox_topic_progress`,
				`2: tables[0] (public.x): progress needs id: the id column (of an integer type) is the position the progress table holds`,
				`3: unknown key "postion_column" in tables[1].progress (did you mean "position_column"?)`,
				`3: tables[1] (public.y): progress.paused: want a list, such as [PAUSED, FAILED]`,
				`3: tables[1] (public.y): progress needs id: the id column (of an integer type) is the position the progress table holds`,
			}},
		{name: "progress publishers wrong", yaml: `
publishers:
  partner: {webhook: {url: "https://partner.example/hooks", secret_env: PARTNER_SECRET}}
  other: {webhook: {url: "https://other.example/hooks", secret_env: OTHER_SECRET}}
tables:
  - {table: a, id: id, value: v, topic: t, publishers: [partner, other], progress: {table: p, publisher: K, publishers: {kafka: K, partner: W, other: W, nobody: N, blank: ""}}}
  - {table: b, id: id, value: v, topic: t, progress: {table: p, publishers: [partner]}}
  - {table: c, id: id, value: v, topic: t, progress: {table: p}}
`,
			want: []string{
				`6: tables[0] (public.a): progress.publishers: kafka's rows are named by progress's publisher:, such as publisher: KafkaPublisher; remove kafka here`,
				`6: tables[0] (public.a): progress.publishers: "blank" needs the publisher column's value in its rows, such as blank: WebhookPublisher`,
				`6: tables[0] (public.a): progress: publisher names Kafka's rows, and the table sends nothing to kafka: name its publishers' rows under progress's publishers:, such as {partner: WebhookPublisher}, and remove publisher`,
				`6: tables[0] (public.a): progress.publishers: the table sends nothing to publisher "nobody" (it sends to partner, other): remove it, or add it to the table's or a route's publishers`,
				`6: tables[0] (public.a): progress.publishers: other and partner would both keep the rows of "W": give each publisher rows of its own`,
				`7: tables[1] (public.b): progress.publishers: want a mapping of publisher to the publisher column's value in its rows, such as {partner: WebhookPublisher}`,
				`7: tables[1] (public.b): progress needs publisher: the publisher column's value in the relay's rows, such as KafkaPublisher (and publishers: for the rows of webhook publishers, such as {partner: WebhookPublisher})`,
				`8: tables[2] (public.c): progress needs publisher: the publisher column's value in the relay's rows, such as KafkaPublisher (and publishers: for the rows of webhook publishers, such as {partner: WebhookPublisher})`,
			}},
		{name: "a route's adopt empty, null, a list, and without id", yaml: `
tables:
  - table: public.events
    value: data
    tags_column: tags
    routes:
      - not a route
      - {topic: a, any_of_tags: [x], adopt: '  '}
      - {topic: b, any_of_tags: [x], adopt: null}
      - {topic: c, any_of_tags: [x], adopt: [position > 1]}
      - topic: d
        any_of_tags: [x]
        adopt: position > 4000
      - {topic: e, any_of_tags: [x], adpot: position > 1}
`, want: []string{
			`7: tables[0].routes[0]: want a mapping, such as {topic: wallet-events, required_tags: [wallet_id]}`,
			`8: tables[0] (public.events): routes[1].adopt is empty: an SQL predicate over the table's columns, such as "position > 4000", or remove the route's adopt`,
			`9: tables[0] (public.events): routes[2].adopt is empty: an SQL predicate over the table's columns, such as "position > 4000", or remove the route's adopt`,
			`10: tables[0] (public.events): routes[3].adopt: want an SQL predicate over the table's columns, or a mapping of publisher to predicate, such as {kafka: position > 4000, partner: position > 3500}`,
			`13: tables[0] (public.events): routes[4].adopt needs id: the relay reads each adopted row by its id column`,
			`14: unknown key "adpot" in tables[0].routes[5] (did you mean "adopt"?)`,
		}},
		{name: "tags_column without routes", yaml: "tables:\n  - {table: x, value: v, topic: t, tags_column: tags}\n",
			want: []string{"2: tables[0] (public.x): tags_column is read by routes only: add routes, or remove tags_column"}},
		{name: "write_back incomplete, and without id", yaml: `
tables:
  - table: public.outbox
    value: payload
    topic: orders
    write_back:
      status_column: status
      delivered: SENT
      deliverd_at_column: sent_at
`, want: []string{
			"6: tables[0] (public.outbox): write_back needs failed: the status column and its values for a delivered and a parked event",
			"6: tables[0] (public.outbox): write_back needs id: it updates the rows by their id column",
			`9: unknown key "deliverd_at_column" in tables[0].write_back (did you mean "delivered_at_column"?)`,
		}},
		{name: "a table listed twice", yaml: `
tables:
  - {table: public.outbox, value: payload, topic: orders}
  - {table: outbox, value: payload, topic: orders}
`, want: []string{"4: tables[1] (public.outbox): the table is listed already, as tables[0] (line 3): one entry per table"}},
		{name: "a bad table name", yaml: "tables:\n  - {table: a.b.c, value: v, topic: t}\n",
			want: []string{`2: tables[0]: table: table "a.b.c": want schema.table`}},
		{name: "a malformed template", yaml: "tables:\n  - table: x\n    value: v\n    topic: orders.{type\n",
			want: []string{`4: tables[0] (public.x): topic: topic template "orders.{type": unclosed '{'`}},
		{name: "an illegal topic", yaml: "tables:\n  - {table: x, value: v, topic: 'orders!'}\n",
			want: []string{`2: tables[0] (public.x): topic: topic name "orders!" has illegal character '!' (Kafka allows [a-zA-Z0-9._-])`}},
		{name: "a topic allowed_topics does not allow", yaml: "allowed_topics: 'orders\\..*'\ntables:\n  - {table: x, value: v, topic: payments}\n",
			want: []string{`3: tables[0] (public.x): topic: topic "payments" is not allowed: it does not match --allowed-topics "orders\\..*"`}},
		{name: "Kafka's own topics, by default", yaml: "tables:\n  - {table: x, value: v, topic: __consumer_offsets}\n",
			want: []string{`2: tables[0] (public.x): topic: topic "__consumer_offsets" is not allowed: a topic that starts with "__" is Kafka's own, whatever --allowed-topics allows`}},
		{name: "allowed_topics not a regular expression", yaml: "allowed_topics: 'orders.('\ntables:\n" + minimal,
			want: []string{"1: allowed_topics \"orders.(\" is not a Go regular expression: error parsing regexp: missing closing ): `orders.(`"}},
		{name: "an unknown ordering", yaml: "ordering: commit\ntables:\n" + minimal,
			want: []string{`1: ordering "commit": want key (a key's events in commit order, held behind a parked one), topic (a topic's events in commit order, ` +
				`with a key or without) or none (later events overtake a parked one)`}},
		{name: "a bad slot name, bad relay table names", yaml: "slot: Relay-Slot\nstatus_table: a.b.c\ncheckpoint_table: ''\ntables:\n" + minimal,
			want: []string{
				`1: slot: replication slot name "Relay-Slot" has 'R'; PostgreSQL allows only lower-case letters, digits and underscores`,
				`2: status_table: table "a.b.c": want schema.table`,
				`3: checkpoint_table is empty: give a value, or null (or leave the key out) for none`,
			}},
		{name: "not YAML", yaml: "slot: a\ntables:\n  - table: x\n    value: v\n     topic: t\n",
			want: []string{"5: not valid YAML: mapping values are not allowed in this context"}},
		{name: "a header named id beside the id column, a header without column", yaml: `
tables:
  - table: x
    id: event_id
    value: v
    topic: t
    headers: {id: event_id, type: null}
`, want: []string{
			`7: tables[0] (public.x): headers: header "type" needs the column it carries, such as type: type`,
			`7: tables[0] (public.x): headers: header "id" is the header of the id column (id: event_id): name the header otherwise`,
		}},
		{name: "headers a list", yaml: "tables:\n  - {table: x, value: v, topic: t, headers: [a, b]}\n",
			want: []string{"2: tables[0] (public.x): headers: want a mapping of header name to column, such as {event_type: type}"}},
		{name: "a column given as a list", yaml: "tables:\n  - {table: x, value: [a, b], topic: t}\n",
			want: []string{"2: tables[0] (public.x): value: want a single value, not a list or mapping"}},
		{name: "a time zone not known", yaml: "tables:\n  - {table: x, value: v, topic: t, timestamp: ts, time_zone: New York}\n",
			want: []string{`2: tables[0] (public.x): time_zone: time zone "New York" is not a zone of the IANA time zone database: name one such as America/New_York, Europe/Berlin or UTC (the zone whose wall time the table's timestamp columns without time zone hold)`}},
		{name: "a timestamp unit not known", yaml: "tables:\n  - {table: x, value: v, topic: t, timestamp: ts, timestamp_unit: ns}\n",
			want: []string{`2: tables[0] (public.x): timestamp_unit "ns": want s, ms or us, the unit of a bigint timestamp column (epoch seconds, milliseconds or microseconds)`}},
		{name: "a converter not known", yaml: "tables:\n  - {table: x, value: v, topic: t, value_converter: avro}\n",
			want: []string{`2: tables[0] (public.x): value_converter: converter "avro": want raw (the column's text as PostgreSQL renders it, bytea's bytes: ByteArrayConverter's), string (Kafka Connect's StringConverter), json (JsonConverter, schemas.enable=false) or json-with-schema (JsonConverter, schemas.enable=true)`}},
		{name: "a null behavior not known", yaml: "tables:\n  - {table: x, value: v, topic: t, value_converter: json, expand_json_payload: true, json_payload_null_behavior: keep}\n",
			want: []string{`2: tables[0] (public.x): json_payload_null_behavior "keep": want ignore (a null member is left out, the router's default) or optional_bytes (kept, as an optional bytes field), as the router's table.json.payload.null.behavior`}},
		{name: "expansion with the raw converter", yaml: "tables:\n  - {table: x, value: v, topic: t, expand_json_payload: true}\n",
			want: []string{`2: tables[0] (public.x): table: expand_json_payload needs the json or json-with-schema value converter (value converter raw): ` +
				`the router's expanded payload is a Kafka Connect struct, which JsonConverter writes as JSON, while StringConverter writes Java's Struct{...} text of it ` +
				`and ByteArrayConverter refuses it; set value_converter: json (or json-with-schema), as the connector's value.converter`}},
		{name: "a second document", yaml: "tables:\n" + minimal + "---\nslot: x\n",
			want: []string{"3: a second YAML document (after ---): put everything in one"}},
		{name: "a merge key", yaml: "tables:\n  - <<: {value: v}\n    table: x\n    topic: t\n",
			want: []string{
				"2: unsupported key in tables[0]: keys are plain names (anchors may stand for values, not for keys or merges with <<)",
				"2: tables[0] (public.x): needs value: the column that is the record value",
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("relay.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse: no error, want %q (file %v)", tc.want, f)
			}
			if f != nil {
				t.Errorf("Parse returned a file with its error")
			}
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("error %T, want Problems: %v", err, err)
			}
			var got []string
			for _, p := range ps {
				if p.File != "relay.yaml" {
					t.Errorf("problem in file %q", p.File)
				}
				got = append(got, fmt.Sprintf("%d: %s", p.Line, p.Msg))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
			if want := "relay.yaml:" + tc.want[0]; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Error() = %q, want it to start with %q", err.Error(), want)
			}
		})
	}
}

// TestNoPassword: no problem and no String shows postgres_url's password.
func TestNoPassword(t *testing.T) {
	for _, yaml := range []string{
		"postgres_url: [postgres://relay:s3cret@db/app]\ntables: []\n",
		"postgres_url: {postgres://relay:s3cret@db/app: 1}\ntables:\n  - {table: x, value: v, topic: t}\n",
		"postgres_url: postgres://relay:s3cret@db/app\npostgres_url: postgres://relay:s3cret@db/app\n",
		"postgres_url: postgres://relay:s3cret@db/app\nslot: 'x y'\n",
	} {
		_, err := Parse("relay.yaml", []byte(yaml))
		if err == nil {
			t.Fatalf("no error for %q", yaml)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error shows the password: %v", err)
		}
	}
	for url, shown := range map[string]string{
		"postgres://relay:s3cret@db:5432/app?sslmode=require": "postgres://relay:xxxxx@db:5432/app?sslmode=require",
		"host=db password='s3 cret' dbname=app":               "host=db password=xxxxx dbname=app",
	} {
		f, err := Parse("relay.yaml", []byte("postgres_url: \""+url+"\"\ntables:\n  - {table: x, value: v, topic: t}\n"))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{f.String(), fmt.Sprint(f), fmt.Sprintf("%v %+v %#v %s", *f, *f, f, f)} {
			if strings.Contains(s, "s3") || !strings.Contains(s, "postgres_url: "+shown+",") {
				t.Errorf("String: %s", s)
			}
		}
	}
}

// TestWarnsOfRoutesNamingOneTopic: two routes of one table that name one
// topic are accepted, with a warning at the second's topic saying the event
// is sent once; routes of two tables naming one topic are not warned of.
func TestWarnsOfRoutesNamingOneTopic(t *testing.T) {
	yaml := `tables:
  - table: public.events
    value: data
    tags_column: tags
    routes:
      - {topic: wallet-events, required_tags: [wallet_id]}
      - {topic: payment-events, any_of_tags: [payment_id]}
      - topic: wallet-events
        any_of_tags: [transfer_id]
  - table: public.more_events
    value: data
    tags_column: tags
    routes: [{topic: wallet-events, required_tags: [wallet_id]}]
`
	f, err := Parse("relay.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tables[0].Mapping.Routes) != 3 {
		t.Fatalf("routes %+v, want all three kept", f.Tables[0].Mapping.Routes)
	}
	want := `relay.yaml:8: tables[0] (public.events): routes[2]: topic "wallet-events" is routes[0]'s too: an event that matches both is sent to it once`
	if f.Warnings.Error() != want {
		t.Fatalf("warnings:\n%v\nwant:\n%s", f.Warnings, want)
	}
	good, err := Parse("relay.yaml", []byte("tables:\n  - {table: x, value: v, topic: t}\n"))
	if err != nil || good.Warnings != nil {
		t.Fatalf("a file without warnings: %v, %v", good.Warnings, err)
	}
}

// TestWarnsOfAdoptNoRouteUses: a table's adopt beside routes that each
// have their own is accepted, with a warning that no route uses it; one
// that a route uses is not warned of.
func TestWarnsOfAdoptNoRouteUses(t *testing.T) {
	const yaml = `tables:
  - table: public.events
    id: position
    value: data
    tags_column: tags
    routes:
      - {topic: wallet-events, required_tags: [wallet_id], adopt: position > 600}
      - {topic: payment-events, any_of_tags: [payment_id]%s}
    adopt: position > 550
`
	f, err := Parse("relay.yaml", []byte(fmt.Sprintf(yaml, ", adopt: position > 550")))
	if err != nil {
		t.Fatal(err)
	}
	want := "relay.yaml:9: tables[0] (public.events): adopt is used by no route: each route has an adopt of its own, which it adopts by instead; remove the table's adopt"
	if f.Warnings == nil || f.Warnings.Error() != want {
		t.Errorf("warnings:\n%v\nwant:\n%s", f.Warnings, want)
	}
	f, err = Parse("relay.yaml", []byte(fmt.Sprintf(yaml, "")))
	if err != nil || f.Warnings != nil {
		t.Errorf("a route using the table's adopt: %v, %v; want no warning", f.Warnings, err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "relay.yaml")
	if err := os.WriteFile(path, []byte("tables:\n  - {tabel: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+`:2: unknown key "tabel" in tables[0] (did you mean "table"?)`) {
		t.Errorf("Load: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "nosuch.yaml")); err == nil || !strings.Contains(err.Error(), "read the config file") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// TestLoadSizeLimit: a file over 1 MiB is refused with its size and the
// limit, before it is read: memory for the whole file is never taken.
func TestLoadSizeLimit(t *testing.T) {
	const good = "tables:\n  - {table: x, value: v, topic: t}\n"
	// padded is a good config of exactly n bytes: a comment fills it up.
	padded := func(n int) []byte {
		return []byte(good + "#" + strings.Repeat(" ", n-len(good)-2) + "\n")
	}
	tests := []struct {
		name string
		// write makes the file at path.
		write func(t *testing.T, path string)
		// want is what the error contains; "" for no error.
		want string
		// maxAlloc bounds the bytes Load may allocate to refuse the file.
		maxAlloc uint64
	}{
		{name: "at the limit", write: func(t *testing.T, path string) {
			writeFile(t, path, padded(maxFileSize))
		}},
		{name: "one byte over the limit", write: func(t *testing.T, path string) {
			writeFile(t, path, padded(maxFileSize+1))
		}, want: "is too large: 1048577 bytes, the limit is 1048576 bytes (1 MiB)", maxAlloc: 64 << 10},
		{name: "a gigabyte, sparse", write: func(t *testing.T, path string) {
			writeFile(t, path, nil)
			if err := os.Truncate(path, 1<<30); err != nil {
				t.Fatal(err)
			}
		}, want: "is too large: 1073741824 bytes, the limit is 1048576 bytes (1 MiB)", maxAlloc: 64 << 10},
		{name: "a pipe that gives more than the limit", write: func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skipf("no named pipe: %v", err)
			}
			data := padded(2 * maxFileSize)
			go func() {
				w, err := os.OpenFile(path, os.O_WRONLY, 0)
				if err != nil {
					return
				}
				defer w.Close()
				w.Write(data) // fails once Load stops reading
			}()
		}, want: "is too large: over 1048576 bytes, the limit is 1048576 bytes (1 MiB)",
			maxAlloc: 8 * maxFileSize}, // read up to the limit, in a growing buffer
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "relay.yaml")
			tc.write(t, path)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f, err := Load(path)
			runtime.ReadMemStats(&after)
			if tc.want == "" {
				if err != nil || len(f.Tables) != 1 {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "the config file "+path+" "+tc.want) {
				t.Fatalf("Load: %v, want an error with %q", err, tc.want)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > tc.maxAlloc {
				t.Errorf("Load took %d bytes to refuse the file", n)
			}
		})
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMappingIsACopy: changing the Mapping or WriteBack of a table's
// Clone does not change the table.
func TestMappingIsACopy(t *testing.T) {
	f, err := Parse("relay.yaml", []byte(fullExample))
	if err != nil {
		t.Fatal(err)
	}
	m := f.Tables[1].Clone().Mapping
	m.Routes[0].RequiredTags[0] = "changed"
	wb := f.Tables[0].Clone().WriteBack
	wb.Delivered = "changed"
	if f.Tables[1].Mapping.Routes[0].RequiredTags[0] != "wallet_id" || f.Tables[0].WriteBack.Delivered != "DELIVERED" {
		t.Error("the table changed with its Mapping or WriteBack")
	}
}
