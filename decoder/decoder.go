package decoder

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Kind says what a pgoutput message meant to the relay.
type Kind uint8

// The kinds of decoded messages.
const (
	// KindIgnored is every message the relay does not act on.
	KindIgnored Kind = iota
	// KindBegin opens a transaction.
	KindBegin
	// KindCommit closes it; Message.EndLSN is Commit.TransactionEndLSN.
	KindCommit
	// KindEvent is an INSERT on a mapped table; Message.Event is set, or
	// Message.Poison when the row cannot become a record.
	KindEvent
	// KindRelation is a Relation message for a mapped table (PostgreSQL
	// sends one before the first row of a table in a session, and again
	// after its schema changed); Message.Relation describes it.
	KindRelation
)

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// Event is one outbox row as a Kafka record. Its byte slices are its own
// (copied out of the replication buffer) and stay valid after the next
// Decode; the Headers slice itself is the decoder's and is reused by the
// next Decode: copy it to keep it.
type Event struct {
	// ID is the event id column's text, or nil.
	ID []byte
	// Topic is the validated destination topic.
	Topic string
	// Key is the record key; nil for a NULL key.
	Key []byte
	// Value is the payload as PostgreSQL renders it; nil for NULL.
	Value []byte
	// Headers are "id", the header columns, then the headers object's keys.
	Headers []Header
	// Timestamp is the record timestamp; zero lets the producer set it.
	Timestamp time.Time
	// CommitLSN is the LSN of the commit record of the event's transaction.
	CommitLSN uint64
	// Table is the index of the event's table among the decoder's
	// mappings.
	Table int
}

// Size is the event's approximate in-memory size, for in-flight limits. It
// is at least the bytes the decoder allocated for the event: an event holds
// copies of its own columns only, never the rest of the row.
func (e *Event) Size() int {
	n := 128 + len(e.Topic) + len(e.Key) + len(e.Value)
	for _, h := range e.Headers {
		n += 32 + len(h.Key) + len(h.Value)
	}
	return n
}

// Message is the decoded meaning of one pgoutput message.
type Message struct {
	Kind Kind
	// EndLSN is set on KindCommit: the end of the commit record, the
	// position to confirm once every event of the transaction is delivered.
	EndLSN uint64
	// CommitTime is set on KindBegin: when the transaction committed, by
	// the server's clock.
	CommitTime time.Time
	// CommitLSN is set on KindBegin: where the transaction's commit record
	// begins. A transaction ends at or before a transaction end position
	// exactly when its CommitLSN is below it.
	CommitLSN uint64
	// Event is set on KindEvent.
	Event Event
	// Poison is set on KindEvent when the row is on the mapped table but
	// cannot become a record (a NULL topic column in the template, an
	// illegal topic name, a topic Mapping.AllowedTopics does not allow, a
	// headers value that is not a JSON object, a table whose columns did
	// not fit the mapping when the row was written). Event then holds what
	// could be decoded. Poison rows are permanent failures: they belong in
	// the status table, and the stream goes on.
	Poison error
	// Relation is set on KindRelation.
	Relation Relation
	// Routed is set on KindEvent when the event's table routes by tags
	// (Mapping.Routes): Routes then lists the topics of the routes the
	// event matched, in route order, and Event.Topic is empty. An event
	// that matched no route has Routed set and no Routes. Routes is the
	// decoder's and is reused by the next Decode.
	Routed bool
	Routes []string
}

// Relation is what a Relation message for a mapped table says.
type Relation struct {
	// Table is the index of the table's mapping among the decoder's.
	Table int
	// OID is the table's OID. Another OID under the mapped name is another
	// table: the outbox table was dropped and created again.
	OID uint32
	// Unfit is nil when the table's columns, as they were when its rows
	// were written, fit the mapping. Otherwise every row of the table is
	// Poison until the next Relation message for it (the table's schema
	// changed back): the stream never stops on a schema of the past, which
	// PostgreSQL sends again on every restart until the slot passes it.
	Unfit *MappingError
}

// PostgreSQL type OIDs the decoder checks column types against.
const (
	oidBytea       = 17
	oidInt8        = 20
	oidTimestamp   = 1114
	oidTimestamptz = 1184
)

// relation is a cached Relation message, resolved against its table's
// mapping when it names a mapped table.
type relation struct {
	t     *table // nil: not a mapped table
	ncols int
	// Column indexes by role; -1 when the table lacks the column.
	id, key, payload, topic, headers, ts, tags int
	tsType, tagsType                           uint32
	// keyBytes and payloadBytes say the key or payload column is bytea:
	// its text form (\x and hex) is decoded to the bytes themselves.
	keyBytes, payloadBytes bool
	headerCols             []int
	headerNames            []string
	template               []templatePart // column parts resolved in templateCols
	templateCols           []int
	// poison, when set, is the reason every row of the relation is parked:
	// its columns did not fit the mapping. noTopic says the rows lack a
	// required column: their parked copies get no topic.
	poison  error
	noTopic bool
	// kept are the distinct columns whose bytes an event keeps (id, key,
	// payload, header columns): only these are copied out of the message.
	kept []int
}

// table is one mapped table and what the decoder derived from its mapping.
type table struct {
	index    int
	m        Mapping
	template []templatePart
	// topics interns rendered topic names, so a topic is validated and
	// allocated once while cached, not once per event.
	topics *topicCache
	routes []route
}

// Decoder decodes pgoutput (protocol version 1) messages. Create it with
// [New].
type Decoder struct {
	tables    []*table
	relations map[uint32]*relation
	commitLSN uint64
	rel       Relation // the last Relation message's, when it was for a mapped table

	// spans locates the current tuple's columns, reused across inserts.
	spans []span
	// headers backs Event.Headers, reused across inserts.
	headers []Header
	// routed backs Message.Routes, and tags holds an event's tags while
	// its routes are matched; both reused across inserts.
	routed  []string
	tags    [][]byte
	scratch []byte
}

// column is one decoded tuple column: null, or its text bytes.
type column struct {
	null bool
	data []byte
}

// New returns a decoder for the tables of ms, which it tells apart by
// their index (Event.Table, Relation.Table), or an error if a mapping is
// invalid or two map the same table.
func New(ms ...Mapping) (*Decoder, error) {
	return newDecoder(ms, maxTopicCache)
}

// newDecoder is New with topic caches of topicCacheSize names.
func newDecoder(ms []Mapping, topicCacheSize int) (*Decoder, error) {
	if len(ms) == 0 {
		return nil, fmt.Errorf("mapping: no table to relay")
	}
	d := &Decoder{relations: make(map[uint32]*relation)}
	for i, m := range ms {
		if err := m.Validate(); err != nil {
			return nil, err
		}
		for _, o := range ms[:i] {
			if o.Schema == m.Schema && o.Table == m.Table {
				return nil, fmt.Errorf("mapping: table %s.%s is mapped twice", m.Schema, m.Table)
			}
		}
		tmpl, _ := parseTemplate(m.TopicTemplate)
		check, _ := m.TopicCheck()
		routes, _ := m.routes()
		d.tables = append(d.tables, &table{index: i, m: m, template: tmpl, topics: newTopicCache(topicCacheSize, check), routes: routes})
	}
	return d, nil
}

// ErrMalformed wraps errors from messages that do not follow the pgoutput
// format. The stream cannot continue past such a message.
var ErrMalformed = errors.New("malformed pgoutput message")

// MappingError says the outbox table's columns do not fit the Mapping: a
// required column is missing (Missing names it), or the timestamp column
// has a type the mapping cannot use.
type MappingError struct {
	Table string
	Err   error
	// Missing is the required column the table lacks; "" when the problem
	// is a column's type.
	Missing string
}

func (e *MappingError) Error() string { return "outbox table " + e.Table + ": " + e.Err.Error() }

func (e *MappingError) Unwrap() error { return e.Err }

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Decode decodes one pgoutput message (the WAL data of one XLogData). data
// is only read during the call. A returned error is fatal for the stream: a
// malformed message. Rows that cannot be relayed are reported in
// Message.Poison instead, and a mapped table whose columns do not fit the
// mapping in Message.Relation.Unfit.
func (d *Decoder) Decode(data []byte) (Message, error) {
	if len(data) == 0 {
		return Message{}, malformed("empty message")
	}
	switch data[0] {
	case 'B':
		// Begin: final (commit) LSN, commit timestamp, xid.
		if len(data) < 21 {
			return Message{}, malformed("short Begin (%d bytes)", len(data))
		}
		d.commitLSN = binary.BigEndian.Uint64(data[1:9])
		return Message{Kind: KindBegin, CommitLSN: d.commitLSN, CommitTime: pgTime(int64(binary.BigEndian.Uint64(data[9:17])))}, nil
	case 'C':
		// Commit: flags, commit LSN, end LSN, commit timestamp.
		if len(data) < 26 {
			return Message{}, malformed("short Commit (%d bytes)", len(data))
		}
		return Message{Kind: KindCommit, EndLSN: binary.BigEndian.Uint64(data[10:18])}, nil
	case 'R':
		if err := d.relation(data[1:]); err != nil || d.rel.OID == 0 {
			return Message{}, err
		}
		return Message{Kind: KindRelation, Relation: d.rel}, nil
	case 'I':
		return d.insert(data[1:])
	default:
		return Message{}, nil
	}
}

// cstring reads a NUL-terminated string.
func cstring(b []byte) (string, []byte, error) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", nil, malformed("unterminated string")
	}
	return string(b[:i]), b[i+1:], nil
}

func (d *Decoder) relation(b []byte) error {
	if len(b) < 4 {
		return malformed("short Relation")
	}
	relID := binary.BigEndian.Uint32(b)
	nsp, b, err := cstring(b[4:])
	if err != nil {
		return err
	}
	name, b, err := cstring(b)
	if err != nil {
		return err
	}
	if len(b) < 3 {
		return malformed("short Relation %s.%s", nsp, name)
	}
	ncols := int(binary.BigEndian.Uint16(b[1:3]))
	b = b[3:]
	names := make([]string, ncols)
	types := make([]uint32, ncols)
	for i := 0; i < ncols; i++ {
		if len(b) < 1 {
			return malformed("short Relation column")
		}
		names[i], b, err = cstring(b[1:])
		if err != nil {
			return err
		}
		if len(b) < 8 {
			return malformed("short Relation column %q", names[i])
		}
		types[i] = binary.BigEndian.Uint32(b)
		b = b[8:]
	}
	rel := &relation{ncols: ncols}
	d.rel = Relation{}
	if t := d.table(nsp, name); t != nil {
		d.rel.OID, d.rel.Table = relID, t.index
		if me := resolve(t, rel, names, types); me != nil {
			me.Table = nsp + "." + name
			d.rel.Unfit = me
			rel.poison, rel.noTopic = poisonOf(me), me.Missing != ""
		}
	}
	d.relations[relID] = rel
	return nil
}

// table returns the mapping of table schema.name, or nil.
func (d *Decoder) table(schema, name string) *table {
	for _, t := range d.tables {
		if t.m.Schema == schema && t.m.Table == name {
			return t
		}
	}
	return nil
}

// poisonOf is the reason each row of an unfit relation is parked with.
func poisonOf(me *MappingError) error {
	if me.Missing != "" {
		return fmt.Errorf("%w; the row is still in the outbox table: publish it again from there (`cdc-relay recover --since TIME`). "+
			"Its parked copy has no topic, so that `cdc-relay failed retry` cannot deliver it without the column", me)
	}
	return fmt.Errorf("%w; the parked copy has every part of the record but its timestamp: "+
		"`cdc-relay failed retry` delivers it with the time of delivery", me)
}

// roleFlags names the flag of `cdc-relay run` that maps each required role.
var roleFlags = map[string]string{
	"record key":           "--key-column, or key: in a config file",
	"payload":              "--payload-column, or value: in a config file",
	"header column":        "--header-columns, or headers: in a config file",
	"topic template input": "--topic-template, or topic: in a config file",
	"tags column":          "tags_column: in the config file",
}

// resolve maps the roles of t's mapping onto the relation's columns. Every
// role is resolved, also after a problem; the first problem is returned.
func resolve(t *table, rel *relation, names []string, types []uint32) *MappingError {
	m := &t.m
	index := func(col string) int {
		if col == "" {
			return -1
		}
		for i, n := range names {
			if n == col {
				return i
			}
		}
		return -1
	}
	var first *MappingError
	need := func(role, col string) int {
		i := index(col)
		if i < 0 && first == nil {
			first = &MappingError{Missing: col, Err: fmt.Errorf(
				"has no column %q (the %s): rename the column back, or map the column that holds it (%s)",
				col, role, roleFlags[role])}
		}
		return i
	}
	rel.t = t
	rel.key = index(m.KeyColumn)
	if m.KeyColumn != "" {
		rel.key = need("record key", m.KeyColumn)
	}
	rel.payload = need("payload", m.PayloadColumn)
	rel.keyBytes = rel.key >= 0 && types[rel.key] == oidBytea
	rel.payloadBytes = rel.payload >= 0 && types[rel.payload] == oidBytea
	rel.id = index(m.IDColumn)
	rel.topic = index(m.TopicColumn)
	rel.headers = index(m.HeadersColumn)
	rel.ts = index(m.TimestampColumn)
	for i, h := range m.HeaderColumns {
		rel.headerCols = append(rel.headerCols, need("header column", h))
		name := h
		if m.HeaderNames != nil {
			name = m.HeaderNames[i]
		}
		rel.headerNames = append(rel.headerNames, name)
	}
	rel.template = t.template
	rel.templateCols = make([]int, len(t.template))
	for p, part := range t.template {
		rel.templateCols[p] = -1
		if part.column != "" {
			rel.templateCols[p] = need("topic template input", part.column)
		}
	}
	rel.tags = index(m.TagsColumn)
	if len(t.routes) > 0 {
		rel.tags = need("tags column", m.TagsColumn)
		if rel.tags >= 0 {
			rel.tagsType = types[rel.tags]
			if !tagsType(rel.tagsType) && first == nil {
				first = &MappingError{Err: fmt.Errorf("tags column %q has type %s; want text[], varchar[], jsonb or json", m.TagsColumn, typeName(rel.tagsType))}
			}
		}
	} else if rel.topic < 0 && len(t.template) == 0 && first == nil {
		first = &MappingError{Missing: m.TopicColumn, Err: fmt.Errorf(
			"has no topic column %q and the topic template is empty: rename the column back, or map it with --topic-column", m.TopicColumn)}
	}
	if rel.ts >= 0 {
		rel.tsType = types[rel.ts]
		switch rel.tsType {
		case oidTimestamptz, oidTimestamp, oidInt8:
		default:
			rel.ts = -1
			if first == nil {
				first = &MappingError{Err: fmt.Errorf(
					"timestamp column %q has type %s; want timestamptz, timestamp or bigint (epoch milliseconds): "+
						"change its type back, or map another column with --timestamp-column (--timestamp-column '' for none)",
					m.TimestampColumn, typeName(rel.tsType))}
			}
		}
	}
	// The topic, template, timestamp and headers columns are read during
	// Decode only (the topic is interned, the rest parsed into new values).
	for _, i := range append([]int{rel.id, rel.key, rel.payload}, rel.headerCols...) {
		if i >= 0 && !slices.Contains(rel.kept, i) {
			rel.kept = append(rel.kept, i)
		}
	}
	return first
}

// typeName names the types a timestamp column is likely to be changed to.
func typeName(oid uint32) string {
	switch oid {
	case 16:
		return "boolean"
	case 21:
		return "smallint"
	case 23:
		return "integer"
	case 25:
		return "text"
	case 700:
		return "real"
	case 701:
		return "double precision"
	case 1043:
		return "character varying"
	case 1082:
		return "date"
	case 1083:
		return "time"
	case 1266:
		return "time with time zone"
	case 1700:
		return "numeric"
	}
	return "oid " + strconv.FormatUint(uint64(oid), 10)
}

// insert decodes an Insert: relation id, 'N', then the new tuple.
func (d *Decoder) insert(b []byte) (Message, error) {
	if len(b) < 7 || b[4] != 'N' {
		return Message{}, malformed("short Insert")
	}
	relID := binary.BigEndian.Uint32(b)
	rel, ok := d.relations[relID]
	if !ok {
		return Message{}, malformed("Insert for relation %d before its Relation message", relID)
	}
	if rel.t == nil {
		return Message{}, nil
	}
	ncols := int(binary.BigEndian.Uint16(b[5:7]))
	if ncols > len(b)-7 { // each column takes a byte at least
		return Message{}, malformed("Insert of %d columns in %d bytes", ncols, len(b))
	}
	r := row{msg: b}
	if cap(d.spans) < ncols {
		d.spans = make([]span, ncols)
	}
	r.spans = d.spans[:ncols]
	// First where each column is in the message (offsets: no pointers, so
	// nothing outlives the call and writing them costs no write barrier).
	off := 7
	for i := range r.spans {
		if len(b)-off < 1 {
			return Message{}, malformed("short tuple")
		}
		switch b[off] {
		case 'n', 'u':
			r.spans[i] = span{n: -1}
			off++
		case 't', 'b':
			if len(b)-off < 5 {
				return Message{}, malformed("short tuple column")
			}
			n := int(binary.BigEndian.Uint32(b[off+1:]))
			off += 5
			if n < 0 || len(b)-off < n {
				return Message{}, malformed("tuple column of %d bytes overruns message", n)
			}
			r.spans[i] = span{off: off, n: n}
			off += n
		default:
			return Message{}, malformed("tuple column kind %q", b[off])
		}
	}
	// Then the columns the event keeps are copied into one buffer of
	// exactly their size: an event never holds the rest of the row (an
	// unmapped column of megabytes), and Event.Size covers what it holds.
	n := 0
	for _, i := range rel.kept {
		if i < ncols && r.spans[i].n > 0 {
			n += r.spans[i].n
		}
	}
	r.own = make([]byte, n)
	n = 0
	for _, i := range rel.kept {
		if i >= ncols || r.spans[i].n < 0 {
			continue
		}
		sp := &r.spans[i]
		copy(r.own[n:], b[sp.off:sp.off+sp.n])
		*sp = span{off: n, n: sp.n, own: true}
		n += sp.n
	}
	return d.event(rel, &r), nil
}

// span is where a tuple column's bytes are: in the message, or in the
// event's own buffer (own) once kept. n < 0 is NULL.
type span struct {
	off, n int
	own    bool
}

// row is one decoded tuple: the message (valid during Decode only), the
// event's own copy of the kept columns, and each column's span.
type row struct {
	msg, own []byte
	spans    []span
}

// col returns column i, or a null column when the relation lacks it. Its
// data is the event's own for a kept column, else valid during Decode only.
func (r *row) col(i int) column {
	if i < 0 || i >= len(r.spans) {
		return column{null: true}
	}
	sp := r.spans[i]
	switch {
	case sp.n < 0:
		return column{null: true}
	case sp.own:
		return column{data: r.own[sp.off : sp.off+sp.n : sp.off+sp.n]}
	default:
		return column{data: r.msg[sp.off : sp.off+sp.n : sp.off+sp.n]}
	}
}

func (d *Decoder) event(rel *relation, r *row) Message {
	t := rel.t
	msg := Message{Kind: KindEvent}
	ev := &msg.Event
	ev.CommitLSN = d.commitLSN
	ev.Table = t.index
	ev.Key = r.col(rel.key).data
	ev.Value = r.col(rel.payload).data
	var bytesErr error // a bytea column that is not hex: parked, with the rest decoded
	if rel.keyBytes {
		ev.Key, bytesErr = unhex(ev.Key, t.m.KeyColumn)
	}
	if rel.payloadBytes && bytesErr == nil {
		ev.Value, bytesErr = unhex(ev.Value, t.m.PayloadColumn)
	}
	msg.Poison = bytesErr

	nh := len(rel.headerCols)
	id := r.col(rel.id)
	if !id.null {
		ev.ID = id.data
		nh++
	}
	ev.Headers = d.headers[:0]
	if cap(ev.Headers) < nh {
		ev.Headers = make([]Header, 0, nh+4)
	}
	defer func() { d.headers = ev.Headers[:0] }()
	if !id.null {
		ev.Headers = append(ev.Headers, Header{Key: "id", Value: id.data})
	}
	for i, c := range rel.headerCols {
		ev.Headers = append(ev.Headers, Header{Key: rel.headerNames[i], Value: r.col(c).data})
	}
	if h := r.col(rel.headers); !h.null {
		var err error
		// The relay's own headers (id, the header columns) win over a key
		// of the same name in the headers column: the record carries each
		// name once.
		if ev.Headers, err = appendJSONHeaders(ev.Headers, len(ev.Headers), h.data); err != nil {
			msg.Poison = fmt.Errorf("headers column %q: %w", t.m.HeadersColumn, err)
		}
	}
	if ts := r.col(rel.ts); !ts.null {
		ev.Timestamp = parseTimestamp(ts.data, rel.tsType)
	}

	if rel.poison != nil {
		msg.Poison = rel.poison
		if rel.noTopic {
			return msg
		}
	}
	var err error
	if len(t.routes) > 0 {
		msg.Routed = true
		msg.Routes, err = d.route(t, r.col(rel.tags), rel.tagsType)
	} else if c := r.col(rel.topic); !c.null {
		ev.Topic, err = t.topics.get(c.data)
	} else {
		ev.Topic, err = d.render(rel, r)
	}
	if err != nil && msg.Poison == nil {
		msg.Poison = err
	}
	return msg
}

// render builds the topic from the template.
func (d *Decoder) render(rel *relation, r *row) (string, error) {
	buf := d.scratch[:0]
	for p, part := range rel.template {
		if part.column == "" {
			buf = append(buf, part.literal...)
			continue
		}
		c := r.col(rel.templateCols[p])
		if c.null {
			return "", fmt.Errorf("topic template input column %q is NULL", part.column)
		}
		buf = append(buf, c.data...)
	}
	d.scratch = buf
	return rel.t.topics.get(buf)
}

// appendJSONHeaders adds each key of a JSON object as a header, except
// the keys already among hs[:own]. String values are sent unquoted; null as
// a null header; anything else as its JSON text.
func appendJSONHeaders(hs []Header, own int, obj []byte) ([]Header, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return hs, fmt.Errorf("not a JSON object: %w", err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	mine := hs[:own:own]
	for _, k := range keys {
		if slices.ContainsFunc(mine, func(h Header) bool { return h.Key == k }) {
			continue
		}
		raw := m[k]
		var v []byte
		switch {
		case len(raw) > 0 && raw[0] == '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return hs, fmt.Errorf("header %q: %w", k, err)
			}
			v = []byte(s)
		case string(raw) == "null":
			v = nil
		default:
			v = raw
		}
		hs = append(hs, Header{Key: k, Value: v})
	}
	return hs, nil
}

// parseTimestamp parses a timestamp column's text. The replication
// connection runs with DateStyle=ISO and TimeZone=UTC, so timestamptz reads
// "2006-01-02 15:04:05.999999+00". An unparsable value (infinity, BC dates)
// gives the zero time, and the producer stamps the record itself.
func parseTimestamp(b []byte, typ uint32) time.Time {
	if typ == oidTimestamptz {
		if t, ok := parseUTC(b); ok {
			return t
		}
	}
	s := string(b)
	switch typ {
	case oidInt8:
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}
		}
		return time.UnixMilli(ms)
	case oidTimestamp:
		t, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			return time.Time{}
		}
		return t
	default:
		for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999-07:00:00"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t
			}
		}
		return time.Time{}
	}
}

// parseUTC parses the form the relay's session renders every timestamptz in
// (TimeZone=UTC, DateStyle=ISO): "2006-01-02 15:04:05[.ffffff]+00", without
// time.Parse's generality. It is on the per-event path.
func parseUTC(b []byte) (time.Time, bool) {
	n := len(b)
	if n < 22 || b[4] != '-' || b[7] != '-' || b[10] != ' ' || b[13] != ':' || b[16] != ':' ||
		b[n-3] != '+' || b[n-2] != '0' || b[n-1] != '0' {
		return time.Time{}, false
	}
	num := func(b []byte) (int, bool) {
		v := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := num(b[0:4])
	month, ok2 := num(b[5:7])
	day, ok3 := num(b[8:10])
	hour, ok4 := num(b[11:13])
	minute, ok5 := num(b[14:16])
	sec, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return time.Time{}, false
	}
	nsec := 0
	if frac := b[19 : n-3]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) > 10 {
			return time.Time{}, false
		}
		f, ok := num(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			f *= 10
		}
		nsec = f
	}
	if month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// pgTime converts a pgoutput timestamp, microseconds since 2000-01-01 UTC,
// to a time.
func pgTime(micros int64) time.Time {
	const unixTo2000 = 946684800 // seconds from the Unix epoch to 2000-01-01
	return time.UnixMicro(micros + unixTo2000*1e6)
}

// unhex decodes, in place, a bytea column's text form (\x followed by hex,
// PostgreSQL's bytea_output = hex, which the relay's replication
// connection sets) to the bytes it stands for: a Protobuf or Avro payload
// is sent as itself. data must be the event's own copy.
func unhex(data []byte, column string) ([]byte, error) {
	if data == nil {
		return nil, nil
	}
	if len(data) < 2 || data[0] != '\\' || data[1] != 'x' {
		return data, fmt.Errorf("bytea column %q is not in hex form (\\x…): set bytea_output = hex for the relay's role", column)
	}
	n, err := hex.Decode(data, data[2:]) // each byte written is behind the two read
	if err != nil {
		return data, fmt.Errorf("bytea column %q: %w", column, err)
	}
	return data[:n:n], nil
}
