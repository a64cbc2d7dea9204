package decoder

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
)

// envelopeField is a column placed beside the payload in the value.
type envelopeField struct {
	name string
	col  int
	conv converting
}

// envelopeSchema is what an envelope's value is with schemas
// (ConverterJSONWithSchema): head opens it, up to the struct schema's
// name, which name's parts make of the row's columns (cols, -1 for a
// literal part); payload writes the payload within the envelope, as JSON
// without a schema of its own.
type envelopeSchema struct {
	head    []byte
	name    []templatePart
	cols    []int
	payload converting
}

// fieldSchema is the Connect schema of a struct's field of type t, named
// field, as JsonConverter writes it.
func fieldSchema(t connectType, optional bool, field string) string {
	s := fmt.Sprintf(`{"type":%q,"optional":%t`, t.typ, optional)
	if t.name != "" {
		s += fmt.Sprintf(`,"name":%q,"version":1`, t.name)
	}
	return s + `,"field":` + string(appendJSONString(nil, []byte(field))) + `}`
}

// shape makes the record's key and value of a relation whose mapping
// converts them, places columns in an envelope, or sends tombstones
// (relation.shapes): ev's Key and Value are the columns' bytes on entry.
// The error says why the row cannot be a record (an expanded payload the
// router fails on): its value is then left as the column's.
func (rel *relation) shape(ev *Event, r *row) error {
	if rel.keyConv.c != ConverterRaw {
		ev.Key = rel.keyConv.convert(ev.Key, r.col(rel.key).null)
	}
	null := r.col(rel.payload).null
	var (
		v   []byte
		err error
	)
	switch {
	case rel.t.m.TombstoneOnEmptyPayload && (null || !rel.payloadBytes && blank(ev.Value)):
	case len(rel.envelope) > 0:
		v, err = rel.envelopeValue(ev.Value, null, r)
	case rel.expand != nil && !null:
		v, err = rel.expandedValue(nil, ev.Value, 0)
	case rel.payloadConv.c != ConverterRaw:
		v = rel.payloadConv.convert(ev.Value, null)
	default:
		v = ev.Value
	}
	if err != nil {
		return err
	}
	ev.Value = v
	return nil
}

// convertHeaders writes the id header (the first of hs when hasID) and
// the header columns' headers after it as the mapping's HeaderConverter
// says, as Kafka Connect's header.converter writes the router's headers.
func (rel *relation) convertHeaders(hs []Header, r *row, hasID bool) {
	if hasID {
		hs[0].Value = rel.idConv.convert(hs[0].Value, false)
		hs = hs[1:]
	}
	for i, c := range rel.headerCols {
		col := r.col(c)
		hs[i].Value = rel.headerConvs[i].convert(col.data, col.null)
	}
}

// envelopeValue is the JSON object of the payload and the envelope's
// columns, in the mapping's order, as JsonConverter writes the router's
// envelope struct.
func (rel *relation) envelopeValue(payload []byte, null bool, r *row) ([]byte, error) {
	out := make([]byte, 0, len(payload)+64)
	payloadConv := rel.payloadConv
	if es := rel.envelopeSchema; es != nil {
		out = append(out, es.head...)
		var name []byte
		for i, p := range es.name {
			if es.cols[i] < 0 {
				name = append(name, p.literal...)
				continue
			}
			c := r.col(es.cols[i])
			if c.null {
				return nil, fmt.Errorf("column %q of envelope_schema_name is NULL: the router routes no such row (route.by.field), and the relay names no schema of it", p.column)
			}
			name = append(name, c.data...)
		}
		out = append(appendJSONString(out, name), `},"payload":`...)
		payloadConv = es.payload
	}
	out = append(out, `{"payload":`...)
	if rel.expand != nil && !null {
		var err error
		if out, err = rel.expandedValue(out, payload, 1); err != nil {
			return nil, err
		}
	} else {
		out = append(out, payloadConv.convert(payload, null)...)
	}
	for _, f := range rel.envelope {
		out = append(out, ',')
		out = appendJSONString(out, []byte(f.name))
		out = append(out, ':')
		c := r.col(f.col)
		out = append(out, f.conv.convert(c.data, c.null)...)
	}
	if rel.envelopeSchema != nil {
		out = append(out, '}')
	}
	return append(out, '}'), nil
}

// expandedValue appends to dst what JsonConverter writes of the payload
// text once the router expanded it (Mapping.ExpandJSONPayload), depth
// levels deep in the record's value (1 in an envelope): the structure, or
// the string when the router does not expand it. The error says why the
// router cannot make a record of it.
func (rel *relation) expandedValue(dst, text []byte, depth int) ([]byte, error) {
	x := rel.expand
	defer x.release()
	schemas := rel.payloadConv.c == ConverterJSONWithSchema
	e, err := x.expand(text)
	switch {
	case err == errNotExpanded && dst == nil:
		return rel.payloadConv.convert(text, false), nil
	case err == errNotExpanded:
		return append(dst, rel.payloadConv.convert(text, false)...), nil
	case err == nil && e.schema == nil && depth > 0:
		err = fails("the payload is an empty JSON array, whose schema the router leaves null, which its envelope cannot hold (it throws)")
	case err == nil && e.schema == nil:
		// A top-level empty array: the router gives up after it replaced
		// the schema with none, and passes the string.
		if dst == nil {
			dst = make([]byte, 0, len(text)+len(text)/8+32)
		}
		if schemas {
			dst = append(dst, `{"schema":null,"payload":`...)
		}
		dst = appendJSONString(dst, text)
		if schemas {
			dst = append(dst, '}')
		}
		return dst, nil
	case err == nil:
		if dst == nil {
			dst = make([]byte, 0, len(text)+len(text)/4+32)
		}
		if dst, err = e.appendTo(dst, schemas, depth); err == nil {
			return dst, nil
		}
	}
	return nil, fmt.Errorf("payload column %q: Debezium's outbox event router expands this JSON payload (expand_json_payload, its table.expand.json.payload) "+
		"but cannot make a record of it: %w; the connector's task would stop there, the relay parks the row. "+
		"Correct the row's payload in the outbox table and `cdc-relay failed retry` the event, or relay the table without expand_json_payload "+
		"(the payload then goes as a JSON string)",
		rel.t.m.PayloadColumn, err)
}

// blank says whether text is empty once Java's String.trim has cut the
// characters up to U+0020 at both ends: the router's empty payload.
func blank(text []byte) bool {
	for _, c := range text {
		if c > ' ' {
			return false
		}
	}
	return true
}

// convertTraceHeaders writes the trace headers appendTraceHeaders put
// (hs) as the mapping's HeaderConverter says, as a worker's header
// converter writes the router's.
func (rel *relation) convertTraceHeaders(hs []Header) {
	for i := range hs {
		hs[i].Value = rel.traceConv.convert(hs[i].Value, false)
	}
}

// appendTraceHeaders puts the traceparent and tracestate headers that a
// tracing span context column's value gives first among hs, as the
// router's tracing writes them before its own headers, in place of ones
// of those names (the headers column's), so that the record carries each
// name once: a W3C traceparent, or Java properties text with traceparent
// (and tracestate) entries. It changes nothing when the value holds no
// valid traceparent. n is how many it put (0, 1 or 2), first in hs.
func appendTraceHeaders(hs []Header, value []byte) (_ []Header, n int) {
	value = bytes.TrimSpace(value)
	parent, state := value, []byte(nil)
	if !validTraceparent(value) {
		parent = nil
		for line := range bytes.Lines(value) {
			k, v, ok := propertyEntry(line)
			switch {
			case !ok:
			case k == "traceparent":
				parent = v
			case k == "tracestate":
				state = v
			}
		}
		if !validTraceparent(parent) {
			return hs, 0
		}
	}
	hs = slices.DeleteFunc(hs, func(h Header) bool { return h.Key == "traceparent" || h.Key == "tracestate" && len(state) > 0 })
	if len(state) > 0 {
		hs = slices.Insert(hs, 0, Header{Key: "tracestate", Value: state})
		n++
	}
	return slices.Insert(hs, 0, Header{Key: "traceparent", Value: parent}), n + 1
}

// propertyEntry reads a line of Java properties text: key=value,
// key:value or key value, spaces around the separator cut; ok is false
// for a blank line or a comment (# or !). Escapes are not read: neither
// traceparent nor tracestate has a character Java escapes.
func propertyEntry(line []byte) (key string, value []byte, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] == '#' || line[0] == '!' {
		return "", nil, false
	}
	i := bytes.IndexAny(line, "=: \t")
	if i < 0 {
		return string(line), nil, true
	}
	k := line[:i]
	rest := bytes.TrimLeft(line[i:], " \t")
	if len(rest) > 0 && (rest[0] == '=' || rest[0] == ':') {
		rest = bytes.TrimLeft(rest[1:], " \t")
	}
	return string(k), rest, true
}

// validTraceparent says whether v is a W3C traceparent of version 00:
// 00-<32 hex trace id, not all zero>-<16 hex parent id, not all zero>-<2 hex flags>.
func validTraceparent(v []byte) bool {
	if len(v) != 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' || string(v[:2]) != "00" {
		return false
	}
	for _, part := range [][]byte{v[3:35], v[36:52], v[53:55]} {
		if !lowerHex(part) {
			return false
		}
	}
	return !allZero(v[3:35]) && !allZero(v[36:52])
}

// lowerHex says whether b is lower-case hexadecimal digits only.
func lowerHex(b []byte) bool {
	if _, err := hex.DecodeString(string(b)); err != nil {
		return false
	}
	return !bytes.ContainsAny(b, "ABCDEF")
}

// allZero says whether b is zeros only.
func allZero(b []byte) bool { return len(bytes.Trim(b, "0")) == 0 }
