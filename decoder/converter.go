package decoder

import (
	"encoding/base64"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Converter says how the key or payload column's value becomes the
// record's key or value bytes. Each writes what Kafka Connect's converter
// of its name writes for the value Debezium's outbox event router gives it
// (the column's value, with the Connect schema Debezium's PostgreSQL
// connector gives the column), so that a consumer of the router's topics
// reads the relay's records as they were.
type Converter string

// The converters (key_converter, value_converter in a config file).
const (
	// ConverterRaw writes the column's text as PostgreSQL renders it, and
	// a bytea column's bytes (what Connect's ByteArrayConverter writes of
	// one). The default.
	ConverterRaw Converter = ""
	// ConverterString writes the value's text as Connect's
	// StringConverter does: a boolean true or false (PostgreSQL renders t
	// or f), the other types as PostgreSQL renders them, NULL as a null.
	ConverterString Converter = "string"
	// ConverterJSON writes the value as JSON (a text column's text as a
	// JSON string, an integer as a number): Connect's JsonConverter with
	// schemas.enable=false.
	ConverterJSON Converter = "json"
	// ConverterJSONWithSchema writes {"schema":…,"payload":…}, the value
	// as ConverterJSON writes it with its Connect schema: JsonConverter
	// with schemas.enable=true.
	ConverterJSONWithSchema Converter = "json-with-schema"
)

// ParseConverter reads s: raw (or ""), string, json or json-with-schema.
func ParseConverter(s string) (Converter, error) {
	switch s {
	case "", "raw":
		return ConverterRaw, nil
	case string(ConverterString), string(ConverterJSON), string(ConverterJSONWithSchema):
		return Converter(s), nil
	}
	return ConverterRaw, fmt.Errorf("converter %q: want raw (the column's text as PostgreSQL renders it, bytea's bytes: ByteArrayConverter's), "+
		"string (Kafka Connect's StringConverter), json (JsonConverter, schemas.enable=false) or json-with-schema (JsonConverter, schemas.enable=true)", s)
}

// String names c as a config file does.
func (c Converter) String() string {
	if c == ConverterRaw {
		return "raw"
	}
	return string(c)
}

// PostgreSQL type OIDs the JSON converters write, beside those of resolve.go.
const (
	oidBool    = 16
	oidInt2    = 21
	oidInt4    = 23
	oidText    = 25
	oidBpchar  = 1042
	oidVarchar = 1043
	oidUUID    = 2950
)

// connectType is how Debezium's PostgreSQL connector gives a column's
// values to Kafka Connect: the schema's type and name, and how its text
// (pgoutput's) becomes JSON.
type connectType struct {
	typ, name string
	json      func(dst, text []byte) []byte
	// text is StringConverter's text of the value, nil for a type it
	// writes as Java's name of a byte array (bytea).
	text func(dst, text []byte) []byte
}

// connectTypes are the column types the JSON converters write, by OID.
var connectTypes = map[uint32]connectType{
	oidInt2:    {typ: "int16", json: appendRaw, text: appendRaw},
	oidInt4:    {typ: "int32", json: appendRaw, text: appendRaw},
	oidInt8:    {typ: "int64", json: appendRaw, text: appendRaw},
	oidBool:    {typ: "boolean", json: appendBool, text: appendBool},
	oidText:    {typ: "string", json: appendJSONString, text: appendRaw},
	oidVarchar: {typ: "string", json: appendJSONString, text: appendRaw},
	oidBpchar:  {typ: "string", json: appendJSONString, text: appendRaw},
	oidUUID:    {typ: "string", name: "io.debezium.data.Uuid", json: appendJSONString, text: appendRaw},
	oidJSON:    {typ: "string", name: "io.debezium.data.Json", json: appendJSONString, text: appendRaw},
	oidJSONB:   {typ: "string", name: "io.debezium.data.Json", json: appendJSONString, text: appendRaw},
	oidBytea:   {typ: "bytes", json: appendBase64}, // the column's bytes, decoded from bytea's hex first
}

// convertedTypes names the types connectTypes has, for errors.
const convertedTypes = "text, varchar, char, uuid, smallint, integer, bigint, boolean, json, jsonb or bytea (not bytea for string)"

// converting is a key or payload column's converter, resolved against the
// column's type in a Relation.
type converting struct {
	c Converter
	t connectType
	// prefix opens the envelope of ConverterJSONWithSchema, with the
	// column's Connect schema: {"schema":{…},"payload":. nil otherwise.
	prefix []byte
}

// resolveConverter resolves c for a column of type oid (notNull: declared
// NOT NULL, which makes its schema not optional); the error says why the
// column cannot be written so.
func resolveConverter(c Converter, role, col string, oid uint32, notNull bool) (converting, error) {
	if c == ConverterRaw {
		return converting{}, nil
	}
	t, ok := connectTypes[oid]
	if !ok {
		return converting{}, fmt.Errorf("%s column %q has type %s, which the %s converter does not write: "+
			"use a column of type %s, or the raw converter", role, col, typeName(oid), c, convertedTypes)
	}
	if c == ConverterString && t.text == nil {
		return converting{}, fmt.Errorf("%s column %q has type %s, whose bytes Kafka Connect's StringConverter writes as Java's name of a byte array: "+
			"use the raw converter, which writes the bytes as ByteArrayConverter does", role, col, typeName(oid))
	}
	cv := converting{c: c, t: t}
	if c == ConverterJSONWithSchema {
		schema := fmt.Sprintf(`{"type":%q,"optional":%t`, t.typ, !notNull)
		if t.name != "" {
			schema += fmt.Sprintf(`,"name":%q,"version":1`, t.name)
		}
		cv.prefix = []byte(`{"schema":` + schema + `},"payload":`)
	}
	return cv, nil
}

// convert returns the bytes the converter writes for the column's text (a
// bytea column's bytes), null when the column is NULL. The raw converter
// returns text as it is.
func (cv converting) convert(text []byte, null bool) []byte {
	switch {
	case cv.c == ConverterRaw:
		return text
	case cv.c == ConverterString && null:
		return nil
	case cv.c == ConverterString:
		return cv.t.text(make([]byte, 0, len(text)), text)
	}
	out := make([]byte, 0, len(cv.prefix)+len(text)+len(text)/8+8)
	out = append(out, cv.prefix...)
	if null {
		out = append(out, "null"...)
	} else {
		out = cv.t.json(out, text)
	}
	if cv.prefix != nil {
		out = append(out, '}')
	}
	return out
}

// appendRaw appends an integer's text, which is its JSON.
func appendRaw(dst, text []byte) []byte { return append(dst, text...) }

// appendBool appends a boolean's JSON: PostgreSQL renders it t or f.
func appendBool(dst, text []byte) []byte {
	if len(text) == 1 && text[0] == 't' {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// appendBase64 appends bytes as a JSON string of their standard base64,
// with padding, as JsonConverter writes a bytes value.
func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// hexDigits are the digits of the escapes Jackson writes: upper case.
const hexDigits = "0123456789ABCDEF"

// appendJSONString appends text (UTF-8) as a JSON string the way Jackson,
// JsonConverter's writer, escapes it: " and \ escaped, \b \t \n \f \r in
// their short forms, the other control characters as \u00XX, each
// character outside the Basic Multilingual Plane as its two UTF-16
// surrogates \uXXXX\uXXXX, everything else as it is (no escape for /,
// DEL or U+2028).
func appendJSONString(dst, text []byte) []byte {
	dst = slices.Grow(dst, len(text)+2)
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(text); {
		c := text[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = appendEscape(append(dst, text[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		if r <= 0xFFFF || r == utf8.RuneError {
			i += size
			continue
		}
		dst = append(dst, text[start:i]...)
		hi, lo := surrogates(r)
		dst = appendUnicodeEscape(dst, hi)
		dst = appendUnicodeEscape(dst, lo)
		i += size
		start = i
	}
	dst = append(dst, text[start:]...)
	return append(dst, '"')
}

// appendEscape appends Jackson's escape of c, a control character, a
// quote or a backslash: \b \t \n \f \r in their short forms, the other
// control characters as \u00XX.
func appendEscape(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\t':
		return append(dst, '\\', 't')
	case '\n':
		return append(dst, '\\', 'n')
	case '\f':
		return append(dst, '\\', 'f')
	case '\r':
		return append(dst, '\\', 'r')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// surrogates returns the UTF-16 surrogate pair of r, a rune above U+FFFF.
func surrogates(r rune) (hi, lo rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

// appendUnicodeEscape appends \uXXXX of the UTF-16 unit u, upper case.
func appendUnicodeEscape(dst []byte, u rune) []byte {
	return append(dst, '\\', 'u', hexDigits[u>>12&0xF], hexDigits[u>>8&0xF], hexDigits[u>>4&0xF], hexDigits[u&0xF])
}
