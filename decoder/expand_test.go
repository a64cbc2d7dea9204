package decoder

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// routerCase is a line of testdata/expand-json-payload.jsonl: a payload
// and what Debezium's outbox event router (3.6.1.Final, with
// table.expand.json.payload=true) and Kafka Connect's JsonConverter
// (4.3.0) wrote of it, schemas off and on, or that one of them threw.
// scripts/debezium-harness/tools/expand-golden.sh writes the answers by
// running them (tools/RouterExpand.java): add a line with its inputs and
// run it.
type routerCase struct {
	Name       string  `json:"name"`
	Payload    *string `json:"payload"`
	Repeat     [][]any `json:"repeat"` // [text, count] parts of a long payload
	Column     string  `json:"column"` // jsonb (the default), json or text
	Null       string  `json:"null"`
	EmptyArray string  `json:"emptyArray"`
	Envelope   bool    `json:"envelope"`
	Digest     bool    `json:"digest"` // the answers are "sha256:HEX len:N"
	// Java19: Java 17's Double.toString writes some of the payload's
	// doubles with more digits than needed (JDK-4511638); the relay
	// writes what a worker on Java 19 or later writes, OffJava19 and
	// OnJava19.
	Java19 bool `json:"java19"`

	Off, On, OffJava19, OnJava19 *string
	OffError, OnError            string
	RouterError                  string
}

// payload is the case's payload column's text, nil for NULL.
func (c routerCase) payload() []byte {
	if c.Repeat != nil {
		var b strings.Builder
		for _, part := range c.Repeat {
			n, _ := strconv.Atoi(string(part[1].(json.Number)))
			b.WriteString(strings.Repeat(part[0].(string), n))
		}
		return []byte(b.String())
	}
	if c.Payload == nil {
		return nil
	}
	return []byte(*c.Payload)
}

// want is what the router wrote with schemas or without: the bytes, or
// that it threw.
func (c routerCase) want(schemas bool) (value *string, fails string) {
	off, on := c.Off, c.On
	if c.Java19 {
		off, on = c.OffJava19, c.OnJava19
	}
	switch {
	case c.RouterError != "":
		return nil, "router: " + c.RouterError
	case schemas && c.OnError != "":
		return nil, "converter: " + c.OnError
	case !schemas && c.OffError != "":
		return nil, "converter: " + c.OffError
	case schemas:
		return on, ""
	}
	return off, ""
}

// readRouterCases reads testdata/expand-json-payload.jsonl.
func readRouterCases(t *testing.T) []routerCase {
	t.Helper()
	f, err := os.Open("testdata/expand-json-payload.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []routerCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c routerCase
		d := json.NewDecoder(strings.NewReader(sc.Text()))
		d.UseNumber()
		if err := d.Decode(&c); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// expandRows decodes outbox rows whose payload column has type oid, with
// the value converter conv and the case's expansion settings.
func expandRows(t *testing.T, c routerCase, conv Converter, oid uint32) *Rows {
	t.Helper()
	m := DefaultMapping()
	m.ValueConverter = conv
	m.ExpandJSONPayload = true
	m.JSONPayloadNullBehavior = JSONNullBehavior(c.Null)
	m.JSONPayloadEmptyArrayBehavior = JSONEmptyArrayBehavior(c.EmptyArray)
	if c.Envelope {
		m.EnvelopeNames, m.EnvelopeColumns = []string{"eventType"}, []string{"event_type"}
	}
	if c.Null == "ignore" {
		m.JSONPayloadNullBehavior = JSONNullIgnore
	}
	if c.EmptyArray == "ignore" {
		m.JSONPayloadEmptyArrayBehavior = JSONEmptyArrayIgnore
	}
	d, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	cols := append([]col(nil), outboxCols...)
	cols[5].oid = oid
	rows, err := d.Rows(names(cols), types(cols))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// columnOID is the OID of a case's payload column type.
func columnOID(column string) uint32 {
	switch column {
	case "json":
		return oidJSON
	case "text":
		return oidText
	}
	return oidJSONB
}

// expandRow is an outbox row of the default layout with payload.
func expandRow(payload []byte) [][]byte {
	return [][]byte{[]byte("00000000-0000-4000-8000-000000000001"), []byte("order"), []byte("1"), []byte("OrderCreated"),
		nil, payload, nil, nil}
}

// TestExpandJSONPayloadAsTheRouter: for every payload of the golden file,
// the relay writes the bytes the router and JsonConverter wrote, schemas
// off and on (the envelope without schemas only: the relay refuses it
// with them), and parks the rows of which they could make no record.
func TestExpandJSONPayloadAsTheRouter(t *testing.T) {
	cases := readRouterCases(t)
	if len(cases) < 100 {
		t.Fatalf("%d cases: the golden file lost its lines", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			payload := c.payload()
			if raceDetector && len(payload) > 1<<20 {
				// Jackson's limits, 20,000,000 units a string: 1.6 s each
				// here, a minute under the race detector. make unit runs
				// this test again without it.
				t.Skipf("a payload of %d bytes, under the race detector", len(payload))
			}
			for _, schemas := range []bool{false, true} {
				if schemas && c.Envelope {
					continue
				}
				conv := ConverterJSON
				if schemas {
					conv = ConverterJSONWithSchema
				}
				want, fails := c.want(schemas)
				if want == nil && fails == "" && !(c.Payload == nil && c.Repeat == nil) {
					t.Fatalf("%s: the golden file has no answer: run scripts/debezium-harness/tools/expand-golden.sh", conv)
				}
				msg := expandRows(t, c, conv, columnOID(c.Column)).Decode(expandRow(payload), 1)
				switch {
				case fails != "" && msg.Poison == nil:
					t.Errorf("%s: the router fails (%s), the relay wrote %.300s", conv, fails, msg.Event.Value)
				case fails != "":
					if !strings.Contains(msg.Poison.Error(), "cannot make a record of it") {
						t.Errorf("%s: parked for another reason: %v", conv, msg.Poison)
					}
				case msg.Poison != nil:
					t.Errorf("%s: the relay parks it (%v), the router wrote %.300s", conv, msg.Poison, derefOr(want, "null"))
				case want == nil && msg.Event.Value != nil:
					t.Errorf("%s: the router wrote a null value, the relay %.300s", conv, msg.Event.Value)
				case want != nil && c.Digest:
					sum := sha256.Sum256(msg.Event.Value)
					if got := fmt.Sprintf("sha256:%s len:%d", hex.EncodeToString(sum[:]), len(msg.Event.Value)); got != *want {
						t.Errorf("%s: the relay wrote %s (%.200s…), the router %s", conv, got, msg.Event.Value, *want)
					}
				case want != nil && string(msg.Event.Value) != *want:
					t.Errorf("%s:\nrelay  %s\nrouter %s", conv, msg.Event.Value, *want)
				}
			}
		})
	}
}

func derefOr(s *string, or string) string {
	if s == nil {
		return or
	}
	return *s
}

// TestExpandMergesObjectsInDocumentOrder: the router merges the schemas
// of an array's objects in the order of a Java HashSet, which depends on
// identity hash codes (those of Schema.Type's constants) and so on the
// JVM; where the order matters, the relay takes the order in which the
// objects come. (The router, run by tools/RouterExpand.java on this
// payload, wrote {"x":[{"o":{"y":null}},{"o":{"y":2}}]}: it took the
// second object's schema first.)
func TestExpandMergesObjectsInDocumentOrder(t *testing.T) {
	rows := expandRows(t, routerCase{}, ConverterJSON, oidJSONB)
	for _, c := range []struct{ payload, want string }{
		{`{"x": [{"o": {"x": 1}}, {"o": {"y": 2}}]}`, `{"x":[{"o":{"x":1}},{"o":{"x":null}}]}`},
		{`{"x": [{"a": 1, "c": 1}, {"a": 1, "b": 2, "c": 3}, {"d": 1}]}`,
			`{"x":[{"a":1,"c":1,"b":null,"d":null},{"a":1,"c":3,"b":2,"d":null},{"a":null,"c":null,"b":null,"d":1}]}`},
	} {
		msg := rows.Decode(expandRow([]byte(c.payload)), 1)
		if msg.Poison != nil || string(msg.Event.Value) != c.want {
			t.Errorf("%s:\ngot  %s (%v)\nwant %s", c.payload, msg.Event.Value, msg.Poison, c.want)
		}
	}
}

// TestExpandLeavesOtherPayloadTypes: the router expands a Java string
// only: a bytea payload goes as JsonConverter writes bytes, base64.
func TestExpandLeavesOtherPayloadTypes(t *testing.T) {
	msg := expandRows(t, routerCase{}, ConverterJSON, oidBytea).Decode(expandRow([]byte(`\x7b7d`)), 1)
	if msg.Poison != nil || string(msg.Event.Value) != `"e30="` {
		t.Fatalf("got %s (%v), want the bytes {} in base64", msg.Event.Value, msg.Poison)
	}
}

// TestExpandTombstone: a blank payload is never expanded, so
// tombstone_on_empty_payload still makes it a tombstone; an expanded
// empty object is not empty.
func TestExpandTombstone(t *testing.T) {
	m := DefaultMapping()
	m.ValueConverter, m.ExpandJSONPayload, m.TombstoneOnEmptyPayload = ConverterJSON, true, true
	d, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	cols := append([]col(nil), outboxCols...)
	cols[5].oid = oidText
	rows, err := d.Rows(names(cols), types(cols))
	if err != nil {
		t.Fatal(err)
	}
	for payload, want := range map[string]string{"  ": "<nil>", "{}": "{}", "[]": `"[]"`} {
		msg := rows.Decode(expandRow([]byte(payload)), 1)
		got := string(msg.Event.Value)
		if msg.Event.Value == nil {
			got = "<nil>"
		}
		if msg.Poison != nil || got != want {
			t.Errorf("%q: got %s (%v), want %s", payload, got, msg.Poison, want)
		}
	}
}

// TestExpandValidate: expand_json_payload needs a JSON value converter;
// its behaviors need it.
func TestExpandValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(m *Mapping)
		want string // "" for valid
	}{
		{"json", func(m *Mapping) { m.ValueConverter, m.ExpandJSONPayload = ConverterJSON, true }, ""},
		{"json-with-schema", func(m *Mapping) { m.ValueConverter, m.ExpandJSONPayload = ConverterJSONWithSchema, true }, ""},
		{"envelope", func(m *Mapping) {
			m.ValueConverter, m.ExpandJSONPayload = ConverterJSON, true
			m.EnvelopeNames, m.EnvelopeColumns = []string{"eventType"}, []string{"event_type"}
		}, ""},
		{"raw", func(m *Mapping) { m.ExpandJSONPayload = true }, "needs the json or json-with-schema value converter (value converter raw)"},
		{"string", func(m *Mapping) { m.ValueConverter, m.ExpandJSONPayload = ConverterString, true }, "StringConverter writes Java's Struct{...} text"},
		{"behaviors without expand", func(m *Mapping) { m.ValueConverter, m.JSONPayloadNullBehavior = ConverterJSON, JSONNullOptionalBytes },
			"set expand_json_payload: true"},
		{"a bad null behavior", func(m *Mapping) {
			m.ValueConverter, m.ExpandJSONPayload, m.JSONPayloadNullBehavior = ConverterJSON, true, "keep"
		}, `json_payload_null_behavior "keep": want ignore`},
		{"a bad empty array behavior", func(m *Mapping) {
			m.ValueConverter, m.ExpandJSONPayload, m.JSONPayloadEmptyArrayBehavior = ConverterJSON, true, "string"
		}, `json_payload_empty_array_behavior "string": want ignore`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := DefaultMapping()
			c.set(&m)
			err := m.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestAppendJavaDoubleReadsBack: every double is written with digits that
// read back as it, in Java's layout (decimal from 10^-3 to 10^7, with a
// fraction; computerized scientific notation elsewhere).
func TestAppendJavaDoubleReadsBack(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := string(appendJavaDouble(nil, f))
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != f {
			t.Fatalf("%v (%x) written %s, which reads back as %v (%v)", f, math.Float64bits(f), s, back, err)
		}
		a := math.Abs(f)
		if strings.Contains(s, "E") == (a >= 1e-3 && a < 1e7) || !strings.Contains(s, ".") {
			t.Fatalf("%v written %s: not Java's layout", f, s)
		}
	}
	for f, want := range map[float64]string{1.5: "1.5", 100: "100.0", 1e7: "1.0E7", 1.5e-5: "1.5E-5", 123456789.123: "1.23456789123E8",
		0.001: "0.001", 9.99e-4: "9.99E-4", 9999999: "9999999.0", math.SmallestNonzeroFloat64: "4.9E-324", -2.5: "-2.5", 1e23: "1.0E23"} {
		if got := string(appendJavaDouble(nil, f)); got != want {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
}

// TestExpandStringLimitsAsJackson: Jackson reads a string value of up to
// 20,000,000 UTF-16 units and a name of up to 50,000 (an escape is one
// unit, a character outside the BMP two), as the golden file's long
// payloads showed; past them the router does not expand the payload.
func TestExpandStringLimitsAsJackson(t *testing.T) {
	x := newExpander("payload", &Mapping{})
	for _, c := range []struct {
		payload string
		expands bool
	}{
		{`{"` + strings.Repeat("é", 50000) + `":1}`, true},
		{`{"` + strings.Repeat("é", 50001) + `":1}`, false},
		{`{"` + strings.Repeat(`\n`, 49998) + `😀":1}`, true},
		{`{"` + strings.Repeat(`\n`, 49999) + `😀":1}`, false},
	} {
		_, err := x.expand([]byte(c.payload))
		if (err == nil) != c.expands {
			t.Errorf("%.20s… (%d bytes): err %v, want expanded %t", c.payload, len(c.payload), err, c.expands)
		}
	}
}

// TestExpandBoundsTheValue: an array of objects of differing fields is
// written with every merged field in each object, nulls for the ones it
// lacks; past the most the relay sends in a record the row is parked,
// before the value grows further.
func TestExpandBoundsTheValue(t *testing.T) {
	defer func(n int) { expandMaxValue = n }(expandMaxValue)
	expandMaxValue = 1 << 20
	var b strings.Builder
	b.WriteString(`{"x": [`)
	for i := 0; i < 1000; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"common": 1, "k%d": %d}`, i, i)
	}
	b.WriteString(`]}`)
	msg := expandRows(t, routerCase{}, ConverterJSON, oidJSONB).Decode(expandRow([]byte(b.String())), 1)
	if msg.Poison == nil || !strings.Contains(msg.Poison.Error(), "the expanded value is larger than 1 MiB") {
		t.Fatalf("poison %v, value %d bytes", msg.Poison, len(msg.Event.Value))
	}
}

// FuzzExpand: any payload either goes as a string, is parked, or is
// written as valid JSON, schemas off and on; nothing panics.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5e3, "x", null, {"b": [{"c": true}, {"c": false, "d": []}]}]}`, `[{"a": 1}, {"b": 2}]`,
		`{"s": "\ud83d\ude00 \u0000 é", "n": -0.0, "big": 1e400}`, `{"a": 1, "a": {"b": 2}}`, `[]`, `{"x": [[1], [2]]}`} {
		f.Add([]byte(s))
	}
	rows := map[Converter]*Rows{}
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, conv := range []Converter{ConverterJSON, ConverterJSONWithSchema} {
			if rows[conv] == nil {
				rows[conv] = expandRows(t, routerCase{Null: "optional_bytes"}, conv, oidText)
			}
			msg := rows[conv].Decode(expandRow(payload), 1)
			if msg.Poison == nil && utf8.Valid(payload) && !json.Valid(msg.Event.Value) {
				t.Fatalf("%s of %q: not JSON: %s", conv, payload, msg.Event.Value)
			}
		}
	})
}

// BenchmarkDecodeInsertExpand is BenchmarkDecodeInsert with the payload
// expanded (expand_json_payload, value_converter json): the cost a table
// that sets it pays per event.
func BenchmarkDecodeInsertExpand(b *testing.B) {
	m := DefaultMapping()
	m.ValueConverter, m.ExpandJSONPayload = ConverterJSON, true
	d, err := New(m)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := d.Decode(relationMsg(1, "public", "outbox", outboxCols)); err != nil {
		b.Fatal(err)
	}
	msg := benchInsert("order")
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := d.Decode(msg)
		if err != nil || m.Kind != KindEvent || m.Poison != nil || m.Event.Value[0] != '{' {
			b.Fatal(m.Kind, err, m.Poison)
		}
	}
}
