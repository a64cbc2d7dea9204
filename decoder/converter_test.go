package decoder

import (
	"slices"
	"strings"
	"testing"
)

func TestAppendJSONStringAsJackson(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"123", `"123"`},
		{`say "hi" \ /`, `"say \"hi\" \\ /"`},
		{"\b\t\n\f\r", `"\b\t\n\f\r"`},
		{"\x00\x01\x1f\x7f", `"\u0000\u0001\u001F` + "\x7f" + `"`},
		{"Ærø-7 ☕ é", `"Ærø-7 ☕ é"`},
		{"😀", `"\uD83D\uDE00"`},
		{"a😀b𝄞", `"a\uD83D\uDE00b\uD834\uDD1E"`},
		{"\u2028", "\"\u2028\""},
		{`{"id": 123, "n": "x"}`, `"{\"id\": 123, \"n\": \"x\"}"`},
	} {
		if got := string(appendJSONString(nil, []byte(c.in))); got != c.want {
			t.Errorf("appendJSONString(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestConvert(t *testing.T) {
	for _, c := range []struct {
		name    string
		conv    Converter
		oid     uint32
		notNull bool
		text    string
		null    bool
		want    string
	}{
		{"raw as it is", ConverterRaw, oidVarchar, true, "123", false, "123"},
		{"raw bool", ConverterRaw, oidBool, true, "t", false, "t"},
		{"string bool", ConverterString, oidBool, true, "t", false, "true"},
		{"string text", ConverterString, oidText, true, "Ærø 😀", false, "Ærø 😀"},
		{"json text", ConverterJSON, oidVarchar, true, "123", false, `"123"`},
		{"json int4", ConverterJSON, oidInt4, true, "-42", false, `-42`},
		{"json int8", ConverterJSON, oidInt8, true, "9007199254740993", false, `9007199254740993`},
		{"json bool", ConverterJSON, oidBool, true, "t", false, `true`},
		{"json bool false", ConverterJSON, oidBool, true, "f", false, `false`},
		{"json bytes", ConverterJSON, oidBytea, true, "\x01\x02\x03\xff", false, `"AQID/w=="`},
		{"json null", ConverterJSON, oidJSONB, false, "", true, `null`},
		{"schema text", ConverterJSONWithSchema, oidVarchar, true, "123", false,
			`{"schema":{"type":"string","optional":false},"payload":"123"}`},
		{"schema jsonb", ConverterJSONWithSchema, oidJSONB, false, `{"a": 1}`, false,
			`{"schema":{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1},"payload":"{\"a\": 1}"}`},
		{"schema jsonb null", ConverterJSONWithSchema, oidJSONB, false, "", true,
			`{"schema":{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1},"payload":null}`},
		{"schema uuid", ConverterJSONWithSchema, oidUUID, true, "2e9b7c1a-5d3f-4a8e-9b6c-1f0e2d3c4b5a", false,
			`{"schema":{"type":"string","optional":false,"name":"io.debezium.data.Uuid","version":1},"payload":"2e9b7c1a-5d3f-4a8e-9b6c-1f0e2d3c4b5a"}`},
		{"schema int2", ConverterJSONWithSchema, oidInt2, false, "7", false, `{"schema":{"type":"int16","optional":true},"payload":7}`},
		{"schema bytes", ConverterJSONWithSchema, oidBytea, false, "hi", false, `{"schema":{"type":"bytes","optional":true},"payload":"aGk="}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cv, err := resolveConverter(c.conv, "key", "k", c.oid, c.notNull)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(cv.convert([]byte(c.text), c.null)); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestConverterRefusesOtherTypes(t *testing.T) {
	_, err := resolveConverter(ConverterJSON, "key", "amount", 1700, true)
	if err == nil || !strings.Contains(err.Error(), `key column "amount" has type numeric`) || !strings.Contains(err.Error(), "raw converter") {
		t.Fatalf("err = %v", err)
	}
	if _, err := resolveConverter(ConverterRaw, "key", "amount", 1700, true); err != nil {
		t.Fatalf("the raw converter writes every type: %v", err)
	}
	if _, err := resolveConverter(ConverterString, "value", "payload", oidBytea, false); err == nil || !strings.Contains(err.Error(), "ByteArrayConverter") {
		t.Fatalf("the string converter of a bytea column: %v", err)
	}
}

func TestParseConverter(t *testing.T) {
	for in, want := range map[string]Converter{"": ConverterRaw, "raw": ConverterRaw, "string": ConverterString, "json": ConverterJSON, "json-with-schema": ConverterJSONWithSchema} {
		if got, err := ParseConverter(in); err != nil || got != want {
			t.Errorf("ParseConverter(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseConverter("avro"); err == nil {
		t.Error("avro parsed")
	}
}

// TestRowsConvertKeyAndValue: a mapping's converters write the decoded
// row's key and value, the key's schema not optional when the column is
// NOT NULL; a column of a type the converter does not write parks the
// relation's rows with the reason.
func TestRowsConvertKeyAndValue(t *testing.T) {
	m := DefaultMapping()
	m.KeyConverter, m.ValueConverter = ConverterJSONWithSchema, ConverterJSON
	m.NotNull = []string{"id", "aggregate_id"}
	d, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := d.Rows(names(outboxCols), types(outboxCols))
	if err != nil {
		t.Fatal(err)
	}
	values := [][]byte{[]byte("2e9b7c1a-5d3f-4a8e-9b6c-1f0e2d3c4b5a"), []byte("order"), []byte("Ærø 😀"), []byte("Created"),
		nil, []byte(`{"a": "😀"}`), nil, []byte("2026-11-30 12:00:00+00")}
	msg := rows.Decode(values, 1)
	if msg.Poison != nil {
		t.Fatal(msg.Poison)
	}
	if got, want := string(msg.Event.Key), `{"schema":{"type":"string","optional":false},"payload":"Ærø \uD83D\uDE00"}`; got != want {
		t.Errorf("key %s, want %s", got, want)
	}
	if got, want := string(msg.Event.Value), `"{\"a\": \"\uD83D\uDE00\"}"`; got != want {
		t.Errorf("value %s, want %s", got, want)
	}
	values[5] = nil
	if got := string(rows.Decode(values, 1).Event.Value); got != "null" {
		t.Errorf("a NULL payload's value %q, want null", got)
	}

	cols := slices.Clone(outboxCols)
	cols[2].oid = 1700 // aggregate_id numeric
	if err := m.CheckColumns(names(cols), types(cols)); err == nil || !strings.Contains(err.Error(), "numeric") {
		t.Fatalf("a numeric key with the json-with-schema converter: %v", err)
	}
}
