package config

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cdc-relay/cdc-relay/internal/suggest"
)

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// in is the phrase that places a key: " in tables[0]", or "" at the top.
func in(where string) string {
	if where == "" {
		return ""
	}
	return " in " + where
}

// keyed is a key of a mapping and the value node under it.
type keyed struct {
	key   string
	line  int
	value *yaml.Node
}

// mapping returns the entries of a mapping node whose keys are among
// known, in the file's order; each unknown key, duplicate key or key that
// is not a plain string is a problem. what describes the mapping, for the
// error when n is not one.
func (p *parser) mapping(n *yaml.Node, where, what string, known []string) ([]keyed, bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.problem(n.Line, "%s: want %s", label(where), what)
		return nil, false
	}
	var out []keyed
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
			p.problem(k.Line, "unsupported key%s: keys are plain names (anchors may stand for values, not for keys or merges with <<)", in(where))
			continue
		}
		if first, ok := seen[k.Value]; ok {
			p.problem(k.Line, "key %q%s is set twice (first on line %d): keep one", k.Value, in(where), first)
			continue
		}
		seen[k.Value] = k.Line
		if !slices.Contains(known, k.Value) {
			msg := fmt.Sprintf("unknown key %q%s", k.Value, in(where))
			if s := suggest.Closest(strings.ToLower(k.Value), known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += " (known keys: " + strings.Join(known, ", ") + ")"
			}
			p.problem(k.Line, "%s", msg)
			continue
		}
		out = append(out, keyed{key: k.Value, line: k.Line, value: deref(v)})
	}
	return out, true
}

// label names where a problem is: "tables[0]", or "the file" at the top.
func label(where string) string {
	if where == "" {
		return "the file"
	}
	return where
}

// str reads a scalar value as its text: "" for null. An empty string,
// or a value that is a list or mapping, is a problem (ok false).
func (p *parser) str(e keyed, ctx string) (string, bool) {
	n := e.value
	if isNull(n) {
		return "", true
	}
	if n.Kind != yaml.ScalarNode {
		p.problem(e.line, "%s%s: want a single value, not a list or mapping", ctx, e.key)
		return "", false
	}
	if n.Value == "" {
		p.problem(e.line, "%s%s is empty: give a value, or null (or leave the key out) for none", ctx, e.key)
		return "", false
	}
	return n.Value, true
}

// list reads a list of scalar values; null is nil.
func (p *parser) list(e keyed, ctx, example string) ([]string, bool) {
	n := e.value
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.SequenceNode {
		p.problem(e.line, "%s%s: want a list, such as %s", ctx, e.key, example)
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		item = deref(item)
		if item.Kind != yaml.ScalarNode || isNull(item) || item.Value == "" {
			p.problem(item.Line, "%s%s[%d]: want a non-empty value", ctx, e.key, i)
			return nil, false
		}
		out = append(out, item.Value)
	}
	return out, true
}
