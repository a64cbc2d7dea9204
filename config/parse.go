package config

import (
	"errors"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/sink"
)

// file reads the top level into f.
func (p *parser) file(root *yaml.Node, f *File) {
	if isNull(root) {
		p.problem(1, emptyFile)
		return
	}
	entries, ok := p.mapping(root, "", "a mapping of settings (postgres_url:, kafka:, slot:, publication:, tables:, messages:, publishers:)", names(fileKeys))
	if !ok {
		return
	}
	read(p, entries, "", fileKeys, f)
	p.sources(entries, f)
	p.checkPublisherUses(f)
}

// emptyFile is the problem of a file with nothing in it.
const emptyFile = "the file is empty: it needs tables: or messages: (see `cdc-relay check-config -h`)"

// sources reads tables and messages, what the relay relays: at least one
// table or one message source. An empty tables is a problem only when
// messages lists none (a relay of messages only has no table).
func (p *parser) sources(entries []keyed, f *File) {
	var tables, messages *keyed
	for i, e := range entries {
		switch e.key {
		case "tables":
			tables = &entries[i]
		case "messages":
			messages = &entries[i]
		}
	}
	if messages != nil {
		p.messages(*messages, f)
	}
	switch {
	case tables != nil && (messages == nil || isEmptyList(messages.value) || !isEmptyList(tables.value)):
		p.tables(*tables, f)
	case tables == nil && messages == nil:
		p.problem(1, "no tables and no messages: list the outbox tables under tables:, each with at least table:, value: and topic:, "+
			"or the prefixes of pg_logical_emit_message under messages:, each with at least prefix:")
	}
}

// isEmptyList says whether n is null or a list of nothing.
func isEmptyList(n *yaml.Node) bool {
	return isNull(n) || n.Kind == yaml.SequenceNode && len(n.Content) == 0
}

// readPostgresURL reads postgres_url. Its value is never in a problem: it
// may hold a password.
func readPostgresURL(p *parser, e keyed, _ string, f *File) {
	if isNull(e.value) {
		return
	}
	if e.value.Kind != yaml.ScalarNode || e.value.Value == "" {
		p.problem(e.line, "postgres_url: want a connection string, such as postgres://relay@db:5432/app")
		return
	}
	f.PostgresURL = e.value.Value
}

// readSlot reads slot, a name PostgreSQL accepts for a replication slot.
func readSlot(p *parser, e keyed, _ string, f *File) {
	if v, ok := p.str(e, ""); ok && v != "" {
		if err := replication.ValidSlotName(v); err != nil {
			p.problem(e.line, "slot: %v", err)
		}
		f.Slot = v
	}
}

// relayTable reads one of the relay's own tables (status_table,
// checkpoint_table), "schema.table" or "table", into the field returns.
func relayTable(field func(*File) *string) func(*parser, keyed, string, *File) {
	return func(p *parser, e keyed, _ string, f *File) {
		v, ok := p.str(e, "")
		if !ok || v == "" {
			return
		}
		if _, _, err := decoder.ParseTable(v); err != nil {
			p.problem(e.line, "%s: %v", e.key, err)
		}
		*field(f) = v
	}
}

// readAllowedTopics reads allowed_topics, a Go regular expression.
func readAllowedTopics(p *parser, e keyed, _ string, f *File) {
	v, ok := p.str(e, "")
	if !ok || v == "" {
		return
	}
	if _, err := (decoder.Mapping{AllowedTopics: v}).TopicCheck(); err != nil {
		p.problem(e.line, "allowed_topics %q is not a Go regular expression: %v", v, errors.Unwrap(err))
		return
	}
	f.AllowedTopics = v
}

// readOrdering reads ordering: key, topic or none.
func readOrdering(p *parser, e keyed, _ string, f *File) {
	v, ok := p.str(e, "")
	if !ok || v == "" {
		return
	}
	if v != "key" && v != "topic" && v != "none" {
		p.problem(e.line, "ordering %q: want key (a key's events in commit order, held behind a parked one), topic (a topic's events in commit order, "+
			"with a key or without) or none (later events overtake a parked one)", v)
		return
	}
	f.Ordering = v
}

// readTableOrdering reads a table's ordering: key or topic, the order of
// its topics' events overriding the file's ordering (none applies to the
// whole relay only). Whether a table ordered by topic has known topics is
// checked with the table (checkOrdering).
func readTableOrdering(p *parser, e keyed, ctx string, te *tableEntry) {
	v, ok := p.str(e, ctx)
	if !ok || v == "" {
		return
	}
	switch v {
	case "key", "topic":
		te.t.Ordering = v
	case "none":
		p.problem(e.line, "%sordering none applies to the whole relay: --ordering none (or ordering: none at the file's top level); "+
			"a table's ordering is key or topic", ctx)
	default:
		p.problem(e.line, "%sordering %q: want key (the table's events in commit order by topic and record key) or topic "+
			"(its topics' events in commit order, with a key or without)", ctx, v)
	}
}

// readTimeZone reads a table's time_zone: the IANA zone whose wall time
// its timestamp-without-time-zone columns hold.
func readTimeZone(p *parser, e keyed, ctx string, te *tableEntry) {
	v, ok := p.str(e, ctx)
	if !ok || v == "" {
		return
	}
	m := decoder.Mapping{TimeZone: v}
	if _, err := m.Location(); err != nil {
		p.problem(e.line, "%stime_zone: %v (the zone whose wall time the table's timestamp columns without time zone hold)", ctx, err)
		return
	}
	te.t.Mapping.TimeZone = v
}

// readConverter reads a table's key_converter or value_converter into the
// field at: string, json or json-with-schema, the Kafka Connect converter
// (and its schemas.enable) whose bytes the records carry.
func readConverter(at func(*tableEntry) *decoder.Converter) func(*parser, keyed, string, *tableEntry) {
	return func(p *parser, e keyed, ctx string, te *tableEntry) {
		v, ok := p.str(e, ctx)
		if !ok {
			return
		}
		c, err := decoder.ParseConverter(v)
		if err != nil {
			p.problem(e.line, "%s%s: %v", ctx, e.key, err)
			return
		}
		*at(te) = c
	}
}

// readJSONNullBehavior reads a table's json_payload_null_behavior: ignore
// or optional_bytes.
func readJSONNullBehavior(p *parser, e keyed, ctx string, te *tableEntry) {
	v, ok := p.str(e, ctx)
	if !ok {
		return
	}
	b, err := decoder.ParseJSONNullBehavior(v)
	if err != nil {
		p.problem(e.line, "%s%v", ctx, err)
		return
	}
	te.t.Mapping.JSONPayloadNullBehavior = b
}

// readJSONEmptyArrayBehavior reads a table's
// json_payload_empty_array_behavior: ignore or optional_string.
func readJSONEmptyArrayBehavior(p *parser, e keyed, ctx string, te *tableEntry) {
	v, ok := p.str(e, ctx)
	if !ok {
		return
	}
	b, err := decoder.ParseJSONEmptyArrayBehavior(v)
	if err != nil {
		p.problem(e.line, "%s%v", ctx, err)
		return
	}
	te.t.Mapping.JSONPayloadEmptyArrayBehavior = b
}

// readTimestampUnit reads a table's timestamp_unit: s, ms or us.
func readTimestampUnit(p *parser, e keyed, ctx string, te *tableEntry) {
	v, ok := p.str(e, ctx)
	if !ok || v == "" {
		return
	}
	u, err := decoder.ParseTimestampUnit(v)
	if err != nil {
		p.problem(e.line, "%stimestamp_unit %q: want s, ms or us, the unit of a bigint timestamp column (epoch seconds, milliseconds or microseconds)", ctx, v)
		return
	}
	te.t.Mapping.TimestampUnit = u
}

// readCompression reads kafka.compression, a codec sink knows.
func readCompression(p *parser, e keyed, ctx string, k *Kafka) {
	v, ok := p.str(e, ctx)
	if !ok || v == "" {
		return
	}
	v = strings.ToLower(strings.TrimSpace(v)) // as --kafka-compression takes it
	if _, err := sink.ParseCompression(v); err != nil {
		p.problem(e.line, "%scompression %q: want one of %s", ctx, v, strings.Join(sink.Compressions(), ", "))
		return
	}
	k.Compression = v
}

// readBatchMaxBytes reads kafka.batch_max_bytes, a number of bytes in
// the producer's range.
func readBatchMaxBytes(p *parser, e keyed, ctx string, k *Kafka) {
	v, ok := p.str(e, ctx)
	if !ok || v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err == nil && n != 0 {
		err = sink.CheckBatchMaxBytes(n)
	}
	if err != nil || n == 0 {
		p.problem(e.line, "%sbatch_max_bytes %q: want %d to %d bytes, and no more than the brokers' message.max.bytes", ctx, v, sink.MinBatchMaxBytes, sink.MaxBatchMaxBytes)
		return
	}
	k.BatchMaxBytes = n
}

// kafka reads the kafka section.
func (p *parser) kafka(e keyed, k *Kafka) {
	if isNull(e.value) {
		return
	}
	entries, ok := p.mapping(e.value, "kafka", `a mapping, such as {brokers: ["kafka:9092"]}`, names(kafkaKeys))
	if !ok {
		return
	}
	read(p, entries, "kafka.", kafkaKeys, k)
}

// tables reads the tables list.
func (p *parser) tables(e keyed, f *File) {
	n := e.value
	if isEmptyList(n) {
		p.problem(e.line, "tables is empty: list the outbox tables, each with at least table:, value: and topic:")
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.problem(e.line, "tables: want a list of tables (- table: public.outbox ...)")
		return
	}
	topicCheck, err := decoder.Mapping{AllowedTopics: f.AllowedTopics}.TopicCheck()
	if err != nil {
		topicCheck = func(string) error { return nil } // reported at allowed_topics
	}
	firstAt := map[string]int{} // table name → index
	lines := map[int]int{}      // index → line
	for i, item := range n.Content {
		item = deref(item)
		t, ok := p.table(item, i, topicCheck)
		if !ok {
			continue
		}
		name := t.Name()
		if j, dup := firstAt[name]; dup {
			p.problem(item.Line, "tables[%d] (%s): the table is listed already, as tables[%d] (line %d): one entry per table", i, name, j, lines[j])
			continue
		}
		firstAt[name], lines[i] = i, item.Line
		f.Tables = append(f.Tables, t)
	}
}
