package decoder

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// A message's content is read by the small scanner below rather than by
// encoding/json: it finds the members of a top-level JSON object as spans
// of the content, without allocating, so that only the parts the record
// keeps are copied or unescaped. It reads only content that validJSON
// (below: what json.Valid accepts, faster) accepted; on anything else it
// stops without panicking.

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

// maxJSONDepth is the deepest nesting validJSON accepts, encoding/json's.
const maxJSONDepth = 10000

// validJSON reports whether b is one JSON value with only whitespace
// around it, exactly as json.Valid does (bytes that are not UTF-8 are
// accepted in strings, nesting deeper than maxJSONDepth is not), in a
// fraction of its time: a message's content is checked whole before its
// members are read.
func validJSON(b []byte) bool {
	i, ok := validValue(b, skipSpace(b, 0), 0)
	return ok && skipSpace(b, i) == len(b)
}

// validValue checks the JSON value at b[i] and returns the index after it.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth >= maxJSONDepth {
			return i, false
		}
		return validContainer(b, i, depth+1)
	case c == '"':
		return validString(b, i)
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	case c == 't':
		return validLiteral(b, i, "true")
	case c == 'f':
		return validLiteral(b, i, "false")
	case c == 'n':
		return validLiteral(b, i, "null")
	}
	return i, false
}

// validContainer checks the object or array at b[i]: its members (a
// string, ':' and a value) or elements, separated by ','.
func validContainer(b []byte, i, depth int) (int, bool) {
	object, end := b[i] == '{', byte(']')
	if object {
		end = '}'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	for {
		var ok bool
		if object {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = validString(b, i); !ok {
				return i, false
			}
			if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
		if i, ok = validValue(b, i, depth); !ok {
			return i, false
		}
		if i = skipSpace(b, i); i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case end:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// validString checks the string at b[i]: no control character, and only
// JSON's escapes.
func validString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return j, false
		case c == '\\':
			if j++; j >= len(b) {
				return j, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) || !isHex(b[j+1]) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) {
					return j, false
				}
				j += 4
			default:
				return j, false
			}
		}
	}
	return len(b), false
}

// validNumber checks the number at b[i]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return j, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

// digits returns the index after the decimal digits at b[i:].
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// validLiteral checks that b[i:] starts with lit.
func validLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
