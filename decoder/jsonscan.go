package decoder

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// A message's content is read by the small scanner below rather than by
// encoding/json: it finds the members of a top-level JSON object as spans
// of the content, without allocating, so that only the parts the record
// keeps are copied or unescaped. It reads only content that json.Valid
// accepted; on anything else it stops without panicking.

// objectReader reads the members of a JSON object one after another.
type objectReader struct {
	b []byte
	i int
}

// newObjectReader returns a reader of the members of the JSON object b,
// valid JSON; ok is false when b is not an object.
func newObjectReader(b []byte) (r objectReader, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return objectReader{}, false
	}
	return objectReader{b: b, i: i + 1}, true
}

// next returns the next member's name, unescaped, and its value's JSON
// text; ok is false after the last member.
func (r *objectReader) next() (name, value []byte, ok bool) {
	b := r.b
	i := skipSpace(b, r.i)
	if i < len(b) && b[i] == ',' {
		i = skipSpace(b, i+1)
	}
	if i >= len(b) || b[i] != '"' {
		return nil, nil, false
	}
	end := stringEnd(b, i)
	name = jsonString(b[i:end])
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return nil, nil, false
	}
	i = skipSpace(b, i+1)
	vend := valueEnd(b, i)
	if vend <= i {
		return nil, nil, false
	}
	r.i = vend
	return name, b[i:vend], true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the closing quote of the JSON string
// that starts at b[i], or len(b).
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd returns the index after the JSON value that starts at b[i], or
// len(b).
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default: // a number, true, false or null
		for j := i; j < len(b); j++ {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return j
			}
		}
		return len(b)
	}
}

// jsonString returns the text of the JSON string s (quotes included),
// unescaped, as encoding/json reads it (bytes that are not UTF-8 become
// U+FFFD): a span of s when it has no escape, else a new slice.
func jsonString(s []byte) []byte {
	if len(s) < 2 {
		return []byte{}
	}
	inner := s[1 : len(s)-1 : len(s)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner
	}
	var text string
	if err := json.Unmarshal(s, &text); err != nil {
		return inner
	}
	return []byte(text)
}

// jsonKind names the kind of the JSON value v for an operator: "a
// string", "a number", "an object", and so on.
func jsonKind(v []byte) string {
	if len(v) == 0 {
		return "empty"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// isNull reports whether the JSON value v is null.
func isNull(v []byte) bool { return string(v) == "null" }
