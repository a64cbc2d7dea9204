package config

import (
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// The keys of each mapping in the file, each with how its value is read:
// adding a key is a row here and a field of the type it is read into; a
// table key reads into the outbox.Table's Mapping or WriteBack, and a key
// that names a column also goes into outbox.Table.Columns, which
// check-config checks.
// The order of a list is the order in which an unknown key's problem
// names the known keys.

// fileKeys are the keys of the file's top level.
var fileKeys = []knownKey[*File]{
	{"postgres_url", readPostgresURL},
	{"kafka", func(p *parser, e keyed, _ string, f *File) { p.kafka(e, &f.Kafka) }},
	{"slot", readSlot},
	{"publication", text(func(f *File) *string { return &f.Publication })},
	{"tables", nil},   // read last, by file: its topics are checked against allowed_topics
	{"messages", nil}, // read last too, by file, for the same reason
	{"status_table", relayTable(func(f *File) *string { return &f.StatusTable })},
	{"checkpoint_table", relayTable(func(f *File) *string { return &f.CheckpointTable })},
	{"allowed_topics", readAllowedTopics},
	{"ordering", readOrdering},
	{"publishers", readPublishers},
}

// kafkaKeys are the keys of the kafka section.
var kafkaKeys = []knownKey[*Kafka]{
	{"brokers", list(func(k *Kafka) *[]string { return &k.Brokers }, `["kafka-1:9092", "kafka-2:9092"]`)},
	{"compression", readCompression},
	{"batch_max_bytes", readBatchMaxBytes},
}

// tableKeys are the keys of an entry of tables.
var tableKeys = []knownKey[*tableEntry]{
	{"table", nil}, // read first, by tableName: every other problem names the table
	{"id", text(func(te *tableEntry) *string { return &te.t.Mapping.IDColumn })},
	{"key", text(func(te *tableEntry) *string { return &te.t.Mapping.KeyColumn })},
	{"value", text(func(te *tableEntry) *string { return &te.t.Mapping.PayloadColumn })},
	{"topic", text(func(te *tableEntry) *string { return &te.t.Mapping.TopicTemplate })},
	{"topic_column", text(func(te *tableEntry) *string { return &te.t.Mapping.TopicColumn })},
	{"headers", func(p *parser, e keyed, ctx string, te *tableEntry) {
		te.t.Mapping.HeaderNames, te.t.Mapping.HeaderColumns = p.headers(e, ctx)
	}},
	{"headers_column", text(func(te *tableEntry) *string { return &te.t.Mapping.HeadersColumn })},
	{"timestamp", text(func(te *tableEntry) *string { return &te.t.Mapping.TimestampColumn })},
	{"timestamp_unit", readTimestampUnit},
	{"time_zone", readTimeZone},
	{"envelope", func(p *parser, e keyed, ctx string, te *tableEntry) {
		te.t.Mapping.EnvelopeNames, te.t.Mapping.EnvelopeColumns = p.namedColumns(e, ctx, "field", "{eventType: type}")
	}},
	{"envelope_schema_name", text(func(te *tableEntry) *string { return &te.t.Mapping.EnvelopeSchemaName })},
	{"tombstone_on_empty_payload", func(p *parser, e keyed, ctx string, te *tableEntry) {
		if v, ok := p.boolean(e, ctx); ok {
			te.t.Mapping.TombstoneOnEmptyPayload = v
		}
	}},
	{"tracing_span_context", text(func(te *tableEntry) *string { return &te.t.Mapping.TracingSpanContextColumn })},
	{"partition", text(func(te *tableEntry) *string { return &te.t.Mapping.PartitionColumn })},
	{"expand_json_payload", func(p *parser, e keyed, ctx string, te *tableEntry) {
		if v, ok := p.boolean(e, ctx); ok {
			te.t.Mapping.ExpandJSONPayload = v
		}
	}},
	{"json_payload_null_behavior", readJSONNullBehavior},
	{"json_payload_empty_array_behavior", readJSONEmptyArrayBehavior},
	{"key_converter", readConverter(func(te *tableEntry) *decoder.Converter { return &te.t.Mapping.KeyConverter })},
	{"value_converter", readConverter(func(te *tableEntry) *decoder.Converter { return &te.t.Mapping.ValueConverter })},
	{"header_converter", readConverter(func(te *tableEntry) *decoder.Converter { return &te.t.Mapping.HeaderConverter })},
	{"tags_column", text(func(te *tableEntry) *string { return &te.t.Mapping.TagsColumn })},
	{"routes", func(p *parser, e keyed, ctx string, te *tableEntry) {
		te.routesLine = e.line
		p.routes(e, te, ctx)
	}},
	{"write_back", func(p *parser, e keyed, ctx string, te *tableEntry) {
		te.t.WriteBack = p.writeBack(e, te, ctx)
	}},
	{"adopt", readTableAdopt},
	{"progress", func(p *parser, e keyed, ctx string, te *tableEntry) {
		te.t.Progress = p.progressBlock(e, te, ctx)
	}},
	{"ordering", readTableOrdering},
	{"publishers", func(p *parser, e keyed, ctx string, te *tableEntry) {
		te.t.Publishers = p.publisherList(e, ctx, te.where, tableNameOf(te))
	}},
}

// messageKeys are the keys of an entry of messages.
var messageKeys = []knownKey[*messageEntry]{
	{"prefix", nil}, // read first, by messagePrefix: every other problem names the prefix
	{"topic", text(func(me *messageEntry) *string { return &me.m.Topic })},
	{"payload_only", readPayloadOnly},
	{"key_field", text(func(me *messageEntry) *string { return &me.m.KeyField })},
	{"id_field", text(func(me *messageEntry) *string { return &me.m.IDField })},
	{"allowed_topics", readMessageAllowedTopics},
	{"publishers", func(p *parser, e keyed, ctx string, _ *messageEntry) {
		p.problem(e.line, "%spublishers: a message source goes to Kafka only in this version: remove publishers", ctx)
	}},
}

// routeKeys are the keys of a route.
var routeKeys = []knownKey[*routeEntry]{
	{"topic", func(p *parser, e keyed, ctx string, r *routeEntry) {
		r.Topic, _ = p.str(e, ctx)
		r.topicLine = e.line
	}},
	{"required_tags", list(func(r *routeEntry) *[]string { return &r.RequiredTags }, "[wallet_id]")},
	{"any_of_tags", list(func(r *routeEntry) *[]string { return &r.AnyOfTags }, "[payment_id, transfer_id]")},
	{"adopt", readRouteAdopt},
	{"publishers", func(p *parser, e keyed, ctx string, r *routeEntry) {
		r.publishers = p.publisherList(e, ctx, r.where, r.table)
	}},
}

// writeBackKeys are the keys of write_back.
var writeBackKeys = []knownKey[*writeback.Columns]{
	{"status_column", text(func(c *writeback.Columns) *string { return &c.StatusColumn })},
	{"delivered", text(func(c *writeback.Columns) *string { return &c.Delivered })},
	{"failed", text(func(c *writeback.Columns) *string { return &c.Failed })},
	{"retrying", text(func(c *writeback.Columns) *string { return &c.Retrying })},
	{"dead", text(func(c *writeback.Columns) *string { return &c.Dead })},
	{"pending", func(p *parser, e keyed, ctx string, c *writeback.Columns) { c.Pending = p.pending(e, ctx) }},
	{"delivered_at_column", text(func(c *writeback.Columns) *string { return &c.DeliveredAtColumn })},
	{"error_column", text(func(c *writeback.Columns) *string { return &c.ErrorColumn })},
	{"attempts_column", text(func(c *writeback.Columns) *string { return &c.AttemptsColumn })},
	{"next_attempt_column", text(func(c *writeback.Columns) *string { return &c.NextAttemptColumn })},
	{"last_attempt_column", text(func(c *writeback.Columns) *string { return &c.LastAttemptColumn })},
	{"keep_error", func(p *parser, e keyed, ctx string, c *writeback.Columns) {
		if v, ok := p.boolean(e, ctx); ok {
			c.KeepError = v
		}
	}},
}

// knownKey is a key a mapping in the file may have, and how its value is
// read into a T: read gets the key's entry and the context that starts
// each of its problems. A nil read is a key its mapping's parser reads
// itself.
type knownKey[T any] struct {
	name string
	read func(p *parser, e keyed, ctx string, into T)
}

// names lists the keys' names, in order: the keys a mapping may have.
func names[T any](keys []knownKey[T]) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.name
	}
	return out
}

// read reads each of entries, in order, with its key's read function.
func read[T any](p *parser, entries []keyed, ctx string, keys []knownKey[T], into T) {
	for _, e := range entries {
		for _, k := range keys {
			if k.name == e.key && k.read != nil {
				k.read(p, e, ctx, into)
			}
		}
	}
}

// text reads a single value (see parser.str) into the string field
// returns; a problem leaves it "".
func text[T any](field func(T) *string) func(*parser, keyed, string, T) {
	return func(p *parser, e keyed, ctx string, into T) { *field(into), _ = p.str(e, ctx) }
}

// list reads a list of values (see parser.list; example is one, for the
// problem) into the field returns; a problem leaves it nil.
func list[T any](field func(T) *[]string, example string) func(*parser, keyed, string, T) {
	return func(p *parser, e keyed, ctx string, into T) { *field(into), _ = p.list(e, ctx, example) }
}
