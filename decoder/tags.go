package decoder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// PostgreSQL type OIDs a tags column may have.
const (
	oidJSON         = 114
	oidJSONB        = 3802
	oidTextArray    = 1009
	oidVarcharArray = 1015
)

// tagsType reports whether a column of type oid can hold tags.
func tagsType(oid uint32) bool {
	switch oid {
	case oidTextArray, oidVarcharArray, oidJSON, oidJSONB:
		return true
	}
	return false
}

// route is a Route ready to match: each tag is "key" (any value) or
// "key=value" (that value).
type route struct {
	topic           string
	required, anyOf []string
}

// routes checks the mapping's routes and returns them ready to match.
func (m Mapping) routes() ([]route, error) {
	if len(m.Routes) > 0 && m.TagsColumn == "" {
		return nil, fmt.Errorf("routes match the tags column: set it")
	}
	check, err := m.TopicCheck()
	if err != nil {
		return nil, err
	}
	rs := make([]route, 0, len(m.Routes))
	for i, r := range m.Routes {
		if err := check(r.Topic); err != nil {
			return nil, fmt.Errorf("route %d: %w", i+1, err)
		}
		if len(r.RequiredTags) == 0 && len(r.AnyOfTags) == 0 {
			return nil, fmt.Errorf("route %d (topic %q): set required tags or any-of tags", i+1, r.Topic)
		}
		for _, tag := range append(append([]string(nil), r.RequiredTags...), r.AnyOfTags...) {
			if tag == "" || tag[0] == '=' {
				return nil, fmt.Errorf("route %d (topic %q): tag %q: want key or key=value", i+1, r.Topic, tag)
			}
		}
		rs = append(rs, route{topic: r.Topic, required: r.RequiredTags, anyOf: r.AnyOfTags})
	}
	return rs, nil
}

// route returns the topics of t's routes that the tags column matches, in
// route order, in d.routed, each once: two routes that name one topic send
// the event to it once, where the first of them is. A NULL column has no
// tags.
func (d *Decoder) route(t *table, c column, typ uint32) ([]string, error) {
	d.routed = d.routed[:0]
	d.tags = d.tags[:0]
	if !c.null {
		var err error
		if typ == oidJSON || typ == oidJSONB {
			d.tags, err = appendJSONTags(d.tags, c.data)
		} else {
			d.tags, err = appendArrayTags(d.tags, c.data)
		}
		if err != nil {
			return nil, fmt.Errorf("tags column %q: %w", t.m.TagsColumn, err)
		}
	}
	for _, r := range t.routes {
		if r.matches(d.tags) && !slices.Contains(d.routed, r.topic) {
			d.routed = append(d.routed, r.topic)
		}
	}
	return d.routed, nil
}

// matches reports whether an event with these tags matches the route:
// every required tag is among them, and one of the any-of tags is (when
// there are any).
func (r *route) matches(tags [][]byte) bool {
	for _, want := range r.required {
		if !hasTag(tags, want) {
			return false
		}
	}
	if len(r.anyOf) == 0 {
		return true
	}
	for _, want := range r.anyOf {
		if hasTag(tags, want) {
			return true
		}
	}
	return false
}

// hasTag reports whether tags hold want: "key" matches a tag "key" or
// "key=anything", "key=value" only that tag.
func hasTag(tags [][]byte, want string) bool {
	for _, tag := range tags {
		if len(tag) < len(want) || string(tag[:len(want)]) != want {
			continue
		}
		if len(tag) == len(want) || tag[len(want)] == '=' && !strings.Contains(want, "=") {
			return true
		}
	}
	return false
}

// appendArrayTags appends the elements of a one-dimensional array in
// PostgreSQL's text form ({a,"b c",NULL}) to tags, skipping NULLs. Quoted
// elements are unescaped into new slices; the others alias data.
func appendArrayTags(tags [][]byte, data []byte) ([][]byte, error) {
	if len(data) > 0 && data[0] == '[' {
		// Bounds other than the default, "[0:1]={a,b}".
		if i := bytes.Index(data, []byte("]={")); i > 0 {
			data = data[i+2:]
		}
	}
	if len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}' {
		return tags, fmt.Errorf("not an array: %q", data)
	}
	b := data[1 : len(data)-1]
	for len(b) > 0 {
		var elem []byte
		if b[0] == '"' {
			var out []byte
			i := 1
			for ; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' && i+1 < len(b) {
					i++
				}
				out = append(out, b[i])
			}
			if i >= len(b) {
				return tags, fmt.Errorf("unterminated quoted element in %q", data)
			}
			elem, b = out, b[i+1:]
			if elem == nil {
				elem = []byte{}
			}
		} else {
			end := bytes.IndexByte(b, ',')
			if end < 0 {
				end = len(b)
			}
			elem, b = b[:end], b[end:]
			if string(elem) == "NULL" {
				elem = nil
			}
			if len(elem) > 0 && elem[0] == '{' {
				return tags, fmt.Errorf("a tags array must have one dimension: %q", data)
			}
		}
		if elem != nil {
			tags = append(tags, elem)
		}
		if len(b) > 0 {
			if b[0] != ',' {
				return tags, fmt.Errorf("malformed array %q", data)
			}
			b = b[1:]
		}
	}
	return tags, nil
}

// appendJSONTags appends the tags of a JSON array of strings ("key" or
// "key=value"), or of a JSON object (each key a tag "key=value" for a
// string, number or boolean value, "key" otherwise).
func appendJSONTags(tags [][]byte, data []byte) ([][]byte, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var list []*string
		if err := json.Unmarshal(data, &list); err != nil {
			return tags, fmt.Errorf("want a JSON array of strings or a JSON object: %w", err)
		}
		for _, s := range list {
			if s != nil {
				tags = append(tags, []byte(*s))
			}
		}
		return tags, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return tags, fmt.Errorf("want a JSON array of strings or a JSON object: %w", err)
	}
	for k, raw := range obj {
		var s string
		switch {
		case len(raw) > 0 && raw[0] == '"':
			if err := json.Unmarshal(raw, &s); err != nil {
				return tags, fmt.Errorf("tag %q: %w", k, err)
			}
		case len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' || raw[0] == 't' || raw[0] == 'f'):
			s = string(raw)
		default:
			tags = append(tags, []byte(k))
			continue
		}
		tags = append(tags, []byte(k+"="+s))
	}
	return tags, nil
}
