package config

import (
	"errors"
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// messageEntry is an entry of messages while it is read.
type messageEntry struct {
	m     decoder.MessageMapping
	where string         // "messages[i]"
	line  int            // the entry's line
	at    map[string]int // key → its line
	// badAllowed is set when its allowed_topics is refused: its topic is
	// then checked against nothing.
	badAllowed bool
}

// lineOf is key's line, or the entry's when the key is not set.
func (me *messageEntry) lineOf(key string) int {
	if l := me.at[key]; l > 0 {
		return l
	}
	return me.line
}

// messages reads the messages list: one entry per prefix.
func (p *parser) messages(e keyed, f *File) {
	n := e.value
	if isEmptyList(n) {
		p.problem(e.line, "messages is empty: list the message prefixes to relay, each with at least prefix:, or remove messages")
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.problem(e.line, "messages: want a list of message sources (- prefix: outbox ...)")
		return
	}
	firstAt := map[string]int{} // prefix → index
	lines := map[int]int{}      // index → line
	for i, item := range n.Content {
		item = deref(item)
		m, ok := p.message(item, i, f.AllowedTopics)
		if !ok {
			continue
		}
		if j, dup := firstAt[m.Prefix]; dup {
			p.problem(item.Line, "messages[%d] (%s): the prefix is listed already, as messages[%d] (line %d): one entry per prefix", i, m.Prefix, j, lines[j])
			continue
		}
		firstAt[m.Prefix], lines[i] = i, item.Line
		f.Messages = append(f.Messages, m)
	}
}

// message reads and checks the i-th entry of messages; fileAllowed is the
// file's allowed_topics, which its topic must match when the entry sets
// no allowed_topics of its own. ok is false when it has a problem.
func (p *parser) message(n *yaml.Node, i int, fileAllowed string) (decoder.MessageMapping, bool) {
	me := &messageEntry{where: fmt.Sprintf("messages[%d]", i), line: n.Line, at: map[string]int{}}
	before := len(p.problems)
	entries, ok := p.mapping(n, me.where, "a mapping, such as {prefix: outbox, topic: orders.events}", names(messageKeys))
	if !ok {
		return me.m, false
	}
	ctx := p.messagePrefix(me, entries)
	read(p, entries, ctx, messageKeys, me)
	p.checkMessage(me, ctx, fileAllowed)
	if len(p.problems) == before {
		// What Validate refuses and the checks above let through; with
		// the allowed topics the relay will give it.
		v := me.m
		if v.AllowedTopics == "" {
			v.AllowedTopics = fileAllowed
		}
		if err := v.Validate(); err != nil {
			p.problem(me.line, "%s%v", ctx, err)
		}
	}
	return me.m, len(p.problems) == before
}

// checkMessage checks what a message source needs, each problem at the
// line of the key it is about: a topic for payload-only content,
// key_field and id_field with payload_only only, a topic that its allowed
// topics allow.
func (p *parser) checkMessage(me *messageEntry, ctx, fileAllowed string) {
	m := &me.m
	if m.PayloadOnly && m.Topic == "" {
		p.problem(me.lineOf("payload_only"), "%spayload_only needs topic: the topic of every message, the content being only the record value", ctx)
	}
	for _, f := range []struct{ key, value string }{{"key_field", m.KeyField}, {"id_field", m.IDField}} {
		if !m.PayloadOnly && f.value != "" {
			p.problem(me.lineOf(f.key), "%s%s is for payload_only content: an envelope carries its own key and id; add payload_only: true, or remove %s", ctx, f.key, f.key)
		}
	}
	if m.Topic == "" || me.badAllowed {
		return
	}
	allowed := m.AllowedTopics
	if allowed == "" {
		allowed = fileAllowed
	}
	check, err := decoder.Mapping{AllowedTopics: allowed}.TopicCheck()
	if err != nil {
		return // reported at allowed_topics
	}
	if err := check(m.Topic); err != nil {
		p.problem(me.lineOf("topic"), "%stopic: %v", ctx, err)
	}
}

// messagePrefix reads the entry's prefix key, before the others since
// every other problem names the prefix, and returns the context of the
// entry's problems: "messages[0] (outbox): ", or "messages[0]: " without
// a good prefix.
func (p *parser) messagePrefix(me *messageEntry, entries []keyed) string {
	ctx := me.where + ": "
	named := false // a prefix key with a value, good or bad
	for _, e := range entries {
		me.at[e.key] = e.line
		if e.key == "prefix" {
			named = !isNull(e.value)
			me.m.Prefix, _ = p.str(e, ctx)
		}
	}
	if me.m.Prefix != "" {
		return fmt.Sprintf("%s (%s): ", me.where, me.m.Prefix)
	}
	if !named {
		p.problem(me.lineOf("prefix"), "%sneeds prefix: the prefix the application gives pg_logical_emit_message, such as %s", ctx, decoder.DefaultMessagePrefix)
	}
	return ctx
}

// readPayloadOnly reads payload_only: true or false.
func readPayloadOnly(p *parser, e keyed, ctx string, me *messageEntry) {
	v, ok := p.boolean(e, ctx)
	if ok {
		me.m.PayloadOnly = v
	}
}

// readMessageAllowedTopics reads a message source's allowed_topics, a Go
// regular expression.
func readMessageAllowedTopics(p *parser, e keyed, ctx string, me *messageEntry) {
	v, ok := p.str(e, ctx)
	if !ok || v == "" {
		return
	}
	if _, err := (decoder.Mapping{AllowedTopics: v}).TopicCheck(); err != nil {
		p.problem(e.line, "%sallowed_topics %q is not a Go regular expression: %v", ctx, v, errors.Unwrap(err))
		me.badAllowed = true
		return
	}
	me.m.AllowedTopics = v
}

// boolean reads a value that is true or false; null is false. Anything
// else is a problem (ok false).
func (p *parser) boolean(e keyed, ctx string) (bool, bool) {
	n := e.value
	if isNull(n) {
		return false, true
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		if v, err := strconv.ParseBool(n.Value); err == nil {
			return v, true
		}
	}
	p.problem(e.line, "%s%s: want true or false", ctx, e.key)
	return false, false
}
