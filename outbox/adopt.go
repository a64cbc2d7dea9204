package outbox

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cdc-relay/cdc-relay/status"
)

// This file is what the switch-over adopts of a table, per publisher: a
// table's backlog is adopted once for each publisher its events go to,
// each by that publisher's predicates (Adopt and RouteAdopt for every
// publisher, AdoptBy and RouteAdoptBy per publisher).

// AdoptPublishersOf returns the publishers that route i's events go to,
// each once, in the order first named: those of every route of its
// topic (RoutePublishersOf of each), since the stream sends an event's
// copy of a topic to every publisher of the topic's routes, whichever
// of them the event matched. For a table without routes (or i < 0), its
// AllPublishers. A route's adopt applies to each of them, and a route's
// RouteAdoptBy names each.
func (t Table) AdoptPublishersOf(i int) []string {
	routes := t.Mapping.Routes
	if i < 0 || i >= len(routes) {
		return t.AllPublishers()
	}
	var out []string
	for j, r := range routes {
		if r.Topic != routes[i].Topic {
			continue
		}
		for _, p := range t.RoutePublishersOf(j) {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// AdoptOf returns the predicate by which route i's rows are adopted for
// publisher (i -1: the table's, Adopt or AdoptBy), and whether it is
// the publisher's own (an entry of AdoptBy or RouteAdoptBy) rather than
// every publisher's; "" when there is none (a route without one adopts
// by the table's: status.Adoptable.RouteWhere). A mapping that names no
// predicate for publisher gives "false", adopting nothing for it:
// ValidateAdopt refuses such a table.
func (t Table) AdoptOf(i int, publisher string) (where string, own bool) {
	by, one := t.AdoptBy, t.Adopt
	if i >= 0 {
		by, one = nil, ""
		if i < len(t.RouteAdoptBy) {
			by = t.RouteAdoptBy[i]
		}
		if i < len(t.RouteAdopt) && i < len(t.Mapping.Routes) {
			one = t.RouteAdopt[i]
		}
	}
	if len(by) == 0 {
		return one, false
	}
	if w, ok := by[publisher]; ok {
		return w, true
	}
	return "false", true
}

// Adoptables returns what a switch-over adopts of the table: one
// status.Adoptable per publisher its events go to (AllPublishers, in
// order), with its Publisher, adopting the rows of the routes whose
// events go to that publisher (AdoptPublishersOf; RouteIndex names
// them) by that publisher's predicates (AdoptOf), and the rows of a
// pending status (write_back's AdoptedValues) for each publisher alike.
// source names the table as the status table does (Sources.TableNames).
// None when the table adopts nothing: no predicate and no pending value.
// Each is adopted through its publisher's status store
// (status.Store.Adopt), so that every publisher gets the backlog of its
// events, each row once per (topic, publisher).
func (t Table) Adoptables(source string) []status.Adoptable {
	m := t.Mapping
	base := status.Adoptable{Schema: m.Schema, Name: m.Table, Source: source, IDColumn: m.IDColumn, TagsColumn: m.TagsColumn,
		KeyColumn: m.KeyColumn, TopicColumn: m.TopicColumn, TopicTemplate: m.TopicTemplate, TimestampColumn: m.TimestampColumn}
	if t.WriteBack != nil {
		base.StatusColumn, base.Pending = t.WriteBack.StatusColumn, t.WriteBack.AdoptedValues()
	}
	if len(base.Pending) == 0 && !t.Adopts() {
		return nil
	}
	var out []status.Adoptable
	for _, p := range t.AllPublishers() {
		a := base
		a.Publisher = p
		a.Where, a.OwnWhere = t.AdoptOf(-1, p)
		for i, r := range m.Routes {
			if !slices.Contains(t.AdoptPublishersOf(i), p) {
				continue
			}
			w, own := t.AdoptOf(i, p)
			a.Routes, a.RouteIndex = append(a.Routes, r), append(a.RouteIndex, i)
			a.RouteWhere, a.OwnRouteWhere = append(a.RouteWhere, w), append(a.OwnRouteWhere, own)
		}
		out = append(out, a)
	}
	return out
}

// AdoptByProblem is a mistake of an adopt predicate given per publisher
// (AdoptBy, a route's RouteAdoptBy): a publisher the table's or the
// route's events go to that it names no predicate for, whose backlog
// would be adopted by nobody, or a publisher they do not go to.
type AdoptByProblem struct {
	// Route is the route's index (the config file's routes[i]); -1 for
	// the table's adopt.
	Route int
	// Publisher is the publisher named, or not named.
	Publisher string
	// Missing is true when the mapping names no predicate for Publisher,
	// which the events go to; false when it names Publisher, which they
	// do not go to.
	Missing bool
	// Via, for a missing publisher of a route that does not name it
	// itself, is the index of another route of the same topic that does
	// (AdoptPublishersOf); -1 otherwise.
	Via int
	// Publishers are the publishers the events go to.
	Publishers []string
	// Topic is the route's topic; "" for the table's.
	Topic string
}

// Key is the problem's key as a config file writes it: "adopt", or
// "routes[1].adopt".
func (p AdoptByProblem) Key() string {
	if p.Route < 0 {
		return "adopt"
	}
	return fmt.Sprintf("routes[%d].adopt", p.Route)
}

// Error says what is wrong and what to do: give the missing publisher a
// predicate, or false; remove the entry, or send the events to it.
func (p AdoptByProblem) Error() string {
	whose := "the table's events go to"
	if p.Route >= 0 {
		whose = fmt.Sprintf("the route's events (topic %s) go to", p.Topic)
	}
	if !p.Missing {
		return fmt.Sprintf("%s.%s: %s %s only, not to publisher %q: remove %s.%s, or add the publisher to publishers:",
			p.Key(), p.Publisher, whose, strings.Join(p.Publishers, ", "), p.Publisher, p.Key(), p.Publisher)
	}
	via := ""
	if p.Via >= 0 {
		via = fmt.Sprintf(" (routes[%d] sends topic %s to it: an event's copy of a topic goes to every publisher of the topic's routes)", p.Via, p.Topic)
	}
	return fmt.Sprintf("%s names no predicate for publisher %q, which %s%s: its backlog would be adopted by nobody; "+
		"give it one (%s: position > …), or false to adopt nothing for it", p.Key(), p.Publisher, whose, via, p.Publisher)
}

// AdoptByProblems lists the mistakes of the table's adopt predicates
// given per publisher (AdoptBy, RouteAdoptBy), the table's first, then
// the routes' in order, each mapping's publishers in the order the
// events go to them, then the names it should not have, sorted: none
// when each names every publisher its events go to (AllPublishers,
// AdoptPublishersOf) and no other.
func (t Table) AdoptByProblems() []AdoptByProblem {
	var out []AdoptByProblem
	check := func(route int, by map[string]string, topic string) {
		if len(by) == 0 {
			return
		}
		pubs := t.AdoptPublishersOf(route)
		for _, p := range pubs {
			if _, ok := by[p]; !ok {
				via := -1
				if route >= 0 && !slices.Contains(t.RoutePublishersOf(route), p) {
					via = t.routeOfTopicTo(topic, p)
				}
				out = append(out, AdoptByProblem{Route: route, Publisher: p, Missing: true, Via: via, Publishers: pubs, Topic: topic})
			}
		}
		var extra []string
		for p := range by {
			if !slices.Contains(pubs, p) {
				extra = append(extra, p)
			}
		}
		slices.Sort(extra)
		for _, p := range extra {
			out = append(out, AdoptByProblem{Route: route, Publisher: p, Via: -1, Publishers: pubs, Topic: topic})
		}
	}
	check(-1, t.AdoptBy, "")
	for i, r := range t.Mapping.Routes {
		if i < len(t.RouteAdoptBy) {
			check(i, t.RouteAdoptBy[i], r.Topic)
		}
	}
	return out
}

// routeOfTopicTo is the first route of topic that names publisher among
// its own (RoutePublishersOf); -1 when none does.
func (t Table) routeOfTopicTo(topic, publisher string) int {
	for j, r := range t.Mapping.Routes {
		if r.Topic == topic && slices.Contains(t.RoutePublishersOf(j), publisher) {
			return j
		}
	}
	return -1
}

// ValidateAdopt checks the table's adopt predicates without the
// database: a table that adopts by a predicate has its id column, by
// which the poller reads each adopted row; no more route predicates
// than routes; a predicate given either as one or per publisher, not
// both; and each given per publisher has no blank predicate, and names
// every publisher its events go to and no other (AdoptByProblems), so
// that no publisher's backlog is left unadopted unsaid. name names the
// table in the error.
func (t Table) ValidateAdopt(name string) error {
	if t.Adopts() && t.Mapping.IDColumn == "" {
		return fmt.Errorf("table %s: adopting rows needs its id column: the poller reads each adopted row by its id", name)
	}
	routes := len(t.Mapping.Routes)
	if len(t.RouteAdopt) > routes || len(t.RouteAdoptBy) > routes {
		return fmt.Errorf("table %s: %d route adopt predicates for %d routes: give a route's predicate as adopt: of that route",
			name, max(len(t.RouteAdopt), len(t.RouteAdoptBy)), routes)
	}
	if t.Adopt != "" && len(t.AdoptBy) > 0 {
		return fmt.Errorf("table %s: adopt is given both as one predicate and per publisher: keep one", name)
	}
	for i := range t.RouteAdoptBy {
		if i < len(t.RouteAdopt) && t.RouteAdopt[i] != "" && len(t.RouteAdoptBy[i]) > 0 {
			return fmt.Errorf("table %s: routes[%d].adopt is given both as one predicate and per publisher: keep one", name, i)
		}
	}
	if err := t.blankAdoptBy(); err != "" {
		return fmt.Errorf("table %s: %s is empty: give the publisher's predicate, or false to adopt nothing for it", name, err)
	}
	if ps := t.AdoptByProblems(); len(ps) > 0 {
		return fmt.Errorf("table %s: %w", name, ps[0])
	}
	return nil
}

// blankAdoptBy names the first predicate given per publisher that is
// blank ("adopt.partner", "routes[0].adopt.partner"); "" when none is.
func (t Table) blankAdoptBy() string {
	blank := func(key string, by map[string]string) string {
		names := slices.Sorted(maps.Keys(by))
		for _, p := range names {
			if strings.TrimSpace(by[p]) == "" {
				return key + "." + p
			}
		}
		return ""
	}
	if b := blank("adopt", t.AdoptBy); b != "" {
		return b
	}
	for i, by := range t.RouteAdoptBy {
		if b := blank(fmt.Sprintf("routes[%d].adopt", i), by); b != "" {
			return b
		}
	}
	return ""
}
