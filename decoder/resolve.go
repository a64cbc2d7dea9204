package decoder

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PostgreSQL type OIDs the decoder checks column types against.
const (
	oidBytea       = 17
	oidInt8        = 20
	oidTimestamp   = 1114
	oidTimestamptz = 1184
)

// relation is a cached Relation message, resolved against its table's
// mapping when it names a mapped table.
type relation struct {
	t     *table // nil: not a mapped table
	ncols int
	// Column indexes by role; -1 when the table lacks the column.
	id, key, payload, topic, headers, ts, tags int
	tsType, tagsType                           uint32
	// keyBytes and payloadBytes say the key or payload column is bytea:
	// its text form (\x and hex) is decoded to the bytes themselves.
	keyBytes, payloadBytes bool
	// keyConv and payloadConv write the key and payload as the mapping's
	// converters say.
	keyConv, payloadConv converting
	// idConv and headerConvs write the id header and the header columns'
	// headers (headerConvs[i] is headerCols[i]'s), as the mapping's
	// HeaderConverter says; convertsHeaders says it is not raw.
	idConv          converting
	headerConvs     []converting
	traceConv       converting // the trace headers', Connect's STRING_SCHEMA
	convertsHeaders bool
	// envelope are the columns placed beside the payload in the value;
	// envelopeSchema, with schemas, what the value's schema is.
	envelope       []envelopeField
	envelopeSchema *envelopeSchema
	// expand expands the payload's JSON (Mapping.ExpandJSONPayload), nil
	// when the mapping does not or the payload column's type is not text
	// (the router expands a Java string only).
	expand *expander
	// trace is the tracing span context column, -1 without.
	trace int
	// partition is the partition column (Mapping.PartitionColumn), -1
	// without.
	partition int
	// shapes says the record's key or value is more than the columns'
	// bytes: converted, a tombstone, or an envelope (shape).
	shapes       bool
	headerCols   []int
	headerNames  []string
	template     []templatePart // column parts resolved in templateCols
	templateCols []int
	// poison, when set, is the reason every row of the relation is parked:
	// its columns did not fit the mapping. noTopic says the rows lack a
	// required column: their parked copies get no topic.
	poison  error
	noTopic bool
	// kept are the distinct columns whose bytes an event keeps (id, key,
	// payload, header columns): only these are copied out of the message.
	kept []int
}

// poisonOf is the reason each row of an unfit relation is parked with.
func poisonOf(me *MappingError) error {
	if me.Timestamp {
		return fmt.Errorf("%w; the parked copy has every part of the record but its timestamp: "+
			"it is parked FAILED, and the poller sends it with the time of delivery as its timestamp", me)
	}
	if me.Missing != "" {
		return fmt.Errorf("%w; the row is still in the outbox table: publish it again from there (`cdc-relay recover --since TIME`). "+
			"Its parked copy has no topic, so that `cdc-relay failed retry` cannot deliver it without the column", me)
	}
	return fmt.Errorf("%w; the row is still in the outbox table: publish it again from there (`cdc-relay recover --since TIME`)", me)
}

// roleFlags names the flag of `cdc-relay run` that maps each required role.
var roleFlags = map[string]string{
	"record key":                  "--key-column, or key: in a config file",
	"payload":                     "--payload-column, or value: in a config file",
	"header column":               "--header-columns, or headers: in a config file",
	"topic template input":        "--topic-template, or topic: in a config file",
	"tags column":                 "tags_column: in the config file",
	"event id":                    "--id-column, or id: in a config file; --id-column '' for none",
	"topic column":                "--topic-column, or topic_column: in a config file; --topic-column '' for none",
	"headers column":              "--headers-column, or headers_column: in a config file; --headers-column '' for none",
	"timestamp column":            "--timestamp-column, or timestamp: in a config file; --timestamp-column '' for none",
	"tracing span context column": "tracing_span_context: in the config file",
	"partition column":            "partition: in the config file",
}

// resolve maps the roles of t's mapping onto the relation's columns. Every
// role is resolved, also after a problem; the first problem is returned.
func resolve(t *table, rel *relation, names []string, types []uint32) *MappingError {
	m := &t.m
	index := func(col string) int {
		if col == "" {
			return -1
		}
		for i, n := range names {
			if n == col {
				return i
			}
		}
		return -1
	}
	var first *MappingError
	need := func(role, col string) int {
		i := index(col)
		if i < 0 && first == nil {
			first = &MappingError{Missing: col, Err: fmt.Errorf(
				"has no column %q (the %s): rename the column back, or map the column that holds it (%s)",
				col, role, roleFlags[role])}
		}
		return i
	}
	rel.t = t
	rel.key = index(m.KeyColumn)
	if m.KeyColumn != "" {
		rel.key = need("record key", m.KeyColumn)
	}
	rel.payload = need("payload", m.PayloadColumn)
	rel.keyBytes = rel.key >= 0 && types[rel.key] == oidBytea
	rel.payloadBytes = rel.payload >= 0 && types[rel.payload] == oidBytea
	if me := resolveConverters(m, rel, names, types); me != nil && first == nil {
		first = me
	}
	// An optional column the table had when the session started must
	// still be there: a row without it would go out without its id, to
	// another topic, or without its headers or timestamp, silently.
	optional := func(role, col string) int {
		if col != "" && slices.Contains(m.expect, col) {
			return need(role, col)
		}
		return index(col)
	}
	rel.id = optional("event id", m.IDColumn)
	rel.topic = index(m.TopicColumn)
	if len(t.routes) == 0 {
		rel.topic = optional("topic column", m.TopicColumn)
	}
	rel.headers = optional("headers column", m.HeadersColumn)
	rel.trace = optional("tracing span context column", m.TracingSpanContextColumn)
	rel.partition = -1
	if m.PartitionColumn != "" {
		rel.partition = need("partition column", m.PartitionColumn)
		if rel.partition >= 0 && !integerType(types[rel.partition]) && first == nil {
			first = &MappingError{Err: fmt.Errorf("partition column %q has type %s; want smallint, integer or bigint (the router takes an integer)",
				m.PartitionColumn, typeName(types[rel.partition]))}
		}
	}
	rel.ts = index(m.TimestampColumn)
	for i, h := range m.HeaderColumns {
		rel.headerCols = append(rel.headerCols, need("header column", h))
		name := h
		if m.HeaderNames != nil {
			name = m.HeaderNames[i]
		}
		rel.headerNames = append(rel.headerNames, name)
	}
	if me := resolveHeaderConverters(m, rel, types); me != nil && first == nil {
		first = me
	}
	rel.template = t.template
	rel.templateCols = make([]int, len(t.template))
	for p, part := range t.template {
		rel.templateCols[p] = -1
		if part.column != "" {
			rel.templateCols[p] = need("topic template input", part.column)
		}
	}
	rel.tags = index(m.TagsColumn)
	if len(t.routes) > 0 {
		rel.tags = need("tags column", m.TagsColumn)
		if rel.tags >= 0 {
			rel.tagsType = types[rel.tags]
			if !tagsType(rel.tagsType) && first == nil {
				first = &MappingError{Err: fmt.Errorf("tags column %q has type %s; want text[], varchar[], jsonb or json", m.TagsColumn, typeName(rel.tagsType))}
			}
		}
	} else if rel.topic < 0 && len(t.template) == 0 && first == nil {
		first = &MappingError{Missing: m.TopicColumn, Err: fmt.Errorf(
			"has no topic column %q and the topic template is empty: rename the column back, or map it with --topic-column", m.TopicColumn)}
	}
	if first == nil {
		first = resolveTimestamp(m, rel, types)
	} else if rel.ts >= 0 {
		rel.tsType = types[rel.ts]
		if !usableTimestamp(rel.tsType) {
			rel.ts = -1
		}
	}
	// The topic, template, timestamp, headers and envelope columns are read
	// during Decode only (the topic is interned, the rest parsed into new
	// values); the trace column's bytes are kept in headers.
	for _, i := range append([]int{rel.id, rel.key, rel.payload, rel.trace}, rel.headerCols...) {
		if i >= 0 && !slices.Contains(rel.kept, i) {
			rel.kept = append(rel.kept, i)
		}
	}
	return first
}

// resolveConverters resolves the key and payload converters against
// their columns' types, and says why a column cannot be written so.
func resolveConverters(m *Mapping, rel *relation, names []string, types []uint32) *MappingError {
	var err error
	if rel.key >= 0 {
		if rel.keyConv, err = resolveConverter(m.KeyConverter, "key", m.KeyColumn, types[rel.key], slices.Contains(m.NotNull, m.KeyColumn)); err != nil {
			return &MappingError{Err: err}
		}
	}
	if rel.payload >= 0 {
		if rel.payloadConv, err = resolveConverter(m.ValueConverter, "payload", m.PayloadColumn, types[rel.payload], slices.Contains(m.NotNull, m.PayloadColumn)); err != nil {
			return &MappingError{Err: err}
		}
	}
	rel.expand = nil
	if m.ExpandJSONPayload && rel.payload >= 0 && rel.payloadConv.c != ConverterRaw && rel.payloadConv.t.typ == "string" {
		rel.expand = newExpander(m.PayloadColumn, m)
	}
	if me := resolveEnvelope(m, rel, names, types); me != nil {
		return me
	}
	rel.shapes = rel.keyConv.c != ConverterRaw || rel.payloadConv.c != ConverterRaw || len(rel.envelope) > 0 || m.TombstoneOnEmptyPayload
	return nil
}

// resolveEnvelope resolves the envelope's columns, and with schemas its
// schema (envelopeSchema), against the table's columns.
func resolveEnvelope(m *Mapping, rel *relation, names []string, types []uint32) *MappingError {
	rel.envelope, rel.envelopeSchema = nil, nil
	schemas := m.ValueConverter == ConverterJSONWithSchema && len(m.EnvelopeColumns) > 0
	var fields []string // with schemas, each field's schema
	if schemas && rel.payload >= 0 {
		fields = append(fields, fieldSchema(rel.payloadConv.t, !slices.Contains(m.NotNull, m.PayloadColumn), "payload"))
	}
	for i, col := range m.EnvelopeColumns {
		at := columnAt(names, col)
		if at < 0 {
			return &MappingError{Missing: col, Err: fmt.Errorf("has no column %q (envelope field %q): rename the column back, or place another (envelope: in the config file)", col, m.EnvelopeNames[i])}
		}
		conv, err := resolveConverter(ConverterJSON, "envelope", col, types[at], false)
		if err != nil {
			return &MappingError{Err: err}
		}
		rel.envelope = append(rel.envelope, envelopeField{name: m.EnvelopeNames[i], col: at, conv: conv})
		if schemas {
			fields = append(fields, fieldSchema(conv.t, !slices.Contains(m.NotNull, col), m.EnvelopeNames[i]))
		}
	}
	if !schemas || rel.payload < 0 {
		return nil
	}
	es := &envelopeSchema{head: []byte(`{"schema":{"type":"struct","fields":[` + strings.Join(fields, ",") + `],"optional":false,"name":`)}
	es.payload, _ = resolveConverter(ConverterJSON, "payload", m.PayloadColumn, types[rel.payload], false) // resolved as json-with-schema above
	es.name, _ = parseTemplate(m.EnvelopeSchemaName)                                                       // Validate refuses a malformed one
	for _, p := range es.name {
		at := -1
		if p.column != "" {
			if at = columnAt(names, p.column); at < 0 {
				return &MappingError{Missing: p.column, Err: fmt.Errorf("has no column %q (of envelope_schema_name %q): rename the column back, or name the schema otherwise", p.column, m.EnvelopeSchemaName)}
			}
		}
		es.cols = append(es.cols, at)
	}
	rel.envelopeSchema = es
	return nil
}

// columnAt is the position of col among names, -1 when absent.
func columnAt(names []string, col string) int {
	if col == "" {
		return -1
	}
	return slices.Index(names, col)
}

// resolveHeaderConverters resolves the header converter against the id
// and header columns' types (a header column the table lacks is resolved
// by need), and says why a column cannot be written so.
func resolveHeaderConverters(m *Mapping, rel *relation, types []uint32) *MappingError {
	rel.idConv, rel.headerConvs, rel.convertsHeaders = converting{}, nil, m.HeaderConverter != ConverterRaw
	if !rel.convertsHeaders {
		return nil
	}
	var err error
	// The router adds traceparent and tracestate as Connect strings of a
	// schema that is not optional, which the header converter writes.
	if rel.traceConv, err = resolveConverter(m.HeaderConverter, "trace", m.TracingSpanContextColumn, oidText, true); err != nil {
		return &MappingError{Err: err}
	}
	noBytea := func(col string, oid uint32) *MappingError {
		if oid != oidBytea {
			return nil
		}
		return &MappingError{Err: fmt.Errorf("header column %q is bytea, whose text (\\x and hex) the header converter %s would write: "+
			"use header_converter raw, or a column of another type", col, m.HeaderConverter)}
	}
	if rel.id >= 0 {
		if me := noBytea(m.IDColumn, types[rel.id]); me != nil {
			return me
		}
		if rel.idConv, err = resolveConverter(m.HeaderConverter, "id", m.IDColumn, types[rel.id], slices.Contains(m.NotNull, m.IDColumn)); err != nil {
			return &MappingError{Err: err}
		}
	}
	for i, c := range rel.headerCols {
		var conv converting
		if c >= 0 {
			col := m.HeaderColumns[i]
			if me := noBytea(col, types[c]); me != nil {
				return me
			}
			if conv, err = resolveConverter(m.HeaderConverter, "header", col, types[c], slices.Contains(m.NotNull, col)); err != nil {
				return &MappingError{Err: err}
			}
		}
		rel.headerConvs = append(rel.headerConvs, conv)
	}
	return nil
}

// resolveTimestamp resolves the relation's timestamp column's type, and
// says why the column does not fit when it does not: expected and missing,
// or of a type the mapping cannot use (the record is whole but for its
// timestamp, MappingError.Timestamp).
func resolveTimestamp(m *Mapping, rel *relation, types []uint32) *MappingError {
	if rel.ts < 0 {
		if m.TimestampColumn == "" || !slices.Contains(m.expect, m.TimestampColumn) {
			return nil
		}
		return &MappingError{Missing: m.TimestampColumn, Timestamp: true, Err: fmt.Errorf(
			"has no column %q (the timestamp column): the rows written meanwhile are sent by the poller with the time of delivery; "+
				"rename the column back, or map the column that holds it (%s)", m.TimestampColumn, roleFlags["timestamp column"])}
	}
	rel.tsType = types[rel.ts]
	if usableTimestamp(rel.tsType) {
		return nil
	}
	rel.ts = -1
	return &MappingError{Timestamp: true, Err: fmt.Errorf(
		"timestamp column %q has type %s; want timestamptz, timestamp or bigint (epoch seconds, milliseconds or microseconds: timestamp_unit): "+
			"the rows written meanwhile are sent by the poller with the time of delivery; for later rows to carry theirs, "+
			"change its type back, or map another column with --timestamp-column (--timestamp-column '' for none)",
		m.TimestampColumn, typeName(rel.tsType))}
}

// usableTimestamp says whether a timestamp column of type oid can be read.
func usableTimestamp(oid uint32) bool {
	return oid == oidTimestamptz || oid == oidTimestamp || oid == oidInt8
}

// typeName names the types a timestamp column is likely to be changed to.
// integerType reports whether oid is smallint, integer or bigint: the
// types a partition column may have.
func integerType(oid uint32) bool {
	return oid == oidInt2 || oid == oidInt4 || oid == oidInt8
}

func typeName(oid uint32) string {
	switch oid {
	case 16:
		return "boolean"
	case 21:
		return "smallint"
	case 23:
		return "integer"
	case 25:
		return "text"
	case 700:
		return "real"
	case 701:
		return "double precision"
	case 1043:
		return "character varying"
	case 1082:
		return "date"
	case 1083:
		return "time"
	case 1266:
		return "time with time zone"
	case 1700:
		return "numeric"
	}
	return "oid " + strconv.FormatUint(uint64(oid), 10)
}
