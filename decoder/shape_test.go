package decoder

import (
	"slices"
	"strings"
	"testing"
)

// TestShapeEnvelopeAndTombstone: envelope fields follow the payload in
// the value, each as JsonConverter writes its column; a NULL or blank
// payload is a tombstone with tombstone_on_empty_payload, and "null"
// without it.
func TestShapeEnvelopeAndTombstone(t *testing.T) {
	base := DefaultMapping()
	base.ValueConverter = ConverterJSON
	envelope := base
	envelope.EnvelopeNames, envelope.EnvelopeColumns = []string{"eventType", "aggregate"}, []string{"event_type", "aggregate_type"}
	tombstone := envelope
	tombstone.TombstoneOnEmptyPayload = true
	schemas := envelope
	schemas.ValueConverter, schemas.EnvelopeSchemaName = ConverterJSONWithSchema, "srv.public.outbox.{aggregate_type}.Value"
	schemas.NotNull = []string{"event_type"}
	const fields = `[{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1,"field":"payload"},` +
		`{"type":"string","optional":false,"field":"eventType"},{"type":"string","optional":true,"field":"aggregate"}]`
	row := func(payload []byte, eventType []byte) [][]byte {
		return [][]byte{[]byte("2e9b7c1a-5d3f-4a8e-9b6c-1f0e2d3c4b5a"), []byte("order"), []byte("1"), eventType, nil, payload, nil, nil}
	}
	for _, c := range []struct {
		name    string
		m       Mapping
		payload []byte
		typ     []byte
		want    string // "<nil>" for a nil value
	}{
		{"envelope", envelope, []byte(`{"id": 1}`), []byte("OrderCreated"), `{"payload":"{\"id\": 1}","eventType":"OrderCreated","aggregate":"order"}`},
		{"envelope, a NULL field", envelope, []byte(`{"id": 1}`), nil, `{"payload":"{\"id\": 1}","eventType":null,"aggregate":"order"}`},
		{"envelope, a NULL payload", envelope, nil, []byte("OrderDeleted"), `{"payload":null,"eventType":"OrderDeleted","aggregate":"order"}`},
		{"tombstone, a NULL payload", tombstone, nil, []byte("OrderDeleted"), "<nil>"},
		{"tombstone, a payload", tombstone, []byte(`{}`), []byte("OrderCreated"), `{"payload":"{}","eventType":"OrderCreated","aggregate":"order"}`},
		{"no tombstone without the setting", base, nil, []byte("OrderDeleted"), "null"},
		{"envelope with schemas", schemas, []byte(`{"id": 1}`), []byte("OrderCreated"),
			`{"schema":{"type":"struct","fields":` + fields + `,"optional":false,"name":"srv.public.outbox.order.Value"},` +
				`"payload":{"payload":"{\"id\": 1}","eventType":"OrderCreated","aggregate":"order"}}`},
		{"envelope with schemas, a NULL payload", schemas, nil, []byte("OrderDeleted"),
			`{"schema":{"type":"struct","fields":` + fields + `,"optional":false,"name":"srv.public.outbox.order.Value"},` +
				`"payload":{"payload":null,"eventType":"OrderDeleted","aggregate":"order"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := New(c.m)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := d.Rows(names(outboxCols), types(outboxCols))
			if err != nil {
				t.Fatal(err)
			}
			msg := rows.Decode(row(c.payload, c.typ), 1)
			if msg.Poison != nil {
				t.Fatal(msg.Poison)
			}
			got := string(msg.Event.Value)
			if msg.Event.Value == nil {
				got = "<nil>"
			}
			if got != c.want {
				t.Errorf("value %s\nwant  %s", got, c.want)
			}
		})
	}
}

func TestBlankAsJavaTrim(t *testing.T) {
	for in, want := range map[string]bool{"": true, " \t\r\n": true, "\x00\x1f ": true, " x ": false, "\u00a0": false} {
		if got := blank([]byte(in)); got != want {
			t.Errorf("blank(%q) = %t, want %t", in, got, want)
		}
	}
}

func TestEnvelopeNeedsTheJSONConverter(t *testing.T) {
	m := DefaultMapping()
	m.EnvelopeNames, m.EnvelopeColumns = []string{"eventType"}, []string{"event_type"}
	for _, c := range []Converter{ConverterRaw, ConverterString} {
		m.ValueConverter = c
		if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "value_converter: json") {
			t.Errorf("envelope with the %s converter: %v", c, err)
		}
	}
	m.ValueConverter = ConverterJSONWithSchema
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "envelope_schema_name") {
		t.Errorf("envelope with schemas, no envelope_schema_name: %v", err)
	}
	m.EnvelopeSchemaName = "srv.public.outbox.{aggregate_type}.Value"
	if err := m.Validate(); err != nil {
		t.Errorf("envelope with schemas and envelope_schema_name: %v", err)
	}
	m.ExpandJSONPayload = true
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "expand_json_payload") {
		t.Errorf("envelope with schemas and expand_json_payload: %v", err)
	}
	m.ExpandJSONPayload, m.ValueConverter = false, ConverterJSON
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "envelope_schema_name") {
		t.Errorf("envelope_schema_name without schemas: %v", err)
	}
	m.EnvelopeSchemaName = ""

	m.ValueConverter = ConverterJSON
	m.EnvelopeNames = []string{"payload"}
	if err := m.Validate(); err == nil {
		t.Error("an envelope field named payload passed")
	}
}

func TestTraceHeaders(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct {
		name, value string
		want        []string // key=value
	}{
		{"a traceparent", parent, []string{"traceparent=" + parent}},
		{"a traceparent with spaces", " " + parent + "\n", []string{"traceparent=" + parent}},
		{"properties", "#Mon Nov 30 12:00:00 UTC 2026\ntraceparent=" + parent + "\ntracestate=congo=t61rcWkgMzE\n",
			[]string{"traceparent=" + parent, "tracestate=congo=t61rcWkgMzE"}},
		{"properties with colons", "traceparent : " + parent, []string{"traceparent=" + parent}},
		{"upper case", strings.ToUpper(parent), nil},
		{"a zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", nil},
		{"another version", "01" + parent[2:], nil},
		{"text", "not a trace", nil},
		{"properties without traceparent", "tracestate=a=b", nil},
		{"over the headers column's", parent, []string{"traceparent=" + parent}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			var hs []Header
			if c.name == "over the headers column's" {
				hs = []Header{{Key: "traceparent", Value: []byte("00-stale")}}
			}
			out, _ := appendTraceHeaders(hs, []byte(c.value))
			for _, h := range out {
				got = append(got, h.Key+"="+string(h.Value))
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("headers %q, want %q", got, c.want)
			}
		})
	}
}

// TestHeaderConverter: the id header and the header columns' headers are
// written as the header converter says, the id's schema not optional for
// a NOT NULL column; a NULL header column is null under JSON and no bytes
// under string; the headers column's members stay as they are; a bytea
// header column is refused but raw.
func TestHeaderConverter(t *testing.T) {
	const id = "2e9b7c1a-5d3f-4a8e-9b6c-1f0e2d3c4b5a"
	row := func(eventType []byte) [][]byte {
		return [][]byte{[]byte(id), []byte("order"), []byte("1"), eventType, nil, []byte(`{}`), []byte(`{"tenant": "acme"}`), nil}
	}
	for _, c := range []struct {
		name string
		conv Converter
		typ  []byte
		want []string // key=value of each header, in order
	}{
		{"raw", ConverterRaw, []byte("Created"), []string{"id=" + id, "eventType=Created", "tenant=acme"}},
		{"string", ConverterString, []byte("Created"), []string{"id=" + id, "eventType=Created", "tenant=acme"}},
		{"json", ConverterJSON, []byte("Created"), []string{`id="` + id + `"`, `eventType="Created"`, "tenant=acme"}},
		{"json, a NULL column", ConverterJSON, nil, []string{`id="` + id + `"`, `eventType=null`, "tenant=acme"}},
		{"string, a NULL column", ConverterString, nil, []string{"id=" + id, "eventType=", "tenant=acme"}},
		{"json-with-schema", ConverterJSONWithSchema, []byte("Created"), []string{
			`id={"schema":{"type":"string","optional":false,"name":"io.debezium.data.Uuid","version":1},"payload":"` + id + `"}`,
			`eventType={"schema":{"type":"string","optional":true},"payload":"Created"}`, "tenant=acme"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := DefaultMapping()
			m.HeaderConverter = c.conv
			m.HeaderNames, m.HeaderColumns = []string{"eventType"}, []string{"event_type"}
			m.NotNull = []string{"id"}
			d, err := New(m)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := d.Rows(names(outboxCols), types(outboxCols))
			if err != nil {
				t.Fatal(err)
			}
			msg := rows.Decode(row(c.typ), 1)
			if msg.Poison != nil {
				t.Fatal(msg.Poison)
			}
			var got []string
			for _, h := range msg.Event.Headers {
				got = append(got, h.Key+"="+string(h.Value))
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("headers\n%q\nwant\n%q", got, c.want)
			}
		})
	}
	m := DefaultMapping()
	m.HeaderConverter = ConverterJSON
	m.HeaderColumns = []string{"event_type"}
	cols := slices.Clone(outboxCols)
	cols[3].oid = oidBytea
	if err := m.CheckColumns(names(cols), types(cols)); err == nil || !strings.Contains(err.Error(), "header_converter raw") {
		t.Fatalf("a bytea header column under the json header converter: %v", err)
	}
}

// TestPartitionColumn: an integer partition column places the event on
// the partition it names; a NULL leaves it to the key's hash; a negative
// value, or one beyond 32 bits, parks it with a reason naming the
// column, placed on partition -1 (refused on every attempt, never sent by
// its key's hash); a column of another type, or none, does not fit the mapping.
func TestPartitionColumn(t *testing.T) {
	m := DefaultMapping()
	m.PartitionColumn = "part"
	row := func(part []byte) [][]byte {
		return [][]byte{[]byte("2e9b7c1a-5d3f-4a8e-9b6c-1f0e2d3c4b5a"), []byte("order"), []byte("1"), []byte("Created"), nil, []byte(`{}`), nil, nil, part}
	}
	d, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, oid := range []uint32{oidInt2, oidInt4, oidInt8} {
		rows, err := d.Rows(names(append(slices.Clone(outboxCols), col{"part", oid})), types(append(slices.Clone(outboxCols), col{"part", oid})))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			part      []byte
			placed    bool
			partition int32
			poison    string
		}{
			{[]byte("7"), true, 7, ""},
			{[]byte("0"), true, 0, ""},
			{nil, false, 0, ""},
			{[]byte("-1"), true, -1, `partition column "part" holds -1`},
			{[]byte("2147483648"), true, -1, `partition column "part" holds 2147483648`},
		} {
			msg := rows.Decode(row(c.part), 1)
			got := ""
			if msg.Poison != nil {
				got = msg.Poison.Error()
			}
			if c.poison == "" && got != "" || !strings.Contains(got, c.poison) {
				t.Errorf("type %d, partition %q: poison %q, want %q", oid, c.part, got, c.poison)
			}
			if msg.Event.Placed != c.placed || msg.Event.Partition != c.partition {
				t.Errorf("type %d, partition %q: placed %t on %d, want %t on %d", oid, c.part, msg.Event.Placed, msg.Event.Partition, c.placed, c.partition)
			}
		}
	}
	for name, cols := range map[string][]col{
		"a text column": append(slices.Clone(outboxCols), col{"part", 25}),
		"no column":     outboxCols,
	} {
		rows, err := d.Rows(names(cols), types(cols))
		if err == nil {
			msg := rows.Decode(row([]byte("1"))[:len(cols)], 1)
			err = msg.Poison
		}
		if err == nil || !strings.Contains(err.Error(), `"part"`) {
			t.Errorf("%s: %v, want a problem naming the column", name, err)
		}
	}
}

// TestTraceHeadersConverted: the trace headers come first, written by the
// header converter as the router's Connect strings (a schema that is not
// optional), the id header after them (the header columns follow).
func TestTraceHeadersConverted(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cols := append(slices.Clone(outboxCols), col{"tracingspancontext", 25})
	for _, c := range []struct {
		conv Converter
		want []string
	}{
		{ConverterRaw, []string{"traceparent=" + parent, "tracestate=congo=t61rcWkgMzE", "id=x"}},
		{ConverterString, []string{"traceparent=" + parent, "tracestate=congo=t61rcWkgMzE", "id=x"}},
		{ConverterJSON, []string{`traceparent="` + parent + `"`, `tracestate="congo=t61rcWkgMzE"`, `id="x"`}},
		{ConverterJSONWithSchema, []string{`traceparent={"schema":{"type":"string","optional":false},"payload":"` + parent + `"}`,
			`tracestate={"schema":{"type":"string","optional":false},"payload":"congo=t61rcWkgMzE"}`,
			`id={"schema":{"type":"string","optional":true},"payload":"x"}`}},
	} {
		m := DefaultMapping()
		m.IDColumn = "aggregate_id" // a text id, so that every converter writes it
		m.HeaderConverter, m.TracingSpanContextColumn = c.conv, "tracingspancontext"
		d, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := d.Rows(names(cols), types(cols))
		if err != nil {
			t.Fatal(err)
		}
		msg := rows.Decode([][]byte{[]byte("2e9b7c1a-5d3f-4a8e-9b6c-1f0e2d3c4b5a"), []byte("order"), []byte("x"), []byte("Created"), nil, []byte(`{}`), nil, nil,
			[]byte("traceparent=" + parent + "\ntracestate=congo=t61rcWkgMzE\n")}, 1)
		if msg.Poison != nil {
			t.Fatal(msg.Poison)
		}
		var got []string
		for _, h := range msg.Event.Headers {
			got = append(got, h.Key+"="+string(h.Value))
		}
		if len(got) < 3 || strings.Join(got[:3], "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: headers\n%q\nwant first\n%q", c.conv, got, c.want)
		}
	}
}

// TestEnvelopeSchemaNameOfANullColumn: a row whose column of
// envelope_schema_name is NULL cannot become a record.
func TestEnvelopeSchemaNameOfANullColumn(t *testing.T) {
	m := DefaultMapping()
	m.ValueConverter, m.EnvelopeSchemaName = ConverterJSONWithSchema, "srv.public.outbox.{topic}.Value"
	m.EnvelopeNames, m.EnvelopeColumns = []string{"eventType"}, []string{"event_type"}
	d, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := d.Rows(names(outboxCols), types(outboxCols))
	if err != nil {
		t.Fatal(err)
	}
	msg := rows.Decode([][]byte{[]byte("2e9b7c1a-5d3f-4a8e-9b6c-1f0e2d3c4b5a"), []byte("order"), []byte("1"), []byte("Created"), nil, []byte(`{}`), nil, nil}, 1)
	if msg.Poison == nil || !strings.Contains(msg.Poison.Error(), `column "topic" of envelope_schema_name is NULL`) {
		t.Fatalf("poison %v", msg.Poison)
	}
}
