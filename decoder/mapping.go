package decoder

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Mapping says which outbox table to relay and which of its columns play
// which role in the Kafka record. A column name left empty disables that
// role. The zero Mapping is not useful; start from [DefaultMapping].
type Mapping struct {
	// Schema and Table name the outbox table.
	Schema, Table string

	// IDColumn is the event id, sent as header "id" (the consumer's
	// deduplication key). Optional: used when the table has it.
	IDColumn string
	// KeyColumn is the record key. Optional: without it records have no
	// key, and Kafka spreads them over the topic's partitions.
	KeyColumn string
	// PayloadColumn is the record value, bytes exactly as PostgreSQL renders
	// them. Required.
	PayloadColumn string
	// TopicColumn, when present and not null, names the topic and overrides
	// TopicTemplate. Optional.
	TopicColumn string
	// HeadersColumn is a JSON object whose keys become record headers.
	// Optional.
	HeadersColumn string
	// TimestampColumn is the record timestamp (timestamptz, timestamp, or
	// bigint: the time since the epoch in TimestampUnit). Optional.
	TimestampColumn string
	// TimestampUnit is the unit of a bigint TimestampColumn; unset judges
	// each value's unit by its magnitude (JudgeUnit). Ignored for the
	// other types.
	TimestampUnit TimestampUnit
	// TimeZone is the IANA name of the zone (America/New_York) whose wall
	// time the table's timestamp-without-time-zone columns hold, as an
	// application that writes local time fills them; "" is UTC. A
	// TimestampColumn of that type is read in it, and write-back writes
	// such columns in it.
	TimeZone string
	// HeaderColumns are copied into headers, named by HeaderNames. Each
	// must exist in the table.
	HeaderColumns []string
	// HeaderNames name the headers of HeaderColumns, in the same order;
	// nil names each header like its column.
	HeaderNames []string
	// TopicTemplate builds the topic when TopicColumn is absent or null;
	// {column} is replaced by that column's value.
	TopicTemplate string
	// TagsColumn is the column Routes match: a text[] of "key=value" or
	// "key" tags, or a jsonb array of such strings or a jsonb object (each
	// key a tag). Required with Routes, unused without.
	TagsColumn string
	// Routes, when set, take the place of TopicColumn and TopicTemplate:
	// an event goes to the topic of every route it matches, one copy per
	// topic, and an event that matches none goes nowhere.
	Routes []Route
	// AllowedTopics is a Go regular expression that an event's whole topic
	// must match; an event for any other topic is poison. Empty allows
	// every topic that does not start with "_" or "connect-" (Kafka's
	// internal topics such as __consumer_offsets, and those of its tools:
	// _schemas, connect-configs), so that a role that may insert into the
	// outbox cannot write them.
	AllowedTopics string
	// ReservedTopics are topics no event may go to, whatever AllowedTopics
	// allows: the relay's own (its checkpoint topic, its dead-letter
	// topic), which a record of an event would corrupt. Topics that start
	// with "__" (Kafka's internal ones) are always refused.
	ReservedTopics []string

	// KeyConverter and ValueConverter write the key and payload columns'
	// values as the record's key and value bytes, as Kafka Connect's
	// converter of the same name does behind Debezium's outbox event
	// router. The zero value, ConverterRaw, writes them as they are.
	KeyConverter, ValueConverter Converter
	// HeaderConverter writes the id header and the header columns' values
	// as Kafka Connect's header.converter does (Connect's default,
	// SimpleHeaderConverter, writes them as ConverterString; Debezium
	// Server's JSON header format as ConverterJSON or
	// ConverterJSONWithSchema). The zero value, ConverterRaw, writes the
	// columns' text. The headers column's members are not converted.
	HeaderConverter Converter
	// EnvelopeColumns are placed beside the payload in the record's value,
	// named by EnvelopeNames (in the same order): the value is the JSON
	// object {"payload": …, name: column's value, …}, as Debezium's
	// outbox event router makes with table.fields.additional.placement's
	// envelope placements and JsonConverter. Needs ValueConverter
	// ConverterJSON, or ConverterJSONWithSchema with EnvelopeSchemaName.
	EnvelopeColumns, EnvelopeNames []string
	// EnvelopeSchemaName is the name of the envelope struct's Connect
	// schema under ConverterJSONWithSchema, a template of the row's
	// columns as TopicTemplate is: the router names it
	// <topic.prefix>.<schema>.<table>.<route.by.field's value>.Value, as
	// "server1.public.outboxevent.{aggregatetype}.Value" says. The router
	// keeps the first name it made for each payload schema until it
	// restarts, so its names are these only where each payload type has
	// one table routed one way. Needed with that converter and an
	// envelope; refused otherwise.
	EnvelopeSchemaName string
	// ExpandJSONPayload writes the payload column's JSON text as the
	// structure it holds, with the Connect schema inferred from it, as
	// Debezium's outbox event router does with table.expand.json.payload
	// and JsonConverter after it: {"id":123} rather than the string
	// "{\"id\": 123}". A text, varchar, char, json or jsonb payload that
	// the router would not expand (not starting with { or [, not JSON)
	// goes as the string it is; one it expands but cannot make a record of
	// (a number beyond 64 bits, a top-level array, an array whose elements
	// differ in type) is parked. Needs ValueConverter ConverterJSON or
	// ConverterJSONWithSchema.
	ExpandJSONPayload bool
	// JSONPayloadNullBehavior says what an expanded payload's nulls
	// become (the router's table.json.payload.null.behavior): left out by
	// default. Only with ExpandJSONPayload.
	JSONPayloadNullBehavior JSONNullBehavior
	// JSONPayloadEmptyArrayBehavior says what an expanded payload's empty
	// arrays become (the router's table.json.payload.empty.array.behavior,
	// Debezium 3.7 and later): left out by default. Only with
	// ExpandJSONPayload.
	JSONPayloadEmptyArrayBehavior JSONEmptyArrayBehavior
	// TombstoneOnEmptyPayload sends a row whose payload is NULL, or text
	// of blanks only, as a record with a null value (a tombstone), as the
	// router's route.tombstone.on.empty.payload does.
	TombstoneOnEmptyPayload bool
	// TracingSpanContextColumn holds the trace context of the transaction
	// that wrote the row: a W3C traceparent ("00-<trace id>-<span id>-
	// <flags>"), or Java properties text with traceparent and tracestate
	// lines, as the router's tracing.span.context.field holds it. Its
	// traceparent and tracestate become the record's headers of those
	// names, which consumers' OpenTelemetry instrumentation reads; a value
	// that holds no valid traceparent gives none. Optional.
	TracingSpanContextColumn string
	// PartitionColumn, an integer column (smallint, integer or bigint),
	// places each record on the partition its value names, as the
	// router's table.fields.additional.placement does with a partition
	// placement: a NULL leaves the record to the key's hash, as the
	// router's null partition does. A value beyond the topic's partitions
	// is refused: the event is parked, and sent when it is retried after
	// the topic has that partition. A negative one parks the event DEAD,
	// placed on partition -1, so that no retry sends it by its key's hash:
	// the row must be corrected and reset. Required when set.
	PartitionColumn string

	// NotNull are the table's columns declared NOT NULL, which
	// ConverterJSONWithSchema's schemas say are not optional, as
	// Debezium's do. Callers that decode with that converter read them
	// from the catalog (pg_attribute.attnotnull) when they start.
	NotNull []string

	// expect are the optional columns (OptionalColumns) that a table must
	// have to fit the mapping, as the required ones: set by Expecting.
	expect []string
}

// Expected lists the optional columns Expecting made expected, in the
// order of OptionalColumns.
func (m Mapping) Expected() []string { return slices.Clone(m.expect) }

// OptionalColumns lists the optional columns the mapping names, once each:
// the id, topic (unless routes take its place), headers, timestamp and
// tracing span context columns. A table that lacks one fits the mapping, and its events go
// without that part, unless Expecting made it expected.
func (m Mapping) OptionalColumns() []string {
	var cols []string
	topic := m.TopicColumn
	if len(m.Routes) > 0 {
		topic = ""
	}
	for _, c := range []string{m.IDColumn, topic, m.HeadersColumn, m.TimestampColumn, m.TracingSpanContextColumn} {
		if c != "" && !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	return cols
}

// Expecting returns m with each of its optional columns that has holds
// (the table's columns when a session starts) expected: a Relation without
// one of them does not fit the mapping, as one without a required column
// (MappingError.Missing), so that a column renamed or dropped while the
// relay runs parks the rows written without it instead of sending them
// without their id, to another topic, or without their headers or
// timestamp. The others stay optional. It shares no memory with m's
// expectations.
func (m Mapping) Expecting(has []string) Mapping {
	m.expect = nil
	for _, c := range m.OptionalColumns() {
		if slices.Contains(has, c) {
			m.expect = append(m.expect, c)
		}
	}
	return m
}

// Route sends the events whose tags match it to Topic. A route with both
// lists matches when both match.
type Route struct {
	// Topic is the topic the matching events go to.
	Topic string
	// RequiredTags match when every one of them is among the event's tags.
	RequiredTags []string
	// AnyOfTags match when at least one of them is among the event's tags.
	AnyOfTags []string
}

// DefaultMapping is the layout that `cdc-relay migrate` creates:
// public.outbox with the Debezium-like columns of docs/DESIGN.md.
func DefaultMapping() Mapping {
	return Mapping{
		Schema:          "public",
		Table:           "outbox",
		IDColumn:        "id",
		KeyColumn:       "aggregate_id",
		PayloadColumn:   "payload",
		TopicColumn:     "topic",
		HeadersColumn:   "headers",
		TimestampColumn: "created_at",
		HeaderColumns:   []string{"event_type", "aggregate_type", "aggregate_id"},
		TopicTemplate:   "outbox.event.{aggregate_type}",
	}
}

// ParseTable splits "schema.table" (or "table", meaning schema public).
func ParseTable(s string) (schema, table string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", "", fmt.Errorf("table name is empty")
	}
	schema, table, ok := strings.Cut(s, ".")
	if !ok {
		return "public", s, nil
	}
	if schema == "" || table == "" || strings.Contains(table, ".") {
		return "", "", fmt.Errorf("table %q: want schema.table", s)
	}
	return schema, table, nil
}

// templatePart is a literal, or a column reference when column is set.
type templatePart struct {
	literal string
	column  string
}

// TemplatePart is one part of a topic template, in order: a literal, or
// (Column set) a column whose text takes its place.
type TemplatePart struct {
	Literal, Column string
}

// TemplateParts returns the parts of m's TopicTemplate, in order, as the
// decoder renders a topic from them: none for an empty template.
func (m Mapping) TemplateParts() ([]TemplatePart, error) {
	parts, err := parseTemplate(m.TopicTemplate)
	out := make([]TemplatePart, len(parts))
	for i, p := range parts {
		out[i] = TemplatePart{Literal: p.literal, Column: p.column}
	}
	return out, err
}

// parseTemplate splits a topic template into literals and {column}
// references.
func parseTemplate(t string) ([]templatePart, error) {
	var parts []templatePart
	for t != "" {
		open := strings.IndexByte(t, '{')
		if open < 0 {
			parts = append(parts, templatePart{literal: t})
			break
		}
		if open > 0 {
			parts = append(parts, templatePart{literal: t[:open]})
		}
		end := strings.IndexByte(t[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("topic template %q: unclosed '{'", t)
		}
		col := t[open+1 : open+end]
		if col == "" {
			return nil, fmt.Errorf("topic template %q: empty {}", t)
		}
		parts = append(parts, templatePart{column: col})
		t = t[open+end+1:]
	}
	return parts, nil
}

// Validate checks the mapping for mistakes that can be found without the
// database: missing required roles and a malformed topic template.
func (m Mapping) Validate() error {
	if m.Schema == "" || m.Table == "" {
		return fmt.Errorf("mapping: table is not set")
	}
	if m.PayloadColumn == "" {
		return fmt.Errorf("mapping: payload column is not set")
	}
	if _, err := ParseTimestampUnit(string(m.TimestampUnit)); err != nil {
		return fmt.Errorf("mapping: %w", err)
	}
	if _, err := m.Location(); err != nil {
		return fmt.Errorf("mapping: %w", err)
	}
	for _, c := range []Converter{m.KeyConverter, m.ValueConverter, m.HeaderConverter} {
		if _, err := ParseConverter(string(c)); err != nil {
			return fmt.Errorf("mapping: %w", err)
		}
	}
	if err := m.validateEnvelope(); err != nil {
		return fmt.Errorf("mapping: %w", err)
	}
	if err := m.validateExpand(); err != nil {
		return fmt.Errorf("mapping: %w", err)
	}
	if m.KeyConverter != ConverterRaw && m.KeyColumn == "" {
		return fmt.Errorf("mapping: the key converter %s writes the key column, and none is set: set one, or leave the key converter out", m.KeyConverter)
	}
	if len(m.Routes) > 0 {
		if _, err := m.routes(); err != nil {
			return fmt.Errorf("mapping: %w", err)
		}
	} else if m.TopicTemplate == "" && m.TopicColumn == "" {
		return fmt.Errorf("mapping: set a topic template or a topic column")
	}
	if m.HeaderNames != nil && len(m.HeaderNames) != len(m.HeaderColumns) {
		return fmt.Errorf("mapping: %d header names for %d header columns", len(m.HeaderNames), len(m.HeaderColumns))
	}
	if _, err := parseTemplate(m.TopicTemplate); err != nil {
		return fmt.Errorf("mapping: %w", err)
	}
	if _, err := m.topicFilter(); err != nil {
		return fmt.Errorf("mapping: %w", err)
	}
	return nil
}

// validateEnvelope checks the envelope's columns and names.
func (m Mapping) validateEnvelope() error {
	if len(m.EnvelopeNames) != len(m.EnvelopeColumns) {
		return fmt.Errorf("%d envelope names for %d envelope columns", len(m.EnvelopeNames), len(m.EnvelopeColumns))
	}
	if len(m.EnvelopeColumns) == 0 {
		return nil
	}
	if err := m.validateEnvelopeSchema(); err != nil {
		return err
	}
	for i, n := range m.EnvelopeNames {
		if n == "payload" || slices.Contains(m.EnvelopeNames[:i], n) {
			return fmt.Errorf("envelope field %q is the payload's or named twice: name it otherwise", n)
		}
	}
	return nil
}

// validateEnvelopeSchema checks the converter of an envelope, and its
// schema's name with schemas.
func (m Mapping) validateEnvelopeSchema() error {
	switch m.ValueConverter {
	case ConverterJSON:
		if m.EnvelopeSchemaName != "" {
			return fmt.Errorf("envelope_schema_name names the envelope's schema, which the json value converter does not write: remove it, or use value_converter: json-with-schema")
		}
		return nil
	case ConverterJSONWithSchema:
		if m.EnvelopeSchemaName == "" {
			return fmt.Errorf("an envelope under value_converter json-with-schema needs envelope_schema_name, the name the router gives its schema: " +
				"<topic.prefix>.<schema>.<table>.{<route.by.field>}.Value, such as \"server1.public.outboxevent.{aggregatetype}.Value\" (cdc-relay config from-debezium writes it)")
		}
		if m.ExpandJSONPayload {
			return fmt.Errorf("expand_json_payload with an envelope under value_converter json-with-schema is not supported yet: " +
				"the router names each payload structure's envelope after the first row of it since the connector started")
		}
		if _, err := parseTemplate(m.EnvelopeSchemaName); err != nil {
			return fmt.Errorf("envelope_schema_name: %w", err)
		}
		return nil
	}
	return fmt.Errorf("envelope placement needs the json value converter (value_converter: json), as Debezium's router writes it with JsonConverter, "+
		"or json-with-schema with envelope_schema_name (value converter %s)", m.ValueConverter)
}

// validateExpand checks expand_json_payload and its behaviors.
func (m Mapping) validateExpand() error {
	if _, err := ParseJSONNullBehavior(string(m.JSONPayloadNullBehavior)); err != nil {
		return err
	}
	if _, err := ParseJSONEmptyArrayBehavior(string(m.JSONPayloadEmptyArrayBehavior)); err != nil {
		return err
	}
	if !m.ExpandJSONPayload {
		if m.JSONPayloadNullBehavior != JSONNullIgnore || m.JSONPayloadEmptyArrayBehavior != JSONEmptyArrayIgnore {
			return fmt.Errorf("json_payload_null_behavior and json_payload_empty_array_behavior say what an expanded payload's nulls and empty arrays become: " +
				"set expand_json_payload: true, or leave them out")
		}
		return nil
	}
	if m.ValueConverter != ConverterJSON && m.ValueConverter != ConverterJSONWithSchema {
		return fmt.Errorf("expand_json_payload needs the json or json-with-schema value converter (value converter %s): the router's expanded payload is a Kafka Connect struct, "+
			"which JsonConverter writes as JSON, while StringConverter writes Java's Struct{...} text of it and ByteArrayConverter refuses it; "+
			"set value_converter: json (or json-with-schema), as the connector's value.converter", m.ValueConverter)
	}
	return nil
}

// CheckColumns reports whether a table with these columns (names and type
// OIDs, in order) fits the mapping, as the decoder would find in a Relation
// message: nil, or a *MappingError that says why not.
func (m Mapping) CheckColumns(names []string, types []uint32) error {
	d, err := New(m)
	if err != nil {
		return err
	}
	if me := resolve(d.tables[0], &relation{ncols: len(names)}, names, types); me != nil {
		me.Table = m.Schema + "." + m.Table
		return me
	}
	return nil
}

// TopicCheck returns the check every topic the relay writes must pass, the
// stream's and the poller's alike: a legal Kafka topic name that
// AllowedTopics allows. The check says why a topic fails, or returns nil.
// It returns an error when AllowedTopics is not a regular expression.
func (m Mapping) TopicCheck() (func(topic string) error, error) {
	allowed, err := m.topicFilter()
	if err != nil {
		return nil, err
	}
	return func(topic string) error {
		if err := ValidTopic(topic); err != nil {
			return err
		}
		if err := ReservedTopic(topic, m.ReservedTopics); err != nil {
			return err
		}
		return allowed(topic)
	}, nil
}

// ReservedTopic says why no event may go to topic, or returns nil: a
// topic of Kafka's own (one that starts with "__", such as
// __consumer_offsets and __transaction_state), whatever --allowed-topics
// allows, or one of reserved, the relay's own topics.
func ReservedTopic(topic string, reserved []string) error {
	if strings.HasPrefix(topic, "__") {
		return fmt.Errorf(`topic %q is not allowed: a topic that starts with "__" is Kafka's own, whatever --allowed-topics allows`, topic)
	}
	for _, r := range reserved {
		if topic == r {
			return fmt.Errorf("topic %q is not allowed: it is the relay's own (its checkpoint topic or its dead-letter topic), and an event's record there would corrupt it; send the event to another topic", topic)
		}
	}
	return nil
}

// topicFilter returns the check of AllowedTopics: it says why a topic is
// not allowed, or returns nil.
func (m Mapping) topicFilter() (func(topic string) error, error) {
	pattern := m.AllowedTopics
	if pattern == "" {
		return func(topic string) error {
			if strings.HasPrefix(topic, "_") || strings.HasPrefix(topic, "connect-") {
				return fmt.Errorf(`topic %q is not allowed: by default no topic may start with "_" or "connect-" (Kafka's and its tools' own topics); --allowed-topics sets which topics are`, topic)
			}
			return nil
		}, nil
	}
	// Compiled alone first: balanced on its own, the pattern cannot escape
	// the anchors around it.
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, fmt.Errorf("--allowed-topics %q is not a Go regular expression: %w", pattern, err)
	}
	re := regexp.MustCompile(`^(?:` + pattern + `)$`)
	return func(topic string) error {
		if !re.MatchString(topic) {
			return fmt.Errorf("topic %q is not allowed: it does not match --allowed-topics %q", topic, pattern)
		}
		return nil
	}, nil
}

// maxTopicLen is the longest topic name Kafka allows.
const maxTopicLen = 249

// ValidTopic reports why name is not a legal Kafka topic name, or nil.
// Kafka allows 1 to 249 characters of [a-zA-Z0-9._-], except "." and "..".
func ValidTopic(name string) error {
	if name == "" {
		return fmt.Errorf("topic name is empty")
	}
	if len(name) > maxTopicLen {
		return fmt.Errorf("topic name is longer than Kafka allows: %d characters, the limit is %d", len(name), maxTopicLen)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("topic name %q is not allowed", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q has illegal character %q (Kafka allows [a-zA-Z0-9._-])", name, c)
		}
	}
	return nil
}

// Columns lists every column of the table the mapping reads, once each,
// in the order of Mapping's fields (the topic template's inputs after the
// header columns; with routes, the tags column instead of the topic
// column): a row published without one of them is decoded without it (an
// optional column) or parked (a required one).
func (m Mapping) Columns() []string {
	var cols []string
	add := func(c string) {
		if c != "" && !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	topic := m.TopicColumn
	if len(m.Routes) > 0 {
		topic = m.TagsColumn
	}
	for _, c := range []string{m.IDColumn, m.KeyColumn, m.PayloadColumn, topic, m.HeadersColumn, m.TimestampColumn} {
		add(c)
	}
	for _, c := range slices.Concat(m.HeaderColumns, m.EnvelopeColumns, []string{m.TracingSpanContextColumn, m.PartitionColumn}) {
		add(c)
	}
	parts, _ := parseTemplate(m.TopicTemplate) // Validate refuses a malformed one
	named, _ := parseTemplate(m.EnvelopeSchemaName)
	for _, p := range slices.Concat(parts, named) {
		add(p.column)
	}
	return cols
}

// Location is the zone TimeZone names, UTC when it is "", or an error
// that says the name is not one of the IANA time zone database's.
func (m Mapping) Location() (*time.Location, error) {
	if m.TimeZone == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(m.TimeZone)
	if err != nil || m.TimeZone == "Local" {
		return nil, fmt.Errorf("time zone %q is not a zone of the IANA time zone database: name one such as America/New_York, Europe/Berlin or UTC", m.TimeZone)
	}
	return loc, nil
}
