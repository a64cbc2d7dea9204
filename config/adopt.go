package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// This file reads adopt, a table's and a route's: one SQL predicate, for
// every publisher of the events, or a mapping of publisher to predicate
// (outbox.Table.AdoptBy, RouteAdoptBy), which must name every publisher
// the events go to, so that no publisher's backlog is left out unsaid.

// adoptWant is what adopt takes, for its problems.
const adoptWant = "an SQL predicate over the table's columns, or a mapping of publisher to predicate, " +
	"such as {kafka: position > 4000, partner: position > 3500}"

// adoptRead is an adopt read as a mapping of publisher to predicate.
type adoptRead struct {
	by map[string]string // publisher → predicate; nil when adopt is no mapping
	at map[string]int    // each publisher named → its line, its predicate good or not
	// said is true when adopt is a mapping, or a list, whose problems
	// were said as it was read: it is not blank for checkAdopt.
	said bool
}

// readTableAdopt reads a table's adopt: a predicate (checked by
// checkAdopt), or a mapping of publisher to predicate.
func readTableAdopt(p *parser, e keyed, ctx string, te *tableEntry) {
	if isNull(e.value) || e.value.Kind == yaml.ScalarNode {
		te.t.Adopt, _ = p.str(e, ctx)
		return
	}
	te.adoptBy = p.adoptMapping(e, ctx)
	te.t.AdoptBy = te.adoptBy.by
}

// readRouteAdopt reads a route's adopt: an SQL predicate, not empty, or a
// mapping of publisher to predicate.
func readRouteAdopt(p *parser, e keyed, ctx string, r *routeEntry) {
	r.adoptLine = e.line
	if !isNull(e.value) && e.value.Kind != yaml.ScalarNode {
		r.adoptBy = p.adoptMapping(e, ctx)
		return
	}
	v, ok := p.str(e, ctx)
	if ok && strings.TrimSpace(v) == "" {
		p.problem(e.line, "%sadopt is empty: an SQL predicate over the table's columns, such as \"position > 4000\", or remove the route's adopt", ctx)
		return
	}
	r.adopt = v
}

// adoptMapping reads an adopt that is not a single value: a mapping of
// publisher to predicate, each predicate a single value, not blank. Which
// publishers it must name is checked with its table (checkAdoptBy).
func (p *parser) adoptMapping(e keyed, ctx string) adoptRead {
	r := adoptRead{said: true}
	n := e.value
	if n.Kind != yaml.MappingNode {
		p.problem(e.line, "%sadopt: want %s", ctx, adoptWant)
		return r
	}
	if len(n.Content) == 0 {
		p.problem(e.line, "%sadopt is empty: give each publisher of the events its predicate, such as {kafka: position > 4000, partner: position > 3500}, or remove adopt", ctx)
		return r
	}
	r.by, r.at = map[string]string{}, map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" || k.Value == "" {
			p.problem(k.Line, "%sadopt: want %s", ctx, adoptWant)
			continue
		}
		if first, ok := r.at[k.Value]; ok {
			p.problem(k.Line, "%sadopt.%s is set twice (first on line %d): keep one", ctx, k.Value, first)
			continue
		}
		r.at[k.Value] = k.Line
		switch {
		case v.Kind != yaml.ScalarNode:
			p.problem(k.Line, "%sadopt.%s: want an SQL predicate over the table's columns, such as \"position > 4000\", or false to adopt nothing for %s", ctx, k.Value, k.Value)
		case isNull(v) || strings.TrimSpace(v.Value) == "":
			p.problem(k.Line, "%sadopt.%s is empty: give publisher %s's predicate, such as \"position > 4000\", or false to adopt nothing for it", ctx, k.Value, k.Value)
		default:
			r.by[k.Value] = v.Value
		}
	}
	return r
}

// checkAdopt checks adopt: a predicate, or one per publisher
// (checkAdoptBy), and the id column the poller reads each adopted row by;
// and the routes' adopt (readRouteAdopt checked each is a predicate, or
// a mapping) need the id column too. A table's adopt that no route uses
// (each has its own) is warned of.
func (p *parser) checkAdopt(te *tableEntry, ctx string) {
	t := &te.t
	switch {
	case te.at["adopt"] == 0:
	case strings.TrimSpace(t.Adopt) == "" && !te.adoptBy.said:
		p.problem(te.lineOf("adopt"), "%sadopt is empty: an SQL predicate over the table's columns, such as \"position > 4000\", or remove adopt", ctx)
	case t.Mapping.IDColumn == "":
		p.problem(te.lineOf("adopt"), "%sadopt needs id: the relay reads each adopted row by its id column", ctx)
	}
	own := 0 // routes with an adopt of their own
	for i, at := range te.routeAt {
		if (i >= len(t.RouteAdopt) || t.RouteAdopt[i] == "") && at.adoptBy.by == nil {
			continue
		}
		own++
		if t.Mapping.IDColumn == "" {
			p.problem(at.adoptLine, "%sroutes[%d].adopt needs id: the relay reads each adopted row by its id column", ctx, at.index)
		}
	}
	if (t.Adopt != "" || t.AdoptBy != nil) && own > 0 && own == len(t.Mapping.Routes) {
		p.warn(te.lineOf("adopt"), "%sadopt is used by no route: each route has an adopt of its own, which it adopts by instead; remove the table's adopt", ctx)
	}
	p.checkAdoptBy(te, ctx)
}

// checkAdoptBy checks each adopt given per publisher (the table's, the
// routes') against the publishers its events go to
// (outbox.Table.AdoptByProblems): one it names no predicate for is a
// problem on adopt's line, unless its entry's problem was said; one it
// names that the events do not go to, on that entry's line.
func (p *parser) checkAdoptBy(te *tableEntry, ctx string) {
	for _, pr := range te.t.AdoptByProblems() {
		read, line := te.adoptBy, te.lineOf("adopt")
		if pr.Route >= 0 {
			at := te.routeAt[pr.Route]
			read, line, pr.Route = at.adoptBy, at.adoptLine, at.index
			if pr.Via >= 0 {
				pr.Via = te.routeAt[pr.Via].index
			}
		}
		if _, named := read.at[pr.Publisher]; named && pr.Missing {
			continue // named with a bad predicate: said as it was read
		}
		if !pr.Missing {
			line = read.at[pr.Publisher]
		}
		p.problem(line, "%s%v", ctx, pr)
	}
}
