package decoder

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// Expanding a JSON payload, as Debezium's outbox event router does with
// table.expand.json.payload=true and Kafka Connect's JsonConverter writes
// the result (EventRouterDelegate, JsonSchemaData, JsonConverter): the
// payload's text is parsed by Jackson, a Connect schema is inferred from
// it, the value is made a Connect struct of that schema, and JsonConverter
// writes the struct (and, with schemas, the schema). The relay does the
// same steps on the payload's bytes, in one parse and two walks, and
// writes the bytes JsonConverter writes.
//
// A payload the router does not expand (not starting with { or [, not
// JSON, or a schema it cannot infer) passes as the string it was. One it
// expands but cannot make a value of (a number beyond 64 bits, a top-level
// array, an array element that does not fit the schema inferred from the
// others) makes JsonConverter fail the record, and the Connect task stop:
// the relay parks such a row instead (errExpandFails).

// JSONNullBehavior says what an expanded payload's JSON null becomes: the
// router's table.json.payload.null.behavior.
type JSONNullBehavior string

// The null behaviors (json_payload_null_behavior in a config file).
const (
	// JSONNullIgnore drops a member whose value is null from the inferred
	// schema, and so from the value (the router's ignore, its default).
	JSONNullIgnore JSONNullBehavior = ""
	// JSONNullOptionalBytes keeps it, as an optional bytes field whose
	// value is null (optional_bytes).
	JSONNullOptionalBytes JSONNullBehavior = "optional_bytes"
)

// ParseJSONNullBehavior reads s: ignore (or "") or optional_bytes.
func ParseJSONNullBehavior(s string) (JSONNullBehavior, error) {
	switch s {
	case "", "ignore":
		return JSONNullIgnore, nil
	case string(JSONNullOptionalBytes):
		return JSONNullOptionalBytes, nil
	}
	return JSONNullIgnore, fmt.Errorf("json_payload_null_behavior %q: want ignore (a null member is left out, the router's default) "+
		"or optional_bytes (kept, as an optional bytes field), as the router's table.json.payload.null.behavior", s)
}

// String names b as a config file does.
func (b JSONNullBehavior) String() string {
	if b == JSONNullIgnore {
		return "ignore"
	}
	return string(b)
}

// JSONEmptyArrayBehavior says what an expanded payload's empty JSON array
// becomes: the router's table.json.payload.empty.array.behavior (Debezium
// 3.7 and later).
type JSONEmptyArrayBehavior string

// The empty array behaviors (json_payload_empty_array_behavior in a
// config file).
const (
	// JSONEmptyArrayIgnore drops a member whose value is an empty array
	// (the router's ignore, its default, and Debezium 3.6's only way).
	JSONEmptyArrayIgnore JSONEmptyArrayBehavior = ""
	// JSONEmptyArrayOptionalString keeps it, as an optional array of
	// optional strings (optional_string).
	JSONEmptyArrayOptionalString JSONEmptyArrayBehavior = "optional_string"
)

// ParseJSONEmptyArrayBehavior reads s: ignore (or "") or optional_string.
func ParseJSONEmptyArrayBehavior(s string) (JSONEmptyArrayBehavior, error) {
	switch s {
	case "", "ignore":
		return JSONEmptyArrayIgnore, nil
	case string(JSONEmptyArrayOptionalString):
		return JSONEmptyArrayOptionalString, nil
	}
	return JSONEmptyArrayIgnore, fmt.Errorf("json_payload_empty_array_behavior %q: want ignore (an empty array member is left out, the router's default) "+
		"or optional_string (kept, as an optional array of strings), as the router's table.json.payload.empty.array.behavior", s)
}

// String names b as a config file does.
func (b JSONEmptyArrayBehavior) String() string {
	if b == JSONEmptyArrayIgnore {
		return "ignore"
	}
	return string(b)
}

// Jackson's limits, as the router's ObjectMapper and JsonConverter have
// them (Jackson 2.21's StreamReadConstraints and StreamWriteConstraints
// defaults): past one, the parse fails (the payload is not expanded) or
// the write does (the record fails).
const (
	jsonMaxDepth      = 1000       // nesting of arrays and objects, read and written
	jsonMaxNumberLen  = 1000       // digits of a number, its fraction's and exponent's included
	jsonMaxStringLen  = 20_000_000 // UTF-16 units of a string value
	jsonMaxNameLen    = 50_000     // UTF-16 units of a member's name
	expandScratchKeep = 1 << 20    // scratch kept between payloads, in bytes
)

// expandMaxValue bounds an expanded value: sink.MaxBatchMaxBytes, the most
// the relay sends in one record. (An array of n objects of differing
// fields is written with n times their merged fields, n² nulls: a small
// payload can make a value larger than any record.) A variable for tests.
var expandMaxValue = 100 << 20

// errNotExpanded says the router does not expand the payload: it passes
// as the string it was.
var errNotExpanded = errors.New("not expanded")

// errExpandFails is why the router expands a payload but cannot make a
// record of it: JsonConverter, or the router itself, throws.
type errExpandFails struct{ why string }

func (e *errExpandFails) Error() string { return e.why }

// fails returns an errExpandFails.
func fails(format string, args ...any) error {
	return &errExpandFails{fmt.Sprintf(format, args...)}
}

// jkind is a parsed JSON value's kind, as Jackson's tree has it.
type jkind uint8

const (
	jNull jkind = iota
	jFalse
	jTrue
	jString
	jInt    // an integer of 32 bits: IntNode
	jLong   // of 64 bits: LongNode
	jBig    // beyond: BigIntegerNode
	jDouble // a number with a fraction or an exponent: DoubleNode
	jArray
	jObject
)

// jnode is a parsed JSON value. Strings and names are kept as Jackson
// writes them (its escapes), which is also a form in which two equal Java
// strings are equal bytes.
type jnode struct {
	kind jkind
	// a, b: a string's text as written, quotes included, is text[a:b]; an
	// array's or object's children are kids[a:b].
	a, b int32
	// key0, key1: an object member's name as written, without quotes.
	key0, key1 int32
	// num: an integer's int64, a double's float64 bits.
	num uint64
}

// expander expands a relation's payloads; its buffers are reused from one
// payload to the next (a relation decodes one row at a time).
type expander struct {
	root             []byte // the payload column's name as written: the top struct's name
	nullBytes        bool
	emptyArrayString bool

	in    []byte
	pos   int
	depth int
	text  []byte
	nodes []jnode
	kids  []int32
	stack []int32
}

// newExpander returns the expander of a payload column named col.
func newExpander(col string, m *Mapping) *expander {
	name := appendJSONString(nil, []byte(col))
	return &expander{
		root:             name[1 : len(name)-1],
		nullBytes:        m.JSONPayloadNullBehavior == JSONNullOptionalBytes,
		emptyArrayString: m.JSONPayloadEmptyArrayBehavior == JSONEmptyArrayOptionalString,
	}
}

// expanded is a payload the router expanded.
type expanded struct {
	x    *expander
	root int32
	// schema is the inferred schema; nil for a top-level empty array
	// (ignored): the router then passes the string with a null schema.
	schema *jschema
}

// expand parses text and infers its schema: errNotExpanded when the
// router would pass it as the string it is, an errExpandFails when it
// expands it but cannot make its value.
func (x *expander) expand(text []byte) (expanded, error) {
	if len(text) == 0 || text[0] != '{' && text[0] != '[' {
		return expanded{}, errNotExpanded
	}
	x.reset(text)
	root, err := x.value()
	if err != nil {
		return expanded{}, errNotExpanded
	}
	// Jackson's readTree reads the first value and leaves what follows.
	s, err := x.schemaOf(x.root, true, root)
	if err != nil {
		return expanded{}, errNotExpanded
	}
	if x.nodes[root].kind == jArray {
		if s == nil {
			return expanded{x: x, root: root}, nil
		}
		return expanded{}, fails("the payload is a JSON array, of which the router makes no struct (JsonConverter then fails: Invalid type for ARRAY)")
	}
	return expanded{x: x, root: root, schema: s}, nil
}

// appendTo appends e as JsonConverter writes it, depth levels deep in the
// record's value: the value, or with schemas {"schema":…,"payload":…}.
func (e expanded) appendTo(dst []byte, schemas bool, depth int) ([]byte, error) {
	w := jwriter{x: e.x, out: dst, depth: depth}
	if !schemas {
		err := w.value(e.root, e.schema)
		return w.out, err
	}
	if err := w.open('{'); err != nil {
		return nil, err
	}
	w.out = append(w.out, `"schema":`...)
	if err := w.schema(e.schema, nil); err != nil {
		return nil, err
	}
	w.out = append(w.out, `,"payload":`...)
	if err := w.value(e.root, e.schema); err != nil {
		return nil, err
	}
	w.close('}')
	return w.out, nil
}

// reset readies x for a payload.
func (x *expander) reset(text []byte) {
	if cap(x.text)+32*cap(x.nodes)+4*(cap(x.kids)+cap(x.stack)) > expandScratchKeep { // a jnode is 32 bytes
		x.text, x.nodes, x.kids, x.stack = nil, nil, nil, nil // a large payload's: not kept
	}
	x.in, x.pos, x.depth = text, 0, 0
	x.text, x.nodes, x.kids, x.stack = x.text[:0], x.nodes[:0], x.kids[:0], x.stack[:0]
}

// release drops x's hold on the payload.
func (x *expander) release() { x.in = nil }

// ws skips JSON's whitespace: space, tab, newline, carriage return.
func (x *expander) ws() {
	for x.pos < len(x.in) {
		switch x.in[x.pos] {
		case ' ', '\t', '\n', '\r':
			x.pos++
		default:
			return
		}
	}
}

// value parses the value at x.pos, as Jackson's strict parser does, and
// returns its node.
func (x *expander) value() (int32, error) {
	x.ws()
	if x.pos >= len(x.in) {
		return 0, errNotExpanded
	}
	switch c := x.in[x.pos]; {
	case c == '{' || c == '[':
		return x.container(c == '{')
	case c == '"':
		a, b, err := x.str(jsonMaxStringLen)
		if err != nil {
			return 0, err
		}
		return x.node(jnode{kind: jString, a: a, b: b}), nil
	case c == '-' || c >= '0' && c <= '9':
		n, err := x.number()
		if err != nil {
			return 0, err
		}
		return x.node(n), nil
	case x.literal("true"):
		return x.node(jnode{kind: jTrue}), nil
	case x.literal("false"):
		return x.node(jnode{kind: jFalse}), nil
	case x.literal("null"):
		return x.node(jnode{kind: jNull}), nil
	}
	return 0, errNotExpanded
}

// node adds n and returns its index.
func (x *expander) node(n jnode) int32 {
	x.nodes = append(x.nodes, n)
	return int32(len(x.nodes) - 1)
}

// literal consumes word when it is at x.pos, not run on by a letter or
// digit (Jackson reads "truex" as one bad token).
func (x *expander) literal(word string) bool {
	end := x.pos + len(word)
	if end > len(x.in) || string(x.in[x.pos:end]) != word {
		return false
	}
	if end < len(x.in) && identifierByte(x.in[end]) {
		return false
	}
	x.pos = end
	return true
}

// identifierByte says whether c continues a bare word.
func identifierByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= utf8.RuneSelf
}

// container parses an array or an object whose opening bracket is at x.pos.
// An object keeps each name once: the last value, at the first name's
// place (Jackson's ObjectNode, a LinkedHashMap).
func (x *expander) container(object bool) (int32, error) {
	x.depth++
	if x.depth > jsonMaxDepth {
		return 0, errNotExpanded
	}
	x.pos++
	base := len(x.stack)
	var names map[string]int // an object's names, once it has many
	closing := byte(']')
	if object {
		closing = '}'
	}
	x.ws()
	if x.pos < len(x.in) && x.in[x.pos] == closing {
		x.pos++
	} else {
		for {
			var k0, k1 int32
			if object {
				x.ws()
				if x.pos >= len(x.in) || x.in[x.pos] != '"' {
					return 0, errNotExpanded
				}
				a, b, err := x.str(jsonMaxNameLen)
				if err != nil {
					return 0, err
				}
				k0, k1 = a+1, b-1
				x.ws()
				if x.pos >= len(x.in) || x.in[x.pos] != ':' {
					return 0, errNotExpanded
				}
				x.pos++
			}
			v, err := x.value()
			if err != nil {
				return 0, err
			}
			if object {
				x.nodes[v].key0, x.nodes[v].key1 = k0, k1
				names = x.member(base, v, names)
			} else {
				x.stack = append(x.stack, v)
			}
			x.ws()
			if x.pos >= len(x.in) {
				return 0, errNotExpanded
			}
			c := x.in[x.pos]
			x.pos++
			if c == closing {
				break
			}
			if c != ',' {
				return 0, errNotExpanded
			}
		}
	}
	x.depth--
	a := int32(len(x.kids))
	x.kids = append(x.kids, x.stack[base:]...)
	x.stack = x.stack[:base]
	kind := jArray
	if object {
		kind = jObject
	}
	return x.node(jnode{kind: kind, a: a, b: int32(len(x.kids))}), nil
}

// member adds the object member v to the members from x.stack[base:],
// replacing the value of a member of the same name; names indexes them
// once there are many.
func (x *expander) member(base int, v int32, names map[string]int) map[string]int {
	key := x.keyOf(v)
	members := x.stack[base:]
	if names == nil && len(members) < 16 {
		for i, m := range members {
			if bytes.Equal(x.keyOf(m), key) {
				members[i] = v
				return nil
			}
		}
		x.stack = append(x.stack, v)
		return nil
	}
	if names == nil {
		names = make(map[string]int, 2*len(members))
		for i, m := range members {
			names[string(x.keyOf(m))] = i
		}
	}
	if i, ok := names[string(key)]; ok {
		members[i] = v
		return names
	}
	names[string(key)] = len(members)
	x.stack = append(x.stack, v)
	return names
}

// keyOf is member n's name as written.
func (x *expander) keyOf(n int32) []byte {
	nd := &x.nodes[n]
	return x.text[nd.key0:nd.key1]
}

// children are the children of the array or object n.
func (x *expander) children(n int32) []int32 {
	nd := &x.nodes[n]
	return x.kids[nd.a:nd.b]
}

// str parses the string at x.pos into x.text as Jackson writes it, quotes
// included: " and \ escaped, the control characters as \b \t \n \f \r or
// \u00XX, each UTF-16 surrogate (of a character outside the Basic
// Multilingual Plane, or alone from an escape) as \uXXXX, the rest as
// UTF-8. It fails past max UTF-16 units, as Jackson does.
func (x *expander) str(max int) (a, b int32, err error) {
	a = int32(len(x.text))
	x.text = append(x.text, '"')
	in := x.in
	i := x.pos + 1
	units := 0
	for {
		start := i
		for i < len(in) && in[i] >= 0x20 && in[i] != '"' && in[i] != '\\' && in[i] < utf8.RuneSelf {
			i++
		}
		x.text = append(x.text, in[start:i]...)
		units += i - start
		if i >= len(in) {
			return 0, 0, errNotExpanded
		}
		switch c := in[i]; {
		case c == '"':
			x.pos = i + 1
			if units > max {
				return 0, 0, errNotExpanded
			}
			x.text = append(x.text, '"')
			return a, int32(len(x.text)), nil
		case c < 0x20:
			return 0, 0, errNotExpanded // Jackson refuses a raw control character
		case c == '\\':
			if i+1 >= len(in) {
				return 0, 0, errNotExpanded
			}
			e := in[i+1]
			i += 2
			var u rune
			switch e {
			case '"', '\\', '/':
				u = rune(e)
			case 'b':
				u = '\b'
			case 'f':
				u = '\f'
			case 'n':
				u = '\n'
			case 'r':
				u = '\r'
			case 't':
				u = '\t'
			case 'u':
				if i+4 > len(in) {
					return 0, 0, errNotExpanded
				}
				v, err := strconv.ParseUint(string(in[i:i+4]), 16, 16)
				if err != nil {
					return 0, 0, errNotExpanded
				}
				u = rune(v)
				i += 4
			default:
				return 0, 0, errNotExpanded
			}
			units++
			x.text = appendUTF16Unit(x.text, u)
		default:
			r, size := utf8.DecodeRune(in[i:])
			if r > 0xFFFF {
				hi, lo := surrogates(r)
				x.text = appendUnicodeEscape(appendUnicodeEscape(x.text, hi), lo)
				units += 2
			} else {
				x.text = append(x.text, in[i:i+size]...)
				units++
			}
			i += size
		}
	}
}

// appendUTF16Unit appends one UTF-16 unit as Jackson writes it in a
// string.
func appendUTF16Unit(dst []byte, u rune) []byte {
	switch {
	case u >= 0xD800 && u <= 0xDFFF:
		return appendUnicodeEscape(dst, u)
	case u < utf8.RuneSelf:
		if u < 0x20 || u == '"' || u == '\\' {
			return appendEscape(dst, byte(u))
		}
		return append(dst, byte(u))
	}
	return utf8.AppendRune(dst, u)
}

// number parses the number at x.pos by JSON's grammar, as Jackson reads
// it: an integer token is an int, a long or a big integer by its value;
// one with a fraction or an exponent a double. More than 1000 digits fail.
func (x *expander) number() (jnode, error) {
	in := x.in
	i := x.pos
	if in[i] == '-' {
		i++
	}
	digits := 0
	intStart := i
	for i < len(in) && in[i] >= '0' && in[i] <= '9' {
		i++
	}
	intDigits := i - intStart
	if intDigits == 0 || intDigits > 1 && in[intStart] == '0' {
		return jnode{}, errNotExpanded
	}
	digits += intDigits
	float := false
	if i < len(in) && in[i] == '.' {
		float = true
		i++
		start := i
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
		if i == start {
			return jnode{}, errNotExpanded
		}
		digits += i - start
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		float = true
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		start := i
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
		if i == start {
			return jnode{}, errNotExpanded
		}
		digits += i - start
	}
	if digits > jsonMaxNumberLen {
		return jnode{}, errNotExpanded
	}
	tok := in[x.pos:i]
	x.pos = i
	if float {
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return jnode{}, errNotExpanded
		}
		return jnode{kind: jDouble, num: math.Float64bits(f)}, nil
	}
	v, err := strconv.ParseInt(string(tok), 10, 64)
	switch {
	case err != nil:
		return jnode{kind: jBig}, nil
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return jnode{kind: jInt, num: uint64(v)}, nil
	}
	return jnode{kind: jLong, num: uint64(v)}, nil
}

// stype is a Connect schema's type.
type stype uint8

const (
	sString stype = iota
	sBool
	sInt32
	sInt64
	sFloat64
	sBytes
	sArray
	sStruct
)

// stypeNames are the types' names in JsonConverter's schemas.
var stypeNames = [...]string{sString: "string", sBool: "boolean", sInt32: "int32", sInt64: "int64",
	sFloat64: "double", sBytes: "bytes", sArray: "array", sStruct: "struct"}

// jschema is a Connect schema the router infers (JsonSchemaData): never
// a version, a doc, parameters or a default.
type jschema struct {
	typ      stype
	optional bool
	named    bool
	name     []byte // as written, without quotes; a struct's only
	fields   []jfield
	elem     *jschema // an array's
	hash     uint64   // of everything Connect's equals compares
}

// jfield is a struct's field.
type jfield struct {
	name []byte // as written, without quotes
	s    *jschema
}

// The optional primitive schemas, shared: Connect's Schema.OPTIONAL_*.
var (
	optString  = primitive(sString)
	optBool    = primitive(sBool)
	optInt32   = primitive(sInt32)
	optInt64   = primitive(sInt64)
	optFloat64 = primitive(sFloat64)
	optBytes   = primitive(sBytes)
)

func primitive(t stype) *jschema {
	s := &jschema{typ: t, optional: true}
	s.hash = s.hashOf()
	return s
}

// hashOf hashes what equal compares.
func (s *jschema) hashOf() uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64) { h = (h ^ v) * 1099511628211 }
	mix(uint64(s.typ))
	if s.optional {
		mix(1)
	}
	if s.named {
		mix(2)
		for _, c := range s.name {
			mix(uint64(c))
		}
	}
	for _, f := range s.fields {
		mix(3)
		for _, c := range f.name {
			mix(uint64(c))
		}
		mix(f.s.hash)
	}
	if s.elem != nil {
		mix(s.elem.hash)
	}
	return h
}

// equal is Connect's ConnectSchema.equals for the schemas inferred: type,
// optionality, name, fields (name, position, schema) and element schema.
func (s *jschema) equal(t *jschema) bool {
	if s == t {
		return true
	}
	if s.hash != t.hash || s.typ != t.typ || s.optional != t.optional || s.named != t.named ||
		!bytes.Equal(s.name, t.name) || len(s.fields) != len(t.fields) || (s.elem == nil) != (t.elem == nil) {
		return false
	}
	for i, f := range s.fields {
		if !bytes.Equal(f.name, t.fields[i].name) || !f.s.equal(t.fields[i].s) {
			return false
		}
	}
	return s.elem == nil || s.elem.equal(t.elem)
}

// arrayOf is an optional array of elem.
func arrayOf(elem *jschema) *jschema {
	s := &jschema{typ: sArray, optional: true, elem: elem}
	s.hash = s.hashOf()
	return s
}

// numberSchema is the schema of a number node: int32, int64, or float64
// (a double, and a big integer, which is neither int nor long).
func numberSchema(k jkind) *jschema {
	switch k {
	case jInt:
		return optInt32
	case jLong:
		return optInt64
	}
	return optFloat64
}

// nodeType is Jackson's JsonNodeType of a kind: true and false are both
// BOOLEAN, the numbers NUMBER.
func nodeType(k jkind) jkind {
	switch k {
	case jTrue:
		return jFalse
	case jLong, jBig, jDouble:
		return jInt
	}
	return k
}

// schemaOf infers node n's schema as JsonSchemaData.toConnectSchema does,
// key (named or not) naming a struct: nil for a value it drops.
func (x *expander) schemaOf(key []byte, named bool, n int32) (*jschema, error) {
	nd := &x.nodes[n]
	switch nd.kind {
	case jString:
		return optString, nil
	case jTrue, jFalse:
		return optBool, nil
	case jInt, jLong, jBig, jDouble:
		return numberSchema(nd.kind), nil
	case jNull:
		if x.nullBytes {
			return optBytes, nil
		}
		return nil, nil
	case jArray:
		if nd.a == nd.b {
			if x.emptyArrayString {
				return arrayOf(optString), nil
			}
			return nil, nil
		}
		elem, err := x.elementSchema(key, named, n)
		if err != nil {
			return nil, err
		}
		return arrayOf(elem), nil
	}
	s := &jschema{typ: sStruct, optional: true, named: named, name: key}
	for _, m := range x.children(n) {
		name := x.keyOf(m)
		fieldKey := name
		if named && !javaBlank(key) {
			start := len(x.text)
			x.text = append(append(append(x.text, key...), '.'), name...)
			fieldKey = x.text[start:len(x.text):len(x.text)]
		}
		child, err := x.schemaOf(fieldKey, true, m)
		if err != nil {
			return nil, err
		}
		if child == nil {
			continue
		}
		if len(name) == 0 {
			return nil, errNotExpanded // SchemaBuilder refuses a field without a name
		}
		s.fields = append(s.fields, jfield{name: name, s: child})
	}
	s.hash = s.hashOf()
	return s, nil
}

// elementSchema is the schema of the elements of the array n
// (toConnectSchemaWithCycles): the elements that are not null must be of
// one JSON type (numbers of one schema); objects give the merge of their
// distinct schemas, the other types the first element's.
func (x *expander) elementSchema(key []byte, named bool, n int32) (*jschema, error) {
	sample := int32(-1)
	var ref *jschema
	for _, e := range x.children(n) {
		k := x.nodes[e].kind
		if k == jNull {
			continue
		}
		if sample < 0 {
			sample = e
		}
		sk := x.nodes[sample].kind
		if nodeType(k) != nodeType(sk) {
			return nil, errNotExpanded // Field is not a homogenous array
		}
		if nodeType(sk) == jInt {
			if ref == nil {
				ref = numberSchema(sk)
			}
			if numberSchema(k) != ref {
				return nil, errNotExpanded
			}
		}
	}
	if sample >= 0 && x.nodes[sample].kind == jObject {
		// The router merges a HashSet of the objects' schemas, in an order
		// of their hash codes that changes from one JVM to another (the
		// codes of Schema.Type's constants are identity hash codes); the
		// relay merges them in the order they first appear.
		var distinct schemaSet
		for _, e := range x.children(n) {
			if x.nodes[e].kind != jObject {
				continue
			}
			s, err := x.schemaOf(key, named, e)
			if err != nil {
				return nil, err
			}
			distinct.add(s)
		}
		return mergeSchemas(distinct.list), nil
	}
	if sample < 0 {
		if x.nullBytes {
			return optBytes, nil
		}
		return nil, errNotExpanded // Array has unrecognized member schema
	}
	s, err := x.schemaOf(nil, false, sample)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, errNotExpanded
	}
	return s, nil
}

// schemaSet is a set of schemas, in the order they were added.
type schemaSet struct {
	list   []*jschema
	byHash map[uint64][]*jschema // once the list is long
}

// add adds s unless the set has a schema equal to it.
func (set *schemaSet) add(s *jschema) {
	if set.byHash == nil && len(set.list) < 8 {
		for _, t := range set.list {
			if t.equal(s) {
				return
			}
		}
		set.list = append(set.list, s)
		return
	}
	if set.byHash == nil {
		set.byHash = make(map[uint64][]*jschema, 2*len(set.list))
		for _, t := range set.list {
			set.byHash[t.hash] = append(set.byHash[t.hash], t)
		}
	}
	for _, t := range set.byHash[s.hash] {
		if t.equal(s) {
			return
		}
	}
	set.byHash[s.hash] = append(set.byHash[s.hash], s)
	set.list = append(set.list, s)
}

// mergeSchemas is the fold of JsonSchemaData.mergeSchema over structs, in
// their order: the first's fields, then each next one's others; a field
// of several keeps the first's schema, unless that is bytes (a null's),
// which the first schema other than bytes replaces. Merged from more than
// one, the struct is named as the first and not optional
// (SchemaUtil.copySchemaBasics copies no optionality).
func mergeSchemas(structs []*jschema) *jschema {
	if len(structs) == 1 {
		return structs[0]
	}
	m := &jschema{typ: sStruct, named: structs[0].named, name: structs[0].name}
	at := make(map[string]int, len(structs[0].fields))
	for _, s := range structs {
		for _, f := range s.fields {
			i, ok := at[string(f.name)]
			switch {
			case !ok:
				at[string(f.name)] = len(m.fields)
				m.fields = append(m.fields, f)
			case m.fields[i].s.typ == sBytes && f.s.typ != sBytes:
				m.fields[i].s = f.s
			}
		}
	}
	m.hash = m.hashOf()
	return m
}

// javaBlank says whether a name (as written) is blank to Java's
// String.trim: every character up to U+0020, which are written as a space
// or as an escape of a control character.
func javaBlank(name []byte) bool {
	for i := 0; i < len(name); {
		switch {
		case name[i] == ' ':
			i++
		case name[i] == '\\' && i+1 < len(name) && bytes.IndexByte([]byte("btnfr"), name[i+1]) >= 0:
			i += 2
		case name[i] == '\\' && i+5 < len(name) && name[i+1] == 'u' && name[i+2] == '0' && name[i+3] == '0' && name[i+4] <= '1':
			i += 6
		default:
			return false
		}
	}
	return true
}

// jwriter writes JSON as Jackson writes JsonConverter's tree, and fails
// past Jackson's nesting limit.
type jwriter struct {
	x     *expander
	out   []byte
	depth int
}

// open appends c, an opening bracket, one level deeper.
func (w *jwriter) open(c byte) error {
	w.depth++
	if w.depth > jsonMaxDepth {
		return fails("the payload nests deeper than Jackson writes (%d levels, the value's or, with schemas, its schema's), and JsonConverter fails the record", jsonMaxDepth)
	}
	w.out = append(w.out, c)
	return nil
}

// close appends c, a closing bracket.
func (w *jwriter) close(c byte) {
	w.depth--
	w.out = append(w.out, c)
}

// schema appends s as JsonConverter's asJsonSchema writes it; field, when
// set, names a struct's field (written last, as "field").
func (w *jwriter) schema(s *jschema, field []byte) error {
	if err := w.open('{'); err != nil {
		return err
	}
	w.out = append(append(append(w.out, `"type":"`...), stypeNames[s.typ]...), '"')
	switch s.typ {
	case sArray:
		w.out = append(w.out, `,"items":`...)
		if err := w.schema(s.elem, nil); err != nil {
			return err
		}
	case sStruct:
		w.out = append(w.out, `,"fields":`...)
		if err := w.open('['); err != nil {
			return err
		}
		for i, f := range s.fields {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			if err := w.schema(f.s, f.name); err != nil {
				return err
			}
		}
		w.close(']')
	}
	w.out = strconv.AppendBool(append(w.out, `,"optional":`...), s.optional)
	if s.named {
		w.out = append(append(append(w.out, `,"name":"`...), s.name...), '"')
	}
	if field != nil {
		w.out = append(append(append(w.out, `,"field":"`...), field...), '"')
	}
	w.close('}')
	return nil
}

// value appends node n as the value of schema s, as the router makes it
// (JsonSchemaData.toConnectData), Connect checks it (Struct.put) and
// JsonConverter writes it; it fails where they throw.
func (w *jwriter) value(n int32, s *jschema) error {
	if len(w.out) > expandMaxValue {
		return fails("the expanded value is larger than %d MiB, more than the relay sends in a record (and Kafka takes by default)", expandMaxValue>>20)
	}
	x := w.x
	nd := &x.nodes[n]
	want := sString
	switch nd.kind {
	case jNull:
		if !s.optional {
			return fails("an array holds a null among objects of differing fields, whose merged schema the router makes not optional (Struct.put then throws)")
		}
		w.out = append(w.out, "null"...)
		return nil
	case jString:
		w.out = append(w.out, x.text[nd.a:nd.b]...)
	case jTrue:
		want = sBool
		w.out = append(w.out, "true"...)
	case jFalse:
		want = sBool
		w.out = append(w.out, "false"...)
	case jInt:
		want = sInt32
		w.out = strconv.AppendInt(w.out, int64(nd.num), 10)
	case jLong:
		want = sInt64
		w.out = strconv.AppendInt(w.out, int64(nd.num), 10)
	case jDouble:
		want = sFloat64
		w.out = appendJavaDouble(w.out, math.Float64frombits(nd.num))
	case jBig:
		return fails("a number beyond 64-bit integers, which the router makes a BigDecimal that its inferred float64 schema refuses (Struct.put throws)")
	case jArray:
		want = sArray
		if s.typ == sArray {
			return w.array(n, s)
		}
	case jObject:
		want = sStruct
		if s.typ == sStruct {
			return w.object(n, s)
		}
	}
	if s.typ != want {
		return fails("an array's element has a %s where the schema the router infers from the array's first element (or its objects' merged fields) has a %s (Struct.put throws)",
			stypeNames[want], stypeNames[s.typ])
	}
	return nil
}

// array appends the array n of schema s.
func (w *jwriter) array(n int32, s *jschema) error {
	if err := w.open('['); err != nil {
		return err
	}
	for i, e := range w.x.children(n) {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		if err := w.value(e, s.elem); err != nil {
			return err
		}
	}
	w.close(']')
	return nil
}

// object appends the object n as the struct of schema s: each field in
// the schema's order, the member of its name or null.
func (w *jwriter) object(n int32, s *jschema) error {
	if err := w.open('{'); err != nil {
		return err
	}
	members := w.x.children(n)
	next := 0                   // the schema's fields are mostly the members, in order
	var byName map[string]int32 // else, in a large object, looked up by name
	for i, f := range s.fields {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		w.out = append(append(append(w.out, '"'), f.name...), `":`...)
		m := int32(-1)
		switch {
		case next < len(members) && bytes.Equal(w.x.keyOf(members[next]), f.name):
			m = members[next]
			next++
		case len(members) > 16:
			if byName == nil {
				byName = make(map[string]int32, len(members))
				for _, mm := range members {
					byName[string(w.x.keyOf(mm))] = mm
				}
			}
			if mm, ok := byName[string(f.name)]; ok {
				m = mm
			}
		default:
			for j, mm := range members {
				if bytes.Equal(w.x.keyOf(mm), f.name) {
					m, next = mm, j+1
					break
				}
			}
		}
		if m < 0 {
			w.out = append(w.out, "null"...) // every inferred field is optional
			continue
		}
		if err := w.value(m, f.s); err != nil {
			return err
		}
	}
	w.close('}')
	return nil
}

// appendJavaDouble appends f as Jackson writes a double: Java's
// Double.toString (the shortest digits that read back as f, at least two
// when one would do, as Java 19 and later choose them), an infinity as a
// string.
func appendJavaDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	case f == 0 && math.Signbit(f):
		return append(dst, "-0.0"...)
	case f == 0:
		return append(dst, "0.0"...)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var buf, buf2 [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d[.ddd]e±XX
	if e[1] != '.' {
		// One digit: Java writes the two-digit decimal closest to f when
		// it reads back as f (4.9E-324, not 5.0E-324).
		two := strconv.AppendFloat(buf2[:0], f, 'e', 1, 64)
		if v, err := strconv.ParseFloat(string(two), 64); err == nil && v == f {
			e = two
		}
	}
	mark := bytes.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(string(e[mark+1:]))
	var dbuf [24]byte
	digits := append(append(dbuf[:0], e[0]), e[min(2, mark):mark]...)
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if f >= 1e-3 && f < 1e7 {
		if exp < 0 {
			dst = append(dst, "0."...)
			for i := 0; i < -exp-1; i++ {
				dst = append(dst, '0')
			}
			return append(dst, digits...)
		}
		for i := 0; i <= exp; i++ {
			if i < len(digits) {
				dst = append(dst, digits[i])
			} else {
				dst = append(dst, '0')
			}
		}
		dst = append(dst, '.')
		if exp+1 >= len(digits) {
			return append(dst, '0')
		}
		return append(dst, digits[exp+1:]...)
	}
	dst = append(dst, digits[0], '.')
	if len(digits) == 1 {
		dst = append(dst, '0')
	} else {
		dst = append(dst, digits[1:]...)
	}
	return strconv.AppendInt(append(dst, 'E'), int64(exp), 10)
}
