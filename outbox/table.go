package outbox

import (
	"maps"
	"slices"
	"strings"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/progress"
	"github.com/cdc-relay/cdc-relay/status"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// Table is one outbox table the relay streams.
type Table struct {
	// Mapping maps its rows onto Kafka records.
	Mapping decoder.Mapping
	// WriteBack, if set, writes each event's outcome back to its row.
	WriteBack *writeback.Columns
	// Adopt, if set, is an SQL predicate over the table's columns (a
	// config file's adopt:, `migrate --adopt`): when the relay creates
	// its slot, and has never recorded one, the rows it selects as of the
	// slot's exported snapshot are adopted and sent by the poller, with
	// the rows of a pending status, none twice by the switch, for every
	// publisher the table's events go to. It is SQL run as it is, with
	// the role that creates the slot. It needs the id column, by which
	// the poller reads each row.
	Adopt string
	// AdoptBy, if set, is Adopt given per publisher (a config file's
	// adopt: as a mapping of publisher to predicate), instead of Adopt:
	// entry P is the predicate of the rows adopted for publisher P ("false"
	// adopts none for it). It names every publisher of the table
	// (AllPublishers) and no other (Sources.Validate).
	AdoptBy map[string]string
	// Progress, if set, is the team's own progress table, which the relay
	// keeps true while it runs (package progress): each topic's position
	// in the table's id order, and its errors; a topic paused there is
	// paused for the relay.
	Progress *progress.Table
	// ProgressPublishers names the rows of the table's publishers beside
	// Kafka in the progress table (a config file's progress: publishers:):
	// the value of its publisher column for each, by the relay's name of
	// the publisher. Progress.Publisher is Kafka's ("" for none). A
	// publisher it does not name has no rows kept there.
	ProgressPublishers map[string]string
	// RouteAdopt are the routes' own adopt predicates (a config file's
	// routes[i].adopt:), aligned with Mapping.Routes: entry i is route
	// i's, "" (or none, past the end) for a route without one. A route
	// with one adopts, for its topic, the rows it selects that match the
	// route's tags, instead of those Adopt selects; a route without one
	// adopts those Adopt selects (none without Adopt). Rows of a pending
	// status are adopted for every route they match. Each is SQL run as
	// Adopt is, when Adopt is, and needs the id column too; each applies
	// to every publisher of its route's events (AdoptPublishersOf).
	RouteAdopt []string
	// RouteAdoptBy are the routes' own adopt predicates given per
	// publisher (a config file's routes[i].adopt: as a mapping of
	// publisher to predicate), aligned with Mapping.Routes: entry i, when
	// not nil, is route i's instead of RouteAdopt[i], naming every
	// publisher of the route's events (AdoptPublishersOf) and no other.
	RouteAdoptBy []map[string]string
	// Publishers are the publishers the table's events go to, by name (a
	// config file's publishers:), each once: every event to every one.
	// Nil is [DefaultPublishers], Kafka's alone. With routes, it is the
	// publishers of each route that names none of its own.
	Publishers []string
	// RoutePublishers are the routes' own publishers (a config file's
	// routes[i].publishers:), aligned with Mapping.Routes: entry i is
	// route i's, nil (or none, past the end) for a route that takes the
	// table's.
	RoutePublishers [][]string
	// Ordering is the table's own ordering (a config file's ordering:),
	// overriding the relay's for the topics of the table: "key" (its
	// events in commit order by topic and record key) or "topic" (by
	// topic, with a key or without; the table needs known topics,
	// Topics); "" leaves the relay's.
	Ordering string
}

// OrderingTopic is the Ordering that orders a table's topics by topic.
const OrderingTopic = "topic"

// OrderedByTopic reports whether the table asks for its topics to be
// ordered by topic (Ordering is OrderingTopic).
func (t Table) OrderedByTopic() bool { return t.Ordering == OrderingTopic }

// Adopts reports whether the table adopts rows by a predicate when the
// relay creates its slot: Adopt or AdoptBy, or a route's RouteAdopt or
// RouteAdoptBy, is set. (Rows of a pending status are adopted whether or
// not it does.)
func (t Table) Adopts() bool {
	if t.Adopt != "" || len(t.AdoptBy) > 0 {
		return true
	}
	for i := range t.Mapping.Routes {
		if i < len(t.RouteAdopt) && t.RouteAdopt[i] != "" || i < len(t.RouteAdoptBy) && len(t.RouteAdoptBy[i]) > 0 {
			return true
		}
	}
	return false
}

// Name is the table's name as "schema.table", the schema spelled out (as
// Mapping has it: a config file's table: or --table parsed by
// decoder.ParseTable).
func (t Table) Name() string {
	return t.Mapping.Schema + "." + t.Mapping.Table
}

// Column is a column that a table's mapping or write-back names, with the
// key of a config file's table entry that names it.
type Column struct {
	// Name is the column's name.
	Name string
	// Key is the key that names it: "id", "key", "value", "topic" (an
	// input of the template), "topic_column", "headers.NAME" (the column of
	// header NAME), "headers_column", "envelope.NAME" (the column of
	// envelope field NAME), "tracing_span_context", "partition", "timestamp",
	// "tags_column", or
	// "write_back.status_column", "write_back.delivered_at_column",
	// "write_back.error_column", "write_back.attempts_column",
	// "write_back.next_attempt_column".
	Key string
}

// Columns lists every column the table names, in the order of the keys
// above, unset ones left out; a column named by two keys is listed twice.
// A header whose Mapping.HeaderNames leaves it unnamed is named like its
// column.
func (t Table) Columns() []Column {
	var cols []Column
	add := func(key, name string) {
		if name != "" {
			cols = append(cols, Column{Name: name, Key: key})
		}
	}
	m := t.Mapping
	add("id", m.IDColumn)
	add("key", m.KeyColumn)
	add("value", m.PayloadColumn)
	for _, c := range templateColumns(m.TopicTemplate) {
		add("topic", c)
	}
	add("topic_column", m.TopicColumn)
	for i, c := range m.HeaderColumns {
		name := c
		if i < len(m.HeaderNames) {
			name = m.HeaderNames[i]
		}
		add("headers."+name, c)
	}
	add("headers_column", m.HeadersColumn)
	for i, c := range m.EnvelopeColumns {
		add("envelope."+m.EnvelopeNames[i], c)
	}
	add("tracing_span_context", m.TracingSpanContextColumn)
	add("partition", m.PartitionColumn)
	add("timestamp", m.TimestampColumn)
	add("tags_column", m.TagsColumn)
	if wb := t.WriteBack; wb != nil {
		for _, c := range wb.WrittenColumns() {
			add("write_back."+c.Key, c.Name)
		}
	}
	return cols
}

// templateColumns returns the {column} inputs of a topic template, in
// order; a malformed template (decoder.Mapping.Validate refuses it) gives
// those before the mistake.
func templateColumns(tmpl string) []string {
	var cols []string
	for {
		open := strings.IndexByte(tmpl, '{')
		if open < 0 {
			return cols
		}
		end := strings.IndexByte(tmpl[open:], '}')
		if end < 0 {
			return cols
		}
		if c := tmpl[open+1 : open+end]; c != "" {
			cols = append(cols, c)
		}
		tmpl = tmpl[open+end+1:]
	}
}

// Clone is a copy of t that shares no list or map with it: changing the
// copy's header columns and names, routes, reserved topics, adopt
// predicates, publishers or write-back columns does not change t.
func (t Table) Clone() Table {
	m := t.Mapping
	m.HeaderColumns = slices.Clone(m.HeaderColumns)
	m.HeaderNames = slices.Clone(m.HeaderNames)
	m.ReservedTopics = slices.Clone(m.ReservedTopics)
	m.Routes = nil
	for _, r := range t.Mapping.Routes {
		m.Routes = append(m.Routes, decoder.Route{Topic: r.Topic, RequiredTags: slices.Clone(r.RequiredTags), AnyOfTags: slices.Clone(r.AnyOfTags)})
	}
	c := Table{Mapping: m, Adopt: t.Adopt, AdoptBy: maps.Clone(t.AdoptBy), RouteAdopt: slices.Clone(t.RouteAdopt), Ordering: t.Ordering,
		Publishers: slices.Clone(t.Publishers)}
	for _, by := range t.RouteAdoptBy {
		c.RouteAdoptBy = append(c.RouteAdoptBy, maps.Clone(by))
	}
	for _, p := range t.RoutePublishers {
		c.RoutePublishers = append(c.RoutePublishers, slices.Clone(p))
	}
	if t.WriteBack != nil {
		wb := *t.WriteBack
		wb.Pending = slices.Clone(wb.Pending)
		c.WriteBack = &wb
	}
	if t.Progress != nil {
		pt := *t.Progress
		pt.Paused = slices.Clone(pt.Paused)
		c.Progress = &pt
	}
	c.ProgressPublishers = maps.Clone(t.ProgressPublishers)
	return c
}

// KafkaPublisher is the name of the Kafka producer among a table's
// publishers: the relay's own, which a config file names but never
// defines. It is the status table's name of Kafka's rows
// (status.KafkaPublisher), which owns it: the one name of the publisher
// in the config file, the status table and the pause table.
const KafkaPublisher = status.KafkaPublisher

// DefaultPublishers are the publishers of a table that names none.
func DefaultPublishers() []string { return []string{KafkaPublisher} }

// RoutePublishersOf returns the publishers of route i (an index of
// Mapping.Routes): its own, else the table's, else DefaultPublishers. A
// table without routes has its Publishers, else DefaultPublishers, for
// any i.
func (t Table) RoutePublishersOf(i int) []string {
	if i >= 0 && i < len(t.Mapping.Routes) && i < len(t.RoutePublishers) && t.RoutePublishers[i] != nil {
		return t.RoutePublishers[i]
	}
	if t.Publishers != nil {
		return t.Publishers
	}
	return DefaultPublishers()
}

// AllPublishers returns every publisher the table's events may go to,
// each once, in the order they are first named (its routes' in turn when
// it has routes).
func (t Table) AllPublishers() []string {
	var all []string
	add := func(names []string) {
		for _, n := range names {
			if !slices.Contains(all, n) {
				all = append(all, n)
			}
		}
	}
	if len(t.Mapping.Routes) == 0 {
		add(t.RoutePublishersOf(0))
	}
	for i := range t.Mapping.Routes {
		add(t.RoutePublishersOf(i))
	}
	return all
}

// ProgressSource is the outbox table as its progress table follows it
// (see Progress): its id column, and the topics the relay adds a row
// for: its routes', or the one topic of a template that names no column.
func (t Table) ProgressSource() progress.Source {
	m := t.Mapping
	return progress.Source{Schema: m.Schema, Name: m.Table, IDColumn: m.IDColumn, Topics: t.Topics()}
}

// SendsTo reports whether the table's events of topic go to publisher,
// as the stream sends them: a topic's copy goes to every publisher of the
// topic's routes, whichever of them the event matched; a table without
// routes sends every event to its publishers.
func (t Table) SendsTo(topic, publisher string) bool {
	if len(t.Mapping.Routes) == 0 {
		return slices.Contains(t.RoutePublishersOf(0), publisher)
	}
	for i, r := range t.Mapping.Routes {
		if r.Topic == topic && slices.Contains(t.RoutePublishersOf(i), publisher) {
			return true
		}
	}
	return false
}

// PublisherProgress is a team's progress table as one publisher keeps
// its rows in it: a writer's (progress.Writer) and a status store's
// pauses (progress.Table.PausedTopics).
type PublisherProgress struct {
	// Publisher is the relay's publisher: KafkaPublisher or a webhook's.
	Publisher string
	// Table is the progress table, its Publisher the value of its
	// publisher column in the publisher's rows.
	Table progress.Table
	// Source is the outbox table as the publisher's rows follow it: the
	// topics of the routes that send to it (nil, as ProgressSource's,
	// when a column chooses them).
	Source progress.Source
}

// ProgressTables returns the progress table once for each publisher that
// keeps rows in it: Kafka, when Progress.Publisher is set, then those of
// ProgressPublishers in the order the table names its publishers. None
// without Progress.
func (t Table) ProgressTables() []PublisherProgress {
	if t.Progress == nil {
		return nil
	}
	var out []PublisherProgress
	for _, name := range t.AllPublishers() {
		team := t.ProgressPublishers[name]
		if name == KafkaPublisher {
			team = t.Progress.Publisher
		}
		if team == "" {
			continue
		}
		pt := *t.Progress
		pt.Publisher = team
		src := t.ProgressSource()
		if src.Topics != nil {
			src.Topics = t.publisherTopics(name)
		}
		out = append(out, PublisherProgress{Publisher: name, Table: pt, Source: src})
	}
	return out
}

// publisherTopics are the topics whose events go to publisher, each
// once, in order: those of the routes that name it, and of every route
// of such a topic (AdoptPublishersOf: the stream sends a topic's copy to
// every publisher of its routes); Topics when the table has no routes.
func (t Table) publisherTopics(publisher string) []string {
	if len(t.Mapping.Routes) == 0 {
		return t.Topics()
	}
	topics := []string{}
	for i, r := range t.Mapping.Routes {
		if slices.Contains(t.AdoptPublishersOf(i), publisher) && !slices.Contains(topics, r.Topic) {
			topics = append(topics, r.Topic)
		}
	}
	return topics
}

// OrderedTopics returns the topics the tables with ordering: topic
// order by topic, each once, in the tables' order: their Topics, which
// every table's events of them follow (the stricter order wins).
func OrderedTopics(tables []Table) []string {
	var topics []string
	for _, t := range tables {
		if !t.OrderedByTopic() {
			continue
		}
		for _, topic := range t.Topics() {
			if !slices.Contains(topics, topic) {
				topics = append(topics, topic)
			}
		}
	}
	return topics
}

// Topics returns the topics the table's events can go to when they are
// known without reading its rows: its routes' (each once, in order), or
// the one topic of a template that names no column; nil when a column
// chooses them (a topic column, a template naming a column).
func (t Table) Topics() []string {
	m := t.Mapping
	var topics []string
	for _, r := range m.Routes {
		if !slices.Contains(topics, r.Topic) {
			topics = append(topics, r.Topic)
		}
	}
	if len(m.Routes) == 0 && m.TopicColumn == "" {
		if parts, err := m.TemplateParts(); err == nil && len(parts) == 1 && parts[0].Column == "" {
			topics = []string{parts[0].Literal}
		}
	}
	return topics
}
