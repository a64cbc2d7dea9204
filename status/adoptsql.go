package status

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// routeAlias names the row of topics a routed table's row is adopted for;
// a name no predicate is likely to hold.
const routeAlias = "cdc_relay_route"

// adoptSQL builds the SELECT that Store.Adopt inserts and CheckAdopt
// plans: its text and its arguments, numbered as they are added.
type adoptSQL struct {
	t     Adoptable
	table string // the outbox table, quoted
	args  []any
	// pending is the condition of a pending status, over the table's
	// columns; "" without pending values. Set by selected.
	pending string
}

// arg adds v as the next argument and returns its placeholder.
func (b *adoptSQL) arg(v any) string {
	b.args = append(b.args, v)
	return fmt.Sprintf("$%d", len(b.args))
}

// adoptedAlias names the subquery of the rows the predicate selects, in
// which the relay's own filters are applied.
const adoptedAlias = "cdc_relay_adopted"

// column is the table's column name, quoted and qualified by the table,
// so that the predicate may name the table as its FROM names it.
func (b *adoptSQL) column(name string) string {
	return b.table + "." + pgx.Identifier{name}.Sanitize()
}

// selectedColumn is the column name of a selected row, outside the
// subquery that holds the predicate.
func (b *adoptSQL) selectedColumn(name string) string {
	return adoptedAlias + "." + pgx.Identifier{name}.Sanitize()
}

// adoptInto is the status table Adopt inserts the adopted rows into: its
// name (quoted), its publisher (an SQL literal) and the condition that
// the row cdc_relay_held is that publisher's (Store.mine). The zero
// value is none (CheckAdopt, CountAdopt).
type adoptInto struct {
	table, publisher, mine string
}

// adoptSelect returns the SELECT of t's rows to adopt, as status rows
// (event_id, source_table, topic, status, reload, last_error, record_key,
// and into's publisher with into), in the
// order of the id column, and its arguments. The rows are selected in a
// subquery of their own (a pending status, or a predicate, each
// predicate on lines of its own, so that one ending in a -- comment
// still closes), and the relay's filters (an id, a route) are applied
// outside it, so that no predicate, whatever parentheses it holds, can
// override them. When a route has a predicate of its own, the subquery
// also selects, per row, what selected it (routeFlags), and a route
// adopts the row only for what selects for it (routeSelects). With into
// an event the status table already holds to send for into's publisher
// (FAILED, WAITING or PAUSED: parked by an earlier slot's relay, whose
// row reads pending or retrying) is not adopted again, for that topic.
func adoptSelect(t Adoptable, into adoptInto) (string, []any) {
	b := &adoptSQL{t: t, table: pgx.Identifier{t.Schema, t.Name}.Sanitize()}
	id := b.selectedColumn(t.IDColumn)
	topic, order := "''", b.adoptOrder()
	where := b.selected()
	from := "(SELECT *, " + b.table + ".ctid AS " + ctidAlias + b.routeFlags() + " FROM " + b.table + " WHERE " + where + ") AS " + adoptedAlias
	if len(t.Routes) > 0 {
		topic, order = routeAlias+".topic", order+", "+routeAlias+".n"
		from += "\nCROSS JOIN LATERAL unnest(ARRAY[" + b.routeTopics() + "]::text[]) WITH ORDINALITY AS " + routeAlias + "(topic, n)"
	}
	if len(t.Routes) == 0 {
		topic = b.topic()
	}
	src := b.arg(t.Source)
	sel := "SELECT format('%s', " + id + "), " + src + "::text, " + topic + ", 'FAILED', true, " + b.arg(adoptedReason) + "::text, " + b.key()
	if into.table != "" {
		sel += ", " + into.publisher
	}
	sel += "\nFROM " + from +
		"\nWHERE " + id + " IS NOT NULL"
	if len(t.Routes) > 0 {
		sel += " AND " + routeAlias + ".topic IS NOT NULL"
	}
	if into.table != "" {
		held := "SELECT 1 FROM " + into.table + " AS cdc_relay_held WHERE cdc_relay_held.source_table = " + src + "::text" +
			" AND cdc_relay_held.event_id = format('%s', " + id + ") AND cdc_relay_held.status IN ('FAILED', 'WAITING', 'PAUSED') AND " + into.mine
		if len(t.Routes) > 0 {
			held += " AND cdc_relay_held.topic = " + routeAlias + ".topic"
		}
		sel += "\nAND NOT EXISTS (" + held + ")"
	}
	return sel + "\nORDER BY " + order, b.args
}

// ctidAlias names a selected row's ctid, its place in the table.
const ctidAlias = "cdc_relay_ctid"

// adoptOrder is the order the adopted rows are sent in, as near the
// order they were written as the table tells: an id of an integer type
// (a sequence's) is that order, or columns not read (CheckAdopt,
// CountAdopt: any order). Else (a uuid, say) the timestamp column's
// order, and within one timestamp (the rows of one transaction, with
// now()) their place in the table, which is the order they were written
// in while none of them was updated, then the id; without a timestamp
// column, their place. The order a poller that sorted by its timestamp
// sent them in, with the rows of one timestamp in order too.
func (b *adoptSQL) adoptOrder() string {
	id := b.selectedColumn(b.t.IDColumn)
	if b.t.columns == nil || b.t.columns[b.t.IDColumn] == integerColumn {
		return id
	}
	order := b.selectedColumn(ctidAlias) + ", " + id
	if _, ok := b.t.columns[b.t.TimestampColumn]; ok {
		order = b.selectedColumn(b.t.TimestampColumn) + ", " + order
	}
	return order
}

// key is the record key of a selected row, as the decoder reads it from
// the stream: a bytea column's bytes, another type's text as its output
// function writes it (format's %s: a char(n) padded, a domain over bytea
// as its hex text, as pgoutput names the domain's type); NULL without a
// key column (or columns read: Adopt's).
func (b *adoptSQL) key() string {
	kind, ok := b.t.columns[b.t.KeyColumn]
	switch {
	case !ok:
		return "NULL::bytea"
	case kind == byteaColumn:
		return b.selectedColumn(b.t.KeyColumn) + "::bytea"
	}
	return "convert_to(format('%s', " + b.selectedColumn(b.t.KeyColumn) + "), 'UTF8')"
}

// topic is the topic of a selected row of a table without routes, as the
// decoder renders it: the topic column's text when it is not NULL, else
// the template with each column's text in its place; the empty string
// when neither gives one (a template column NULL: the event is poison,
// and the poller parks it DEAD when it loads it).
func (b *adoptSQL) topic() string {
	var or []string
	if _, ok := b.t.columns[b.t.TopicColumn]; ok {
		or = append(or, b.selectedColumn(b.t.TopicColumn)+"::text")
	}
	parts, _ := decoder.Mapping{TopicTemplate: b.t.TopicTemplate}.TemplateParts()
	if len(parts) > 0 {
		var cat []string
		for _, p := range parts {
			_, ok := b.t.columns[p.Column]
			switch {
			case p.Column == "":
				cat = append(cat, b.arg(p.Literal)+"::text")
			case ok:
				cat = append(cat, b.selectedColumn(p.Column)+"::text")
			default:
				cat = append(cat, "NULL::text")
			}
		}
		or = append(or, "("+strings.Join(cat, " || ")+")")
	}
	return "coalesce(" + strings.Join(append(or, "''"), ", ") + ")"
}

// selected is the condition of the rows to adopt: a pending status, or
// the table's predicate, or a route's. It sets b.pending.
func (b *adoptSQL) selected() string {
	var or []string
	if len(b.t.Pending) > 0 {
		b.pending = "(" + b.column(b.t.StatusColumn) + "::text = ANY(" + b.arg(b.t.Pending) + "::text[]))"
		or = append(or, b.pending)
	}
	if w := b.t.tableWhere(); w != "" {
		or = append(or, predicate(w))
	}
	for i := range b.t.Routes {
		if w := b.t.routeWhere(i); w != "" {
			or = append(or, predicate(w))
		}
	}
	return strings.Join(or, " OR ")
}

// predicate is where, parenthesized on lines of its own: a predicate
// ending in a -- comment still closes.
func predicate(where string) string {
	return "(\n" + where + "\n)"
}

// The names of the columns routeFlags adds to a selected row: whether a
// pending status selected it, the table's predicate, route i's
// (routeFlag).
const (
	pendingFlag = "cdc_relay_pending"
	tableFlag   = "cdc_relay_adopt"
)

// routeFlag names the column of whether route i's predicate selected a
// row.
func routeFlag(i int) string {
	return fmt.Sprintf("cdc_relay_adopt_%d", i)
}

// routeFlags is, when a route has a predicate of its own, the columns the
// subquery adds to a selected row (after a comma): what selected it, each
// a boolean (or NULL, a predicate's NULL), evaluated where the table's
// columns are in scope: a pending status (pendingFlag), the table's
// predicate (tableFlag), and each route's own (routeFlag). "" otherwise:
// every route adopts what the subquery selects. selected must have run.
func (b *adoptSQL) routeFlags() string {
	if !b.t.routePredicates() {
		return ""
	}
	var cols []string
	if b.pending != "" {
		cols = append(cols, b.pending+" AS "+pendingFlag)
	}
	if w := b.t.tableWhere(); w != "" {
		cols = append(cols, predicate(w)+" AS "+tableFlag)
	}
	for i := range b.t.Routes {
		if w := b.t.routeWhere(i); w != "" {
			cols = append(cols, predicate(w)+" AS "+routeFlag(i))
		}
	}
	return ", " + strings.Join(cols, ", ")
}

// routeSelects is the condition of the selected row being adopted for
// route i, beside its tags, when a route has a predicate of its own: the
// route's own predicate selected it, or, for a route without one, the
// table's did; or its status is pending. ok is false when nothing can
// select a row for the route (no predicate of its own, the table none,
// no pending values). Without route predicates it is "", true: the
// subquery selects for every route.
func (b *adoptSQL) routeSelects(i int) (cond string, ok bool) {
	if !b.t.routePredicates() {
		return "", true
	}
	var or []string
	switch {
	case b.t.routeWhere(i) != "":
		or = append(or, b.selectedColumn(routeFlag(i)))
	case b.t.tableWhere() != "":
		or = append(or, b.selectedColumn(tableFlag))
	}
	if b.pending != "" {
		or = append(or, b.selectedColumn(pendingFlag))
	}
	if len(or) == 0 {
		return "", false
	}
	return "(" + strings.Join(or, " OR ") + ")", true
}

// routeTopics lists, for each topic of the routes (once, where its first
// route is), the topic when a route of it matches the row's tags (and
// selects the row for itself: routeSelects) and NULL otherwise, as the
// decoder routes an event. A route that can select no row is left out,
// and so is a topic of such routes only.
func (b *adoptSQL) routeTopics() string {
	var topics []string
	conds := map[string][]string{}
	for i, r := range b.t.Routes {
		sel, ok := b.routeSelects(i)
		if !ok {
			continue
		}
		if !slices.Contains(topics, r.Topic) {
			topics = append(topics, r.Topic)
		}
		cond := b.routeMatches(r)
		if sel != "" {
			cond += " AND " + sel
		}
		conds[r.Topic] = append(conds[r.Topic], "("+cond+")")
	}
	items := make([]string, len(topics))
	for i, topic := range topics {
		items[i] = "CASE WHEN " + strings.Join(conds[topic], " OR ") + " THEN " + b.arg(topic) + "::text END"
	}
	return strings.Join(items, ", ")
}

// routeMatches is the condition of r matching the row's tags: every
// required tag, and one of the any-of tags when it has some.
func (b *adoptSQL) routeMatches(r decoder.Route) string {
	var and []string
	for _, want := range r.RequiredTags {
		and = append(and, b.hasTag(want))
	}
	if len(r.AnyOfTags) > 0 {
		var or []string
		for _, want := range r.AnyOfTags {
			or = append(or, b.hasTag(want))
		}
		and = append(and, "("+strings.Join(or, " OR ")+")")
	}
	return strings.Join(and, " AND ")
}

// hasTag is the condition of the row's tags holding want, as the decoder
// matches a tag: "key=value" only that tag, "key" the tag "key" or any
// "key=value". A NULL tags column holds none.
func (b *adoptSQL) hasTag(want string) string {
	tags := b.selectedColumn(b.t.TagsColumn) + "::text[]"
	p := b.arg(want)
	if strings.Contains(want, "=") {
		return "coalesce(" + p + "::text = ANY(" + tags + "), false)"
	}
	return "EXISTS (SELECT FROM unnest(" + tags + ") AS cdc_relay_tag(v) WHERE v = " + p + "::text OR starts_with(v, " + p + "::text || '='))"
}
