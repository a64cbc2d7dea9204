package decoder

import (
	"errors"
	"fmt"
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
	// KindEvent is an INSERT on a mapped table, or a transactional
	// logical decoding message of a mapped prefix; Message.Event is set,
	// or Message.Poison when the row or message cannot become a record.
	KindEvent
	// KindRelation is a Relation message for a mapped table (PostgreSQL
	// sends one before the first row of a table in a session, and again
	// after its schema changed); Message.Relation describes it.
	KindRelation
	// KindUnmappedMessage is a transactional logical decoding message of
	// a prefix no MessageMapping maps: part of a commit, but no event, so
	// the caller can say that it went nowhere. Message.Prefix names it.
	// (A non-transactional message of such a prefix is KindIgnored: it is
	// no part of a commit.)
	KindUnmappedMessage
	// KindNonTransactionalMessage is a non-transactional logical decoding
	// message of a mapped prefix: no event (it is no part of a commit, and
	// may be of a transaction that rolled back), so that the caller can
	// say the application wrote one with transactional false.
	// Message.Prefix names its mapping's prefix.
	KindNonTransactionalMessage
)

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// Event is one outbox row, or one logical decoding message, as a Kafka
// record. Its byte slices are its own
// (copied out of the replication buffer) and stay valid after the next
// Decode; the Headers slice itself is the decoder's and is reused by the
// next Decode: copy it to keep it.
type Event struct {
	// ID is the event id column's text, or nil. A message's is the id its
	// content gives, else the message's WAL position in PostgreSQL's form
	// ("0/16B3748", what pg_logical_emit_message returned): never nil.
	ID []byte
	// Topic is the validated destination topic.
	Topic string
	// Key is the record key; nil for a NULL key.
	Key []byte
	// Value is the payload as PostgreSQL renders it; nil for NULL. A
	// poison message's is its payload when its content could be read,
	// else its whole content.
	Value []byte
	// Headers are "id", the header columns, then the headers object's keys.
	Headers []Header
	// Timestamp is the record timestamp; zero lets the producer set it. A
	// message's is its transaction's commit time.
	Timestamp time.Time
	// CommitLSN is the LSN of the commit record of the event's transaction.
	CommitLSN uint64
	// Partition is the partition the event's record goes to when Placed
	// (Mapping.PartitionColumn); otherwise the producer picks it by the
	// key's hash.
	Partition int32
	Placed    bool
	// Table is the index of the event's table among the decoder's
	// mappings; a message's is len(tables)+j for the messages of
	// messages[j] (NewSources).
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
	// Xid is set on KindBegin: the transaction's id, whose rows other
	// sessions see only once it is visible, a moment after its commit
	// record (and so the transaction) reached the stream.
	Xid uint32 // beside Kind, in what would be padding
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
	// not fit the mapping when the row was written), or on a message whose
	// content is not what its MessageMapping says (a malformed envelope, a
	// member of the wrong type, no topic). Event then holds what could be
	// decoded, a message's payload as its Value (its whole content when the content could not be read). Poison rows are permanent failures: they belong in
	// the status table, and the stream goes on.
	Poison error
	// Relation is set on KindRelation.
	Relation Relation
	// Routed is set on KindEvent when the event's table routes by tags
	// (Mapping.Routes): Routes then lists the topics of the routes the
	// event matched, in route order, each topic once (routes that name one
	// topic send one copy to it), and Event.Topic is empty. An event
	// that matched no route has Routed set and no Routes. Routes is the
	// decoder's and is reused by the next Decode.
	Routed bool
	Routes []string
	// Prefix is set on KindUnmappedMessage and
	// KindNonTransactionalMessage: the message's prefix.
	Prefix string
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

// table is one mapped table and what the decoder derived from its mapping.
type table struct {
	index    int
	m        Mapping
	template []templatePart
	// topics interns rendered topic names, so a topic is validated and
	// allocated once while cached, not once per event.
	topics *topicCache
	routes []route
	loc    *time.Location // m.Location()
}

// Decoder decodes pgoutput (protocol version 1) messages. Create it with
// [New] or [NewSources].
type Decoder struct {
	tables []*table
	// sources are the message mappings; empty, every logical decoding
	// message is ignored.
	sources   []*source
	relations map[uint32]*relation
	// commitLSN and commitTime are the current transaction's, from its
	// Begin.
	commitLSN  uint64
	commitTime time.Time
	rel        Relation // the last Relation message's, when it was for a mapped table

	// spans locates the current tuple's columns, reused across inserts.
	spans []span
	// headers backs Event.Headers, reused across inserts.
	headers []Header
	// routed backs Message.Routes, and tags holds an event's tags while
	// its routes are matched; both reused across inserts.
	routed  []string
	tags    [][]byte
	scratch []byte
	// unmapped holds the prefixes of KindUnmappedMessage seen, so that a
	// stream of them makes no string each (unmapped.go).
	unmapped map[string]string
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
	return newTables(ms, topicCacheSize)
}

// newTables returns a decoder of the tables of ms, none or more, with
// topic caches of topicCacheSize names.
func newTables(ms []Mapping, topicCacheSize int) (*Decoder, error) {
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
		loc, _ := m.Location()
		d.tables = append(d.tables, &table{index: i, m: m, template: tmpl, topics: newTopicCache(topicCacheSize, check), routes: routes, loc: loc})
	}
	return d, nil
}

// ErrMalformed wraps errors from messages that do not follow the pgoutput
// format. The stream cannot continue past such a message.
var ErrMalformed = errors.New("malformed pgoutput message")

// MappingError says the outbox table's columns do not fit the Mapping: a
// required column is missing (Missing names it; an expected optional one
// too, see Mapping.Expecting), or the timestamp column has a type the
// mapping cannot use.
type MappingError struct {
	Table string
	Err   error
	// Missing is the required column the table lacks; "" when the problem
	// is a column's type.
	Missing string
	// Timestamp says the problem is the timestamp column alone (missing,
	// or of a type the mapping cannot use): a row's record is whole but
	// for its timestamp, and can be sent with the time of delivery.
	Timestamp bool
}

func (e *MappingError) Error() string { return "outbox table " + e.Table + ": " + e.Err.Error() }

func (e *MappingError) Unwrap() error { return e.Err }

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}
