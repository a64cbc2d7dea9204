package config

import (
	"fmt"
	"strings"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/outbox"
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
	// expression every topic must match whole. It applies to every table,
	// and to every message source that sets no allowed_topics of its own;
	// the Mapping of each of Tables and Messages leave it out, since a flag
	// may override it.
	AllowedTopics string
	// Ordering is ordering (--ordering): key, a key's events in commit
	// order, held behind a parked one; topic, a topic's events so, with a
	// key or without; or none, later events overtake a parked one. Empty
	// when the file does not set it.
	Ordering string
	// Tables are the outbox tables, each named once, in the file's order.
	// There is at least one unless Messages has one: a relay of messages
	// only has no table. Each Mapping has the keys of its entry in their
	// roles, the headers in the file's order (HeaderNames[i] names the
	// header of HeaderColumns[i]), and no AllowedTopics: that is the
	// file's (AllowedTopics) or the flag's. WriteBack is write_back, or
	// nil; Adopt is adopt, checked only to be not blank (PostgreSQL checks
	// the rest), and only with id; AdoptBy is adopt given as a mapping of
	// publisher to predicate, naming every publisher of the table's events
	// and no other (a route's: RouteAdopt, RouteAdoptBy).
	Tables []outbox.Table
	// Messages is messages: the logical decoding messages to relay (the
	// application's pg_logical_emit_message), one entry per prefix, in
	// the file's order. An entry's AllowedTopics is its own
	// allowed_topics, or "" when it sets none: then the file's
	// AllowedTopics (or the flag's) applies to it, as to a table.
	Messages []decoder.MessageMapping
	// Publishers are publishers: the publishers beside Kafka's (which is
	// outbox.KafkaPublisher, never defined), in the file's order, each
	// webhook's section valid. Tables and routes name them in their
	// Publishers (outbox.Table.Publishers, RoutePublishers).
	Publishers []Publisher
	// PublisherUses are where tables and routes name publishers, kafka
	// included, in the file's order; each names kafka or one of
	// Publishers.
	PublisherUses []PublisherUse
	// Warnings are what [Parse] accepts but is usually a mistake, each
	// with its line: two routes of one table that name the same topic
	// (an event that matches both is sent to it once), a publisher that
	// no table or route names (no event goes to it).
	Warnings Problems
}

// Kafka is the file's kafka section.
type Kafka struct {
	// Brokers is brokers: the brokers to bootstrap from, "host:port" each.
	Brokers []string
	// Compression is compression (--kafka-compression): one of
	// sink.Compressions.
	Compression string
	// BatchMaxBytes is batch_max_bytes (--kafka-batch-max-bytes): the most
	// bytes of records, before compression, in one batch; 0 when unset.
	BatchMaxBytes int
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
	if f.Kafka.Compression != "" {
		fmt.Fprintf(&b, "kafka.compression: %s, ", f.Kafka.Compression)
	}
	if f.Kafka.BatchMaxBytes != 0 {
		fmt.Fprintf(&b, "kafka.batch_max_bytes: %d, ", f.Kafka.BatchMaxBytes)
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
	fmt.Fprintf(&b, "tables: [%s]", strings.Join(names, " "))
	if len(f.Publishers) > 0 {
		pubs := make([]string, len(f.Publishers))
		for i, p := range f.Publishers {
			pubs[i] = p.Name
		}
		fmt.Fprintf(&b, ", publishers: [%s]", strings.Join(pubs, " "))
	}
	if len(f.Messages) > 0 {
		names = names[:0]
		for _, m := range f.Messages {
			names = append(names, m.Name())
		}
		fmt.Fprintf(&b, ", messages: [%s]", strings.Join(names, " "))
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so that %#v hides the password too.
func (f File) GoString() string { return f.String() }
