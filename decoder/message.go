package decoder

import "fmt"

// DefaultMessagePrefix is the prefix of the messages `--message-prefix`
// relays when given no other, and that the SQL helper cdc_relay.emit
// writes by default.
const DefaultMessagePrefix = "outbox"

// MessageMapping says which logical decoding messages to relay and how
// each becomes a Kafka record: the transactional messages an application
// writes with pg_logical_emit_message(true, prefix, content) inside its
// business transaction, which PostgreSQL keeps in the WAL only (no table)
// and pgoutput sends, with the messages option (PostgreSQL 14 and later),
// in commit order among the transaction's rows.
//
// The content is an envelope by default: a JSON object with the members
// topic, key, id, headers and payload (see docs/messages.md, "The
// envelope"). With PayloadOnly, the whole content is the record's value.
type MessageMapping struct {
	// Prefix is the messages' prefix, matched exactly. Required. Messages
	// of any other prefix are ignored, and so are non-transactional ones.
	Prefix string
	// Topic is the topic of a message whose envelope names none. Required
	// with PayloadOnly (the topic of every message), optional otherwise.
	Topic string
	// PayloadOnly makes the whole content the record's value: the topic
	// is Topic, the key is the member KeyField of the content's JSON
	// object (none when KeyField is empty), and the id the member
	// IDField (the message's WAL position when IDField is empty).
	PayloadOnly bool
	// KeyField and IDField name top-level members of the content's JSON
	// object, with PayloadOnly only.
	KeyField, IDField string
	// AllowedTopics is a Go regular expression that a message's whole
	// topic must match, as Mapping.AllowedTopics; empty allows every topic
	// that does not start with "_" or "connect-".
	AllowedTopics string
	// ReservedTopics are topics no message may go to, as
	// Mapping.ReservedTopics.
	ReservedTopics []string
}

// Name is how the relay names the messages of m where it names an outbox
// table (the status table's source_table, the metrics' table label, log
// lines): "message:" and the prefix.
func (m MessageMapping) Name() string { return "message:" + m.Prefix }

// Validate checks m without a database.
func (m MessageMapping) Validate() error {
	if m.Prefix == "" {
		return fmt.Errorf("messages: prefix is not set")
	}
	if m.PayloadOnly && m.Topic == "" {
		return fmt.Errorf("messages %q: a payload-only message needs a topic", m.Prefix)
	}
	if !m.PayloadOnly && (m.KeyField != "" || m.IDField != "") {
		return fmt.Errorf("messages %q: key and id fields are for payload-only messages; an envelope carries its own key and id", m.Prefix)
	}
	if m.Topic != "" {
		if err := ValidTopic(m.Topic); err != nil {
			return fmt.Errorf("messages %q: topic: %w", m.Prefix, err)
		}
	}
	check, err := Mapping{AllowedTopics: m.AllowedTopics, ReservedTopics: m.ReservedTopics}.TopicCheck()
	if err != nil {
		return fmt.Errorf("messages %q: %w", m.Prefix, err)
	}
	if m.Topic != "" {
		if err := check(m.Topic); err != nil {
			return fmt.Errorf("messages %q: topic: %w", m.Prefix, err)
		}
	}
	return nil
}

// NewSources returns a decoder for the outbox tables of tables and the
// logical decoding messages of messages. Event.Table and Relation.Table
// index tables as New's do; the messages of messages[j] are events with
// Event.Table len(tables)+j. It fails if a mapping is invalid, a table is
// mapped twice, a prefix is given twice, or there is nothing to relay.
// Tables may be empty when messages are not.
func NewSources(tables []Mapping, messages []MessageMapping) (*Decoder, error) {
	if len(messages) == 0 && len(tables) == 0 {
		return nil, fmt.Errorf("nothing to relay: map an outbox table, or a prefix of messages (messages: in the config file, --message-prefix)")
	}
	if len(messages) == 0 {
		return New(tables...)
	}
	return newSources(tables, messages, maxTopicCache)
}

// newSources is NewSources with topic caches of topicCacheSize names.
func newSources(tables []Mapping, messages []MessageMapping, topicCacheSize int) (*Decoder, error) {
	d, err := newTables(tables, topicCacheSize)
	if err != nil {
		return nil, err
	}
	for j, m := range messages {
		if err := m.Validate(); err != nil {
			return nil, err
		}
		for _, o := range messages[:j] {
			if o.Prefix == m.Prefix {
				return nil, fmt.Errorf("messages: prefix %q is given twice", m.Prefix)
			}
		}
		check, _ := Mapping{AllowedTopics: m.AllowedTopics, ReservedTopics: m.ReservedTopics}.TopicCheck()
		d.sources = append(d.sources, &source{index: len(tables) + j, m: m, topics: newTopicCache(topicCacheSize, check)})
	}
	return d, nil
}

// source is one message mapping and what the decoder derived from it.
type source struct {
	index int
	m     MessageMapping
	// topics interns the envelopes' topic names, as a table's topics.
	topics *topicCache
}

// source returns the message mapping of prefix, or nil.
func (d *Decoder) source(prefix []byte) *source {
	for _, s := range d.sources {
		if s.m.Prefix == string(prefix) {
			return s
		}
	}
	return nil
}
