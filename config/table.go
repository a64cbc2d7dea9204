package config

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// tableEntry is an entry of tables while it is read.
type tableEntry struct {
	t          outbox.Table
	where      string             // "tables[i]"
	line       int                // the entry's line
	at         map[string]int     // key → its line
	topicCheck func(string) error // the topics allowed_topics allows
	routesLine int                // routes' line; 0 without routes
	routeAt    []routeAt          // where each route read is, aligned with the routes
	wbAt       map[string]int     // write_back's key → its line
	adoptBy    adoptRead          // adopt, when a mapping of publisher to predicate

	progressPublishersLine int // progress's publishers' line; 0 without
}

// routeAt is where a route read is in the file.
type routeAt struct {
	index     int       // its index in routes (a route that is not a mapping is skipped)
	adoptLine int       // its adopt's line; 0 without
	adoptBy   adoptRead // its adopt, when a mapping of publisher to predicate
}

// lineOf is key's line, or the entry's when the key is not set.
func (te *tableEntry) lineOf(key string) int {
	if l := te.at[key]; l > 0 {
		return l
	}
	return te.line
}

// table reads and checks the i-th entry of tables; ok is false when it
// has a problem.
func (p *parser) table(n *yaml.Node, i int, topicCheck func(string) error) (outbox.Table, bool) {
	te := &tableEntry{where: fmt.Sprintf("tables[%d]", i), line: n.Line, at: map[string]int{}, topicCheck: topicCheck}
	before := len(p.problems)
	entries, ok := p.mapping(n, te.where, "a mapping, such as {table: public.outbox, value: payload, topic: orders}", names(tableKeys))
	if !ok {
		return te.t, false
	}
	ctx := p.tableName(te, entries)
	read(p, entries, ctx, tableKeys, te)
	p.checkTable(te, entries, ctx)
	p.checkMapping(te, ctx)
	return te.t, len(p.problems) == before
}

// tableName reads the entry's table key, before the others since every
// other problem names the table, and returns the context of the entry's
// problems: "tables[0] (public.outbox): ", or "tables[0]: " without a
// good name.
func (p *parser) tableName(te *tableEntry, entries []keyed) string {
	ctx := te.where + ": "
	named := false // a table key with a value, good or bad
	for _, e := range entries {
		te.at[e.key] = e.line
		if e.key == "table" {
			named = !isNull(e.value)
			v, ok := p.str(e, ctx)
			if !ok || v == "" {
				continue
			}
			schema, table, err := decoder.ParseTable(v)
			if err != nil {
				p.problem(e.line, "%stable: %v", ctx, err)
				continue
			}
			te.t.Mapping.Schema, te.t.Mapping.Table = schema, table
		}
	}
	if te.t.Mapping.Table != "" {
		return fmt.Sprintf("%s (%s): ", te.where, te.t.Name())
	}
	if !named {
		p.problem(te.lineOf("table"), "%sneeds table: the outbox table, as schema.table", ctx)
	}
	return ctx
}

// tableNameOf is the name of the entry's table, or "" while it has none
// valid.
func tableNameOf(te *tableEntry) string {
	if te.t.Mapping.Table == "" {
		return ""
	}
	return te.t.Name()
}

// checkTable checks what a table needs, here rather than by
// Mapping.Validate: a value, one way to choose the topic, write_back's id.
func (p *parser) checkTable(te *tableEntry, entries []keyed, ctx string) {
	t := &te.t.Mapping
	if t.PayloadColumn == "" && (te.at["value"] == 0 || isNullKey(entries, "value")) {
		p.problem(te.lineOf("value"), "%sneeds value: the column that is the record value", ctx)
	}
	switch {
	case te.routesLine > 0:
		if t.TopicTemplate != "" || t.TopicColumn != "" {
			key := "topic"
			if t.TopicTemplate == "" {
				key = "topic_column"
			}
			p.problem(te.lineOf(key), "%s%s and routes exclude each other: routes choose the topics; remove %s", ctx, key, key)
		}
		if t.TagsColumn == "" {
			p.problem(te.routesLine, "%sroutes need tags_column: the column of tags the routes match", ctx)
		}
	case t.TopicTemplate == "" && t.TopicColumn == "":
		p.problem(te.line, "%sneeds topic (a topic, or a template such as orders.{type}), topic_column, or routes", ctx)
	case t.TagsColumn != "":
		p.problem(te.lineOf("tags_column"), "%stags_column is read by routes only: add routes, or remove tags_column", ctx)
	}
	if wb := te.t.WriteBack; wb != nil && t.IDColumn == "" {
		p.problem(te.lineOf("write_back"), "%swrite_back needs id: it updates the rows by their id column", ctx)
	}
	p.checkAdopt(te, ctx)
	p.checkRecordShapes(te, ctx)
	p.checkProgress(te, ctx)
	p.checkOrdering(te, ctx)
	p.checkWriteBack(te, ctx)
	if te.t.WriteBack != nil && len(t.Routes) > 0 {
		// An event that matches no route is neither delivered nor parked:
		// its row would stay pending for good.
		p.problem(te.lineOf("write_back"), "%swrite_back is not supported with routes: an event that matches no route has no outcome to write back", ctx)
	}
	for _, h := range t.HeaderNames {
		if h == "id" && t.IDColumn != "" {
			p.problem(te.lineOf("headers"), "%sheaders: header \"id\" is the header of the id column (id: %s): name the header otherwise", ctx, t.IDColumn)
		}
	}
}

// checkRecordShapes refuses the keys that shape a table's records as
// Kafka Connect's converters and Debezium's router do on a table whose
// events go to a webhook publisher too: the webhook would get a JSON
// string for its payload, or the router's envelope, meant for the
// router's consumers on Kafka.
func (p *parser) checkRecordShapes(te *tableEntry, ctx string) {
	pubs := te.t.AllPublishers()
	if len(pubs) == 1 && pubs[0] == outbox.KafkaPublisher {
		return
	}
	others := slices.DeleteFunc(slices.Clone(pubs), func(p string) bool { return p == outbox.KafkaPublisher })
	m := te.t.Mapping
	for _, k := range []struct {
		key string
		set bool
	}{
		{"key_converter", m.KeyConverter != decoder.ConverterRaw},
		{"value_converter", m.ValueConverter != decoder.ConverterRaw},
		{"header_converter", m.HeaderConverter != decoder.ConverterRaw},
		{"envelope", len(m.EnvelopeColumns) > 0},
		{"envelope_schema_name", m.EnvelopeSchemaName != ""},
		{"expand_json_payload", m.ExpandJSONPayload},
		{"tombstone_on_empty_payload", m.TombstoneOnEmptyPayload},
	} {
		if k.set {
			p.problem(te.lineOf(k.key), "%s%s shapes Kafka records as Debezium's outbox router does, and the table's events go to the webhook publisher %s too, "+
				"which would receive them so: send this table to Kafka only, or remove %s", ctx, k.key, strings.Join(others, ", "), k.key)
		}
	}
}

// checkOrdering refuses ordering: topic on a table whose topics are not
// known without its rows (a topic column, a template naming a column):
// the relay orders by topic the topics it knows at start.
func (p *parser) checkOrdering(te *tableEntry, ctx string) {
	if !te.t.OrderedByTopic() || len(te.t.Topics()) > 0 {
		return
	}
	m := te.t.Mapping
	if len(m.Routes) == 0 && m.TopicTemplate == "" && m.TopicColumn == "" {
		return // no way to choose the topic: checkTable said so
	}
	p.problem(te.lineOf("ordering"), "%sordering topic needs the table's topics known at start, and a column chooses them here: "+
		"name its topics with routes: (or one fixed topic:), or set ordering: topic for the whole relay (--ordering topic)", ctx)
}

// checkMapping checks the rest of what the decoder checks: the template's
// syntax, the header lists, a literal topic. Key and topic are checked by
// checkTable, and left out here: Validate may still require them when
// routes or no key are meant.
func (p *parser) checkMapping(te *tableEntry, ctx string) {
	m := te.t.Mapping
	m.KeyColumn, m.Routes, m.TagsColumn = "-", nil, ""
	if m.TopicTemplate == "" && m.TopicColumn == "" {
		m.TopicTemplate = "-"
	}
	if m.PayloadColumn == "" {
		m.PayloadColumn = "-"
	}
	if m.Table == "" {
		m.Schema, m.Table = "-", "-"
	}
	if err := m.Validate(); err != nil {
		key := "table"
		if strings.Contains(err.Error(), "topic template") {
			key = "topic"
		}
		p.problem(te.lineOf(key), "%s%s: %s", ctx, key, strings.TrimPrefix(err.Error(), "mapping: "))
	} else if t := te.t.Mapping.TopicTemplate; t != "" && !strings.Contains(t, "{") {
		if err := te.topicCheck(t); err != nil {
			p.problem(te.lineOf("topic"), "%stopic: %v", ctx, err)
		}
	}
}

// isNullKey says whether key is set to null among entries.
func isNullKey(entries []keyed, key string) bool {
	for _, e := range entries {
		if e.key == key {
			return isNull(e.value)
		}
	}
	return false
}

// headers reads a table's headers: a mapping of header name to column,
// as the header names and their columns, in the file's order.
func (p *parser) headers(e keyed, ctx string) (headerNames, columns []string) {
	return p.namedColumns(e, ctx, "header", "{event_type: type}")
}

// namedColumns reads a mapping of name to column (e's key names it, each
// name an item, example a mapping to show), as the names and their
// columns, in the file's order.
func (p *parser) namedColumns(e keyed, ctx, item, example string) (names, columns []string) {
	n := e.value
	if isNull(n) {
		return nil, nil
	}
	want := fmt.Sprintf("a mapping of %s name to column, such as %s", item, example)
	if n.Kind != yaml.MappingNode {
		p.problem(e.line, "%s%s: want %s", ctx, e.key, want)
		return nil, nil
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" || k.Value == "" {
			p.problem(k.Line, "%s%s: want %s", ctx, e.key, want)
			continue
		}
		if first, ok := seen[k.Value]; ok {
			p.problem(k.Line, "%s%s: %s %q is set twice (first on line %d): keep one", ctx, e.key, item, k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		if v.Kind != yaml.ScalarNode || isNull(v) || v.Value == "" {
			p.problem(k.Line, "%s%s: %s %q needs the column it carries, such as %s: %s", ctx, e.key, item, k.Value, k.Value, k.Value)
			continue
		}
		names = append(names, k.Value)
		columns = append(columns, v.Value)
	}
	return names, columns
}

// routeEntry is a route while it is read.
type routeEntry struct {
	decoder.Route
	where      string    // "tables[i].routes[j]"
	table      string    // its table's name, "" when the table has none valid
	publishers []string  // the route's own publishers; nil without
	line       int       // the route's line
	topicLine  int       // topic's line; the route's without topic
	adopt      string    // the route's adopt predicate; "" without
	adoptLine  int       // adopt's line; 0 without
	adoptBy    adoptRead // the route's adopt, when a mapping of publisher to predicate
}

// routes reads a table's routes into te: the mapping's routes, and the
// route adopt predicates beside them, one each or per publisher (each
// set only when a route has one).
func (p *parser) routes(e keyed, te *tableEntry, ctx string) {
	n := e.value
	if isNull(n) || n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		p.problem(e.line, "%sroutes is empty: list the routes, such as - {topic: wallet-events, required_tags: [wallet_id]}, or remove routes", ctx)
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.problem(e.line, "%sroutes: want a list, such as - {topic: wallet-events, required_tags: [wallet_id]}", ctx)
		return
	}
	first := map[string]int{} // a topic's first route
	var adopts []string
	var adoptBys []map[string]string
	var publishers [][]string
	for i, item := range n.Content {
		item = deref(item)
		rwhere := fmt.Sprintf("%s.routes[%d]", te.where, i)
		rctx := fmt.Sprintf("%sroutes[%d]", ctx, i)
		entries, ok := p.mapping(item, rwhere, "a mapping, such as {topic: wallet-events, required_tags: [wallet_id]}", names(routeKeys))
		if !ok {
			continue
		}
		r := &routeEntry{where: rwhere, table: tableNameOf(te), line: item.Line, topicLine: item.Line}
		read(p, entries, rctx+".", routeKeys, r)
		p.checkRoute(r, rctx, te.topicCheck)
		if j, ok := first[r.Topic]; ok && r.Topic != "" {
			p.warn(r.topicLine, "%s: topic %q is routes[%d]'s too: an event that matches both is sent to it once", rctx, r.Topic, j)
		} else {
			first[r.Topic] = i
		}
		te.t.Mapping.Routes = append(te.t.Mapping.Routes, r.Route)
		adopts, te.routeAt = append(adopts, r.adopt), append(te.routeAt, routeAt{index: i, adoptLine: r.adoptLine, adoptBy: r.adoptBy})
		adoptBys = append(adoptBys, r.adoptBy.by)
		publishers = append(publishers, r.publishers)
	}
	if slices.ContainsFunc(adopts, func(a string) bool { return a != "" }) {
		te.t.RouteAdopt = adopts
	}
	if slices.ContainsFunc(adoptBys, func(by map[string]string) bool { return by != nil }) {
		te.t.RouteAdoptBy = adoptBys
	}
	if slices.ContainsFunc(publishers, func(p []string) bool { return p != nil }) {
		te.t.RoutePublishers = publishers
	}
}

// checkRoute checks a route read: its topic, a topic name topicCheck
// allows, and its tags.
func (p *parser) checkRoute(r *routeEntry, rctx string, topicCheck func(string) error) {
	switch {
	case r.Topic == "":
		p.problem(r.line, "%s needs topic", rctx)
	case strings.ContainsAny(r.Topic, "{}"):
		p.problem(r.topicLine, "%s: topic %q: a route's topic is a topic name, not a template", rctx, r.Topic)
	default:
		if err := topicCheck(r.Topic); err != nil {
			p.problem(r.topicLine, "%s: topic: %v", rctx, err)
		}
	}
	if len(r.RequiredTags) == 0 && len(r.AnyOfTags) == 0 {
		p.problem(r.line, "%s needs required_tags or any_of_tags", rctx)
	}
}
