package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/suggest"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// File is a parsed config file. A setting the file leaves out (or sets to
// null) is "" or nil: the caller applies its defaults and lets flags and
// environment variables win. Its String method never shows the password
// of PostgresURL.
type File struct {
	// PostgresURL is postgres_url, the connection string. It may hold a
	// password: never log or print it (String hides it).
	PostgresURL string
	// Kafka is kafka.
	Kafka Kafka
	// Slot is slot, the logical replication slot's name, checked as
	// PostgreSQL takes it (lower-case letters, digits, underscores).
	Slot string
	// Publication is publication, the publication of the tables.
	Publication string
	// StatusTable and CheckpointTable are status_table and
	// checkpoint_table, the relay's own tables, as "schema.table" or
	// "table" (--status-table and --checkpoint-table); checked with
	// [decoder.ParseTable].
	StatusTable, CheckpointTable string
	// AllowedTopics is allowed_topics (--allowed-topics): a Go regular
	// expression every topic must match whole. It applies to every table;
	// [Table.Mapping] leaves it out, since a flag may override it.
	AllowedTopics string
	// Tables are the outbox tables, at least one, each named once.
	Tables []Table
}

// Kafka is the file's kafka section.
type Kafka struct {
	// Brokers is brokers: the brokers to bootstrap from, "host:port" each.
	Brokers []string
}

// Table is one entry of tables: an outbox table and how its rows become
// Kafka records. Column names are "" when unset. [Parse] returns only
// tables that pass its checks; [Table.Mapping] and [Table.WriteBack] say
// what a table means to the decoder and to write-back.
type Table struct {
	// Table is table: "schema.table", or "table" in schema public.
	Table string
	// ID is id: the column sent as header "id" (consumers deduplicate on
	// it); write_back needs it, since it updates rows by id.
	ID string
	// Key is key: the column that is the record key. Optional.
	Key string
	// Value is value: the column that is the record value. Required.
	Value string
	// Topic is topic: a literal topic or a template of {column}s.
	Topic string
	// TopicColumn is topic_column: a column that, when not null, names the
	// topic and overrides Topic.
	TopicColumn string
	// Headers is headers: header name ← column, in the file's order.
	Headers []Header
	// HeadersColumn is headers_column: a json or jsonb object column whose
	// keys become headers too.
	HeadersColumn string
	// Timestamp is timestamp: the column that is the record timestamp.
	Timestamp string
	// TagsColumn is tags_column: the tags Routes match (a text[] of
	// "key=value" or "key" tags, or jsonb). Required with Routes, refused
	// without.
	TagsColumn string
	// Routes is routes: each matching route's topic gets a copy of the
	// event. Routes exclude Topic and TopicColumn.
	Routes []decoder.Route
	// WriteBackColumns is write_back, or nil: where the outcome of each
	// delivery is written back to the row.
	WriteBackColumns *writeback.Columns
}

// Header is one entry of a table's headers: the header Name carries
// Column.
type Header struct {
	Name, Column string
}

// Name is the table's name as "schema.table", the schema spelled out.
func (t Table) Name() string {
	schema, table, err := decoder.ParseTable(t.Table)
	if err != nil {
		return t.Table
	}
	return schema + "." + table
}

// Mapping is the decoder mapping the table means: each key of the table's
// entry in its role, the headers in the file's order (HeaderNames[i] names
// the header of HeaderColumns[i]). AllowedTopics is left empty: it is the
// file's (File.AllowedTopics) or the flag's. The result shares no memory
// with t.
func (t Table) Mapping() decoder.Mapping {
	schema, table, _ := decoder.ParseTable(t.Table)
	m := decoder.Mapping{
		Schema:          schema,
		Table:           table,
		IDColumn:        t.ID,
		KeyColumn:       t.Key,
		PayloadColumn:   t.Value,
		TopicColumn:     t.TopicColumn,
		HeadersColumn:   t.HeadersColumn,
		TimestampColumn: t.Timestamp,
		TopicTemplate:   t.Topic,
		TagsColumn:      t.TagsColumn,
	}
	for _, h := range t.Headers {
		m.HeaderColumns = append(m.HeaderColumns, h.Column)
		m.HeaderNames = append(m.HeaderNames, h.Name)
	}
	for _, r := range t.Routes {
		m.Routes = append(m.Routes, decoder.Route{Topic: r.Topic, RequiredTags: slices.Clone(r.RequiredTags), AnyOfTags: slices.Clone(r.AnyOfTags)})
	}
	return m
}

// WriteBack is a copy of the table's write_back columns, or nil when the
// table has none.
func (t Table) WriteBack() *writeback.Columns {
	if t.WriteBackColumns == nil {
		return nil
	}
	c := *t.WriteBackColumns
	return &c
}

// Column is a column that a table's entry names, with the key that names
// it.
type Column struct {
	// Name is the column's name.
	Name string
	// Key is the key that names it: "id", "key", "value", "topic" (an
	// input of the template), "topic_column", "headers.NAME" (the column of
	// header NAME), "headers_column", "timestamp", "tags_column", or
	// "write_back.status_column", "write_back.delivered_at_column",
	// "write_back.error_column".
	Key string
}

// Columns lists every column the table's entry names, in the order of the
// keys above; a column named by two keys is listed twice.
func (t Table) Columns() []Column {
	var cols []Column
	add := func(key, name string) {
		if name != "" {
			cols = append(cols, Column{Name: name, Key: key})
		}
	}
	add("id", t.ID)
	add("key", t.Key)
	add("value", t.Value)
	for _, c := range templateColumns(t.Topic) {
		add("topic", c)
	}
	add("topic_column", t.TopicColumn)
	for _, h := range t.Headers {
		add("headers."+h.Name, h.Column)
	}
	add("headers_column", t.HeadersColumn)
	add("timestamp", t.Timestamp)
	add("tags_column", t.TagsColumn)
	if wb := t.WriteBackColumns; wb != nil {
		add("write_back.status_column", wb.StatusColumn)
		add("write_back.delivered_at_column", wb.DeliveredAtColumn)
		add("write_back.error_column", wb.ErrorColumn)
	}
	return cols
}

// templateColumns returns the {column} inputs of a topic template, in
// order; a malformed template ([Parse] refuses it) gives those before the
// mistake.
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

// String describes the file for a log line or a person, with every
// password of PostgresURL masked ([pgerr.Redact]).
func (f File) String() string {
	var b strings.Builder
	b.WriteString("config{")
	if f.PostgresURL != "" {
		fmt.Fprintf(&b, "postgres_url: %s, ", pgerr.Redact(f.PostgresURL))
	}
	if len(f.Kafka.Brokers) > 0 {
		fmt.Fprintf(&b, "kafka.brokers: %s, ", strings.Join(f.Kafka.Brokers, ","))
	}
	for _, s := range []struct{ key, v string }{
		{"slot", f.Slot}, {"publication", f.Publication}, {"status_table", f.StatusTable},
		{"checkpoint_table", f.CheckpointTable}, {"allowed_topics", f.AllowedTopics},
	} {
		if s.v != "" {
			fmt.Fprintf(&b, "%s: %s, ", s.key, s.v)
		}
	}
	names := make([]string, len(f.Tables))
	for i, t := range f.Tables {
		names[i] = t.Name()
	}
	fmt.Fprintf(&b, "tables: [%s]}", strings.Join(names, " "))
	return b.String()
}

// GoString is String, so that %#v hides the password too.
func (f File) GoString() string { return f.String() }

// Problem is one mistake in a config file.
type Problem struct {
	// File is the file's name, as given to [Parse].
	File string
	// Line is the line of the mistake (1 for the file as a whole).
	Line int
	// Msg says what is wrong and what to do.
	Msg string
}

func (p *Problem) Error() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// Problems are every mistake [Parse] found in a file, in the order of
// their lines. Its Error puts each on its own line.
type Problems []*Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Load reads and parses the config file at path; see [Parse].
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the config file: %w", err)
	}
	return Parse(path, data)
}

// Parse parses a config file's contents; name is the file's name, for
// the errors. It checks what can be checked without the database and
// returns [Problems] listing every mistake, each with its line: unknown
// keys (with the key they may misspell), values of the wrong kind,
// duplicate keys, no tables or a table listed twice, a table without
// value, without topic, topic_column or routes, routes beside topic or
// topic_column or without tags_column, a route without topic or tags,
// write_back without status_column, delivered, failed or id, a malformed
// topic template, an illegal topic, a bad slot name or allowed_topics. No
// error shows the value of postgres_url.
func Parse(name string, data []byte) (*File, error) {
	p := &parser{name: name}
	f := &File{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		p.problem(1, "the file is empty: it needs tables: (see `cdc-relay check-config -h`)")
		return nil, p.problems
	case err != nil:
		return nil, Problems{p.yamlError(err)}
	}
	var more yaml.Node
	if err := dec.Decode(&more); err == nil {
		p.problem(more.Line, "a second YAML document (after ---): put everything in one")
	} else if !errors.Is(err, io.EOF) {
		p.problems = append(p.problems, p.yamlError(err))
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	p.file(root, f)
	if len(p.problems) > 0 {
		sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].Line < p.problems[j].Line })
		return nil, p.problems
	}
	return f, nil
}

// yamlLine is the line yaml.v3 names in its syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlError turns a YAML syntax error into a Problem at its line.
func (p *parser) yamlError(err error) *Problem {
	msg := err.Error()
	line := 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return &Problem{File: p.name, Line: line, Msg: "not valid YAML: " + msg}
}

// parser walks the YAML nodes of one file and collects its problems.
type parser struct {
	name     string
	problems Problems
}

func (p *parser) problem(line int, format string, args ...any) {
	if line < 1 {
		line = 1
	}
	p.problems = append(p.problems, &Problem{File: p.name, Line: line, Msg: fmt.Sprintf(format, args...)})
}

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
			if s := nearest(k.Value, known); s != "" {
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

// topLevelKeys are the keys of the file's top level.
var topLevelKeys = []string{"postgres_url", "kafka", "slot", "publication", "tables", "status_table", "checkpoint_table", "allowed_topics"}

// file reads the top level into f.
func (p *parser) file(root *yaml.Node, f *File) {
	if isNull(root) {
		p.problem(1, "the file is empty: it needs tables: (see `cdc-relay check-config -h`)")
		return
	}
	entries, ok := p.mapping(root, "", "a mapping of settings (postgres_url:, kafka:, slot:, publication:, tables:)", topLevelKeys)
	if !ok {
		return
	}
	var tables *keyed
	for i, e := range entries {
		switch e.key {
		case "postgres_url":
			// Never in a message: it may hold a password.
			if isNull(e.value) {
				continue
			}
			if e.value.Kind != yaml.ScalarNode || e.value.Value == "" {
				p.problem(e.line, "postgres_url: want a connection string, such as postgres://relay@db:5432/app")
				continue
			}
			f.PostgresURL = e.value.Value
		case "kafka":
			p.kafka(e, &f.Kafka)
		case "slot":
			if v, ok := p.str(e, ""); ok && v != "" {
				if err := replication.ValidSlotName(v); err != nil {
					p.problem(e.line, "slot: %v", err)
				}
				f.Slot = v
			}
		case "publication":
			f.Publication, _ = p.str(e, "")
		case "status_table", "checkpoint_table":
			v, ok := p.str(e, "")
			if !ok || v == "" {
				continue
			}
			if _, _, err := decoder.ParseTable(v); err != nil {
				p.problem(e.line, "%s: %v", e.key, err)
			}
			if e.key == "status_table" {
				f.StatusTable = v
			} else {
				f.CheckpointTable = v
			}
		case "allowed_topics":
			v, ok := p.str(e, "")
			if !ok || v == "" {
				continue
			}
			if _, err := (decoder.Mapping{AllowedTopics: v}).TopicCheck(); err != nil {
				p.problem(e.line, "allowed_topics %q is not a Go regular expression: %v", v, errors.Unwrap(err))
				continue
			}
			f.AllowedTopics = v
		case "tables":
			tables = &entries[i]
		}
	}
	if tables == nil {
		p.problem(1, "no tables: list the outbox tables under tables:, each with at least table:, value: and topic:")
		return
	}
	p.tables(*tables, f)
}

// kafka reads the kafka section.
func (p *parser) kafka(e keyed, k *Kafka) {
	if isNull(e.value) {
		return
	}
	entries, ok := p.mapping(e.value, "kafka", `a mapping, such as {brokers: ["kafka:9092"]}`, []string{"brokers"})
	if !ok {
		return
	}
	for _, b := range entries {
		k.Brokers, _ = p.list(b, "kafka.", `["kafka-1:9092", "kafka-2:9092"]`)
	}
}

// tableKeys are the keys of an entry of tables.
var tableKeys = []string{"table", "id", "key", "value", "topic", "topic_column", "headers", "headers_column",
	"timestamp", "tags_column", "routes", "write_back"}

// tables reads the tables list.
func (p *parser) tables(e keyed, f *File) {
	n := e.value
	if isNull(n) || n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		p.problem(e.line, "tables is empty: list the outbox tables, each with at least table:, value: and topic:")
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.problem(e.line, "tables: want a list of tables (- table: public.outbox ...)")
		return
	}
	topicCheck, err := decoder.Mapping{AllowedTopics: f.AllowedTopics}.TopicCheck()
	if err != nil {
		topicCheck = func(string) error { return nil } // reported at allowed_topics
	}
	firstAt := map[string]int{} // table name → index
	lines := map[int]int{}      // index → line
	for i, item := range n.Content {
		item = deref(item)
		t, ok := p.table(item, i, topicCheck)
		if !ok {
			continue
		}
		name := t.Name()
		if j, dup := firstAt[name]; dup {
			p.problem(item.Line, "tables[%d] (%s): the table is listed already, as tables[%d] (line %d): one entry per table", i, name, j, lines[j])
			continue
		}
		firstAt[name], lines[i] = i, item.Line
		f.Tables = append(f.Tables, t)
	}
}

// table reads and checks the i-th entry of tables; ok is false when it
// has a problem.
func (p *parser) table(n *yaml.Node, i int, topicCheck func(string) error) (Table, bool) {
	var t Table
	where := fmt.Sprintf("tables[%d]", i)
	before := len(p.problems)
	entries, ok := p.mapping(n, where, "a mapping, such as {table: public.outbox, value: payload, topic: orders}", tableKeys)
	if !ok {
		return t, false
	}
	at := map[string]int{} // key → line
	// The table's name first: every other problem names it.
	ctx := where + ": "
	named := false // a table key with a value, good or bad
	for _, e := range entries {
		at[e.key] = e.line
		if e.key == "table" {
			named = !isNull(e.value)
			v, ok := p.str(e, ctx)
			if !ok || v == "" {
				continue
			}
			if _, _, err := decoder.ParseTable(v); err != nil {
				p.problem(e.line, "%stable: %v", ctx, err)
				continue
			}
			t.Table = v
		}
	}
	if t.Table != "" {
		ctx = fmt.Sprintf("%s (%s): ", where, t.Name())
	} else if !named {
		p.problem(line0(at["table"], n.Line), "%sneeds table: the outbox table, as schema.table", ctx)
	}
	var routesLine int
	for _, e := range entries {
		switch e.key {
		case "table":
		case "id":
			t.ID, _ = p.str(e, ctx)
		case "key":
			t.Key, _ = p.str(e, ctx)
		case "value":
			t.Value, _ = p.str(e, ctx)
		case "topic":
			t.Topic, _ = p.str(e, ctx)
		case "topic_column":
			t.TopicColumn, _ = p.str(e, ctx)
		case "headers_column":
			t.HeadersColumn, _ = p.str(e, ctx)
		case "timestamp":
			t.Timestamp, _ = p.str(e, ctx)
		case "tags_column":
			t.TagsColumn, _ = p.str(e, ctx)
		case "headers":
			t.Headers = p.headers(e, ctx)
		case "routes":
			routesLine = e.line
			t.Routes = p.routes(e, where, ctx, topicCheck)
		case "write_back":
			t.WriteBackColumns = p.writeBack(e, where, ctx)
		}
	}
	line := func(key string) int {
		if l := at[key]; l > 0 {
			return l
		}
		return n.Line
	}

	// What a table needs, checked here rather than by Mapping.Validate.
	if t.Value == "" && (at["value"] == 0 || isNullKey(entries, "value")) {
		p.problem(line("value"), "%sneeds value: the column that is the record value", ctx)
	}
	switch {
	case routesLine > 0:
		if t.Topic != "" || t.TopicColumn != "" {
			key := "topic"
			if t.Topic == "" {
				key = "topic_column"
			}
			p.problem(line(key), "%s%s and routes exclude each other: routes choose the topics; remove %s", ctx, key, key)
		}
		if t.TagsColumn == "" {
			p.problem(routesLine, "%sroutes need tags_column: the column of tags the routes match", ctx)
		}
	case t.Topic == "" && t.TopicColumn == "":
		p.problem(n.Line, "%sneeds topic (a topic, or a template such as orders.{type}), topic_column, or routes", ctx)
	case t.TagsColumn != "":
		p.problem(line("tags_column"), "%stags_column is read by routes only: add routes, or remove tags_column", ctx)
	}
	if wb := t.WriteBackColumns; wb != nil && t.ID == "" {
		p.problem(line("write_back"), "%swrite_back needs id: it updates the rows by their id column", ctx)
	}
	if t.WriteBackColumns != nil && len(t.Routes) > 0 {
		// An event that matches no route is neither delivered nor parked:
		// its row would stay pending for good.
		p.problem(line("write_back"), "%swrite_back is not supported with routes: an event that matches no route has no outcome to write back", ctx)
	}
	for _, h := range t.Headers {
		if h.Name == "id" && t.ID != "" {
			p.problem(line("headers"), "%sheaders: header \"id\" is the header of the id column (id: %s): name the header otherwise", ctx, t.ID)
		}
	}

	// The rest of what the decoder checks: the template's syntax, the
	// header lists. Key and topic are checked above, and left out here:
	// Validate may still require them when routes or no key are meant.
	m := t.Mapping()
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
		p.problem(line(key), "%s%s: %s", ctx, key, strings.TrimPrefix(err.Error(), "mapping: "))
	} else if t.Topic != "" && !strings.Contains(t.Topic, "{") {
		if err := topicCheck(t.Topic); err != nil {
			p.problem(line("topic"), "%stopic: %v", ctx, err)
		}
	}
	return t, len(p.problems) == before
}

// line0 is line, or else if line is 0.
func line0(line, orElse int) int {
	if line > 0 {
		return line
	}
	return orElse
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

// headers reads a table's headers: a mapping of header name to column.
func (p *parser) headers(e keyed, ctx string) []Header {
	n := e.value
	if isNull(n) {
		return nil
	}
	const want = "a mapping of header name to column, such as {event_type: type}"
	if n.Kind != yaml.MappingNode {
		p.problem(e.line, "%sheaders: want %s", ctx, want)
		return nil
	}
	var hs []Header
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" || k.Value == "" {
			p.problem(k.Line, "%sheaders: want %s", ctx, want)
			continue
		}
		if first, ok := seen[k.Value]; ok {
			p.problem(k.Line, "%sheaders: header %q is set twice (first on line %d): keep one", ctx, k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		if v.Kind != yaml.ScalarNode || isNull(v) || v.Value == "" {
			p.problem(k.Line, "%sheaders: header %q needs the column it carries, such as %s: %s", ctx, k.Value, k.Value, k.Value)
			continue
		}
		hs = append(hs, Header{Name: k.Value, Column: v.Value})
	}
	return hs
}

// routeKeys are the keys of a route.
var routeKeys = []string{"topic", "required_tags", "any_of_tags"}

// routes reads a table's routes.
func (p *parser) routes(e keyed, where, ctx string, topicCheck func(string) error) []decoder.Route {
	n := e.value
	if isNull(n) || n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		p.problem(e.line, "%sroutes is empty: list the routes, such as - {topic: wallet-events, required_tags: [wallet_id]}, or remove routes", ctx)
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.problem(e.line, "%sroutes: want a list, such as - {topic: wallet-events, required_tags: [wallet_id]}", ctx)
		return nil
	}
	var routes []decoder.Route
	for i, item := range n.Content {
		item = deref(item)
		rwhere := fmt.Sprintf("%s.routes[%d]", where, i)
		rctx := fmt.Sprintf("%sroutes[%d]", ctx, i)
		entries, ok := p.mapping(item, rwhere, "a mapping, such as {topic: wallet-events, required_tags: [wallet_id]}", routeKeys)
		if !ok {
			continue
		}
		var r decoder.Route
		topicLine := item.Line
		for _, re := range entries {
			switch re.key {
			case "topic":
				r.Topic, _ = p.str(re, rctx+".")
				topicLine = re.line
			case "required_tags":
				r.RequiredTags, _ = p.list(re, rctx+".", "[wallet_id]")
			case "any_of_tags":
				r.AnyOfTags, _ = p.list(re, rctx+".", "[payment_id, transfer_id]")
			}
		}
		switch {
		case r.Topic == "":
			p.problem(item.Line, "%s needs topic", rctx)
		case strings.ContainsAny(r.Topic, "{}"):
			p.problem(topicLine, "%s: topic %q: a route's topic is a topic name, not a template", rctx, r.Topic)
		default:
			if err := topicCheck(r.Topic); err != nil {
				p.problem(topicLine, "%s: topic: %v", rctx, err)
			}
		}
		if len(r.RequiredTags) == 0 && len(r.AnyOfTags) == 0 {
			p.problem(item.Line, "%s needs required_tags or any_of_tags", rctx)
		}
		routes = append(routes, r)
	}
	return routes
}

// writeBackKeys are the keys of write_back.
var writeBackKeys = []string{"status_column", "delivered", "failed", "delivered_at_column", "error_column"}

// writeBack reads a table's write_back; null is nil.
func (p *parser) writeBack(e keyed, where, ctx string) *writeback.Columns {
	if isNull(e.value) {
		return nil
	}
	entries, ok := p.mapping(e.value, where+".write_back", "a mapping, such as {status_column: status, delivered: DELIVERED, failed: FAILED}", writeBackKeys)
	if !ok {
		return nil
	}
	wctx := ctx + "write_back."
	var c writeback.Columns
	for _, we := range entries {
		switch we.key {
		case "status_column":
			c.StatusColumn, _ = p.str(we, wctx)
		case "delivered":
			c.Delivered, _ = p.str(we, wctx)
		case "failed":
			c.Failed, _ = p.str(we, wctx)
		case "delivered_at_column":
			c.DeliveredAtColumn, _ = p.str(we, wctx)
		case "error_column":
			c.ErrorColumn, _ = p.str(we, wctx)
		}
	}
	var missing []string
	for _, m := range []struct{ key, v string }{{"status_column", c.StatusColumn}, {"delivered", c.Delivered}, {"failed", c.Failed}} {
		if m.v == "" {
			missing = append(missing, m.key)
		}
	}
	if len(missing) > 0 {
		p.problem(e.line, "%swrite_back needs %s: the status column and its values for a delivered and a parked event", ctx, strings.Join(missing, ", "))
	}
	return &c
}

// nearest returns the candidate that s most likely misspells (within
// about a third of its length, by edit distance), or "".
func nearest(s string, candidates []string) string {
	return suggest.Closest(strings.ToLower(s), candidates)
}
