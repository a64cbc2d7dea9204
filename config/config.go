package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// File is a parsed config file. A setting the file leaves out (or sets to
// null) is "" or nil: the caller applies its defaults and lets flags and
// environment variables win. Its String method never shows the password
// of PostgresURL.
type File struct {
	// PostgresURL is postgres_url, the connection string. It may hold a
	// password: never log or print it (String hides it).
	PostgresURL string
	// Kafka is kafka.
	Kafka Kafka
	// Slot is slot, the logical replication slot's name, checked as
	// PostgreSQL takes it (lower-case letters, digits, underscores).
	Slot string
	// Publication is publication, the publication of the tables.
	Publication string
	// StatusTable and CheckpointTable are status_table and
	// checkpoint_table, the relay's own tables, as "schema.table" or
	// "table" (--status-table and --checkpoint-table); checked with
	// [decoder.ParseTable].
	StatusTable, CheckpointTable string
	// AllowedTopics is allowed_topics (--allowed-topics): a Go regular
	// expression every topic must match whole. It applies to every table,
	// and to every message source that sets no allowed_topics of its own;
	// [Table.Mapping] and Messages leave it out, since a flag may override
	// it.
	AllowedTopics string
	// Ordering is ordering (--ordering): key, a key's events in commit
	// order, held behind a parked one; or none, later events overtake a
	// parked one. Empty when the file does not set it.
	Ordering string
	// Tables are the outbox tables, each named once. There is at least
	// one unless Messages has one: a relay of messages only has no table.
	Tables []Table
	// Messages is messages: the logical decoding messages to relay (the
	// application's pg_logical_emit_message), one entry per prefix, in
	// the file's order. An entry's AllowedTopics is its own
	// allowed_topics, or "" when it sets none: then the file's
	// AllowedTopics (or the flag's) applies to it, as to a table.
	Messages []decoder.MessageMapping
	// Warnings are what [Parse] accepts but is usually a mistake, each
	// with its line: two routes of one table that name the same topic
	// (an event that matches both is sent to it once).
	Warnings Problems
}

// Kafka is the file's kafka section.
type Kafka struct {
	// Brokers is brokers: the brokers to bootstrap from, "host:port" each.
	Brokers []string
	// Compression is compression (--kafka-compression): one of
	// sink.Compressions.
	Compression string
	// BatchMaxBytes is batch_max_bytes (--kafka-batch-max-bytes): the most
	// bytes of records, before compression, in one batch; 0 when unset.
	BatchMaxBytes int
}

// Table is one entry of tables: an outbox table and how its rows become
// Kafka records. Column names are "" when unset. [Parse] returns only
// tables that pass its checks; [Table.Mapping] and [Table.WriteBack] say
// what a table means to the decoder and to write-back.
type Table struct {
	// Table is table: "schema.table", or "table" in schema public.
	Table string
	// ID is id: the column sent as header "id" (consumers deduplicate on
	// it); write_back needs it, since it updates rows by id.
	ID string
	// Key is key: the column that is the record key. Optional.
	Key string
	// Value is value: the column that is the record value. Required.
	Value string
	// Topic is topic: a literal topic or a template of {column}s.
	Topic string
	// TopicColumn is topic_column: a column that, when not null, names the
	// topic and overrides Topic.
	TopicColumn string
	// Headers is headers: header name ← column, in the file's order.
	Headers []Header
	// HeadersColumn is headers_column: a json or jsonb object column whose
	// keys become headers too.
	HeadersColumn string
	// Timestamp is timestamp: the column that is the record timestamp.
	Timestamp string
	// TimestampUnit is timestamp_unit: s, ms or us, the unit of a bigint
	// Timestamp column; "" judges it by the values' magnitude.
	TimestampUnit decoder.TimestampUnit
	// TagsColumn is tags_column: the tags Routes match (a text[] of
	// "key=value" or "key" tags, or jsonb). Required with Routes, refused
	// without.
	TagsColumn string
	// Routes is routes: each matching route's topic gets a copy of the
	// event. Routes exclude Topic and TopicColumn.
	Routes []decoder.Route
	// WriteBackColumns is write_back, or nil: where the outcome of each
	// delivery is written back to the row.
	WriteBackColumns *writeback.Columns
	// Adopt is adopt: an SQL predicate over the table's columns, such as
	// "position > 4000". When the relay creates its slot, the rows it
	// selects as of the slot's snapshot are sent, none twice by the
	// switch (the switch-over from a poller that kept its position). It
	// needs ID. Parse checks
	// only that it is not blank; PostgreSQL checks the rest.
	Adopt string
}

// Header is one entry of a table's headers: the header Name carries
// Column.
type Header struct {
	Name, Column string
}

// Name is the table's name as "schema.table", the schema spelled out.
func (t Table) Name() string {
	schema, table, err := decoder.ParseTable(t.Table)
	if err != nil {
		return t.Table
	}
	return schema + "." + table
}

// Mapping is the decoder mapping the table means: each key of the table's
// entry in its role, the headers in the file's order (HeaderNames[i] names
// the header of HeaderColumns[i]). AllowedTopics is left empty: it is the
// file's (File.AllowedTopics) or the flag's. The result shares no memory
// with t.
func (t Table) Mapping() decoder.Mapping {
	schema, table, _ := decoder.ParseTable(t.Table)
	m := decoder.Mapping{
		Schema:          schema,
		Table:           table,
		IDColumn:        t.ID,
		KeyColumn:       t.Key,
		PayloadColumn:   t.Value,
		TopicColumn:     t.TopicColumn,
		HeadersColumn:   t.HeadersColumn,
		TimestampColumn: t.Timestamp,
		TimestampUnit:   t.TimestampUnit,
		TopicTemplate:   t.Topic,
		TagsColumn:      t.TagsColumn,
	}
	for _, h := range t.Headers {
		m.HeaderColumns = append(m.HeaderColumns, h.Column)
		m.HeaderNames = append(m.HeaderNames, h.Name)
	}
	for _, r := range t.Routes {
		m.Routes = append(m.Routes, decoder.Route{Topic: r.Topic, RequiredTags: slices.Clone(r.RequiredTags), AnyOfTags: slices.Clone(r.AnyOfTags)})
	}
	return m
}

// WriteBack is a copy of the table's write_back columns, or nil when the
// table has none.
func (t Table) WriteBack() *writeback.Columns {
	if t.WriteBackColumns == nil {
		return nil
	}
	c := *t.WriteBackColumns
	c.Pending = slices.Clone(c.Pending)
	return &c
}

// Column is a column that a table's entry names, with the key that names
// it.
type Column struct {
	// Name is the column's name.
	Name string
	// Key is the key that names it: "id", "key", "value", "topic" (an
	// input of the template), "topic_column", "headers.NAME" (the column of
	// header NAME), "headers_column", "timestamp", "tags_column", or
	// "write_back.status_column", "write_back.delivered_at_column",
	// "write_back.error_column", "write_back.attempts_column",
	// "write_back.next_attempt_column".
	Key string
}

// Columns lists every column the table's entry names, in the order of the
// keys above; a column named by two keys is listed twice.
func (t Table) Columns() []Column {
	var cols []Column
	add := func(key, name string) {
		if name != "" {
			cols = append(cols, Column{Name: name, Key: key})
		}
	}
	add("id", t.ID)
	add("key", t.Key)
	add("value", t.Value)
	for _, c := range templateColumns(t.Topic) {
		add("topic", c)
	}
	add("topic_column", t.TopicColumn)
	for _, h := range t.Headers {
		add("headers."+h.Name, h.Column)
	}
	add("headers_column", t.HeadersColumn)
	add("timestamp", t.Timestamp)
	add("tags_column", t.TagsColumn)
	if wb := t.WriteBackColumns; wb != nil {
		add("write_back.status_column", wb.StatusColumn)
		add("write_back.delivered_at_column", wb.DeliveredAtColumn)
		add("write_back.error_column", wb.ErrorColumn)
		add("write_back.attempts_column", wb.AttemptsColumn)
		add("write_back.next_attempt_column", wb.NextAttemptColumn)
	}
	return cols
}

// templateColumns returns the {column} inputs of a topic template, in
// order; a malformed template ([Parse] refuses it) gives those before the
// mistake.
func templateColumns(tmpl string) []string {
	var cols []string
	for {
		open := strings.IndexByte(tmpl, '{')
		if open < 0 {
			return cols
		}
		end := strings.IndexByte(tmpl[open:], '}')
		if end < 0 {
			return cols
		}
		if c := tmpl[open+1 : open+end]; c != "" {
			cols = append(cols, c)
		}
		tmpl = tmpl[open+end+1:]
	}
}

// String describes the file for a log line or a person, with every
// password of PostgresURL masked ([pgerr.Redact]).
func (f File) String() string {
	var b strings.Builder
	b.WriteString("config{")
	if f.PostgresURL != "" {
		fmt.Fprintf(&b, "postgres_url: %s, ", pgerr.Redact(f.PostgresURL))
	}
	if len(f.Kafka.Brokers) > 0 {
		fmt.Fprintf(&b, "kafka.brokers: %s, ", strings.Join(f.Kafka.Brokers, ","))
	}
	if f.Kafka.Compression != "" {
		fmt.Fprintf(&b, "kafka.compression: %s, ", f.Kafka.Compression)
	}
	if f.Kafka.BatchMaxBytes != 0 {
		fmt.Fprintf(&b, "kafka.batch_max_bytes: %d, ", f.Kafka.BatchMaxBytes)
	}
	for _, s := range []struct{ key, v string }{
		{"slot", f.Slot}, {"publication", f.Publication}, {"status_table", f.StatusTable},
		{"checkpoint_table", f.CheckpointTable}, {"allowed_topics", f.AllowedTopics},
	} {
		if s.v != "" {
			fmt.Fprintf(&b, "%s: %s, ", s.key, s.v)
		}
	}
	names := make([]string, len(f.Tables))
	for i, t := range f.Tables {
		names[i] = t.Name()
	}
	fmt.Fprintf(&b, "tables: [%s]", strings.Join(names, " "))
	if len(f.Messages) > 0 {
		names = names[:0]
		for _, m := range f.Messages {
			names = append(names, m.Name())
		}
		fmt.Fprintf(&b, ", messages: [%s]", strings.Join(names, " "))
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so that %#v hides the password too.
func (f File) GoString() string { return f.String() }
