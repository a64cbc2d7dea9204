package relay

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
	"github.com/cdc-relay/cdc-relay/internal/defaults"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/poller"
	"github.com/cdc-relay/cdc-relay/retention"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Config is everything a relay needs. See DefaultConfig.
type Config struct {
	// PostgresURL is the database with the outbox table. The role needs the
	// REPLICATION attribute.
	PostgresURL string
	// PostgresURLFile, if set, is the file PostgresURL was read from
	// (--postgres-url-file): the relay reads it again at every new
	// connection (the pool's, the replication connection's), so a new
	// password written there is used without a restart. A file that no
	// longer parses is reported, and PostgresURL (or the file's last
	// usable contents) is used meanwhile.
	PostgresURLFile string
	// liveURL is the source of each new connection's string; set by New.
	liveURL *pgconnect.LiveURL
	// Slot and Publication name the replication slot (created if missing)
	// and the publication (created by `cdc-relay migrate`).
	Slot, Publication string
	// Tables are the outbox tables the relay streams, on one slot and one
	// publication, each with its mapping onto Kafka records. At least one,
	// unless Messages has some.
	Tables []outbox.Table
	// Messages are the logical decoding messages the relay streams beside
	// the tables (pg_logical_emit_message, PostgreSQL 14 and later), one
	// entry per prefix; their events are the decoder's sources after the
	// tables (decoder.NewSources). With messages, Tables may be empty.
	Messages []decoder.MessageMapping
	// Publishers are the publishers beside Kafka that tables and routes
	// name (outbox.Table.Publishers): webhook receivers, each an engine
	// of its own (DESIGN.md's "Publishers"). A table names none: Kafka's
	// alone.
	Publishers []Publisher
	// StatusSchema/StatusTable and CheckpointSchema/CheckpointTable name the
	// relay's tables.
	StatusSchema, StatusTable         string
	CheckpointSchema, CheckpointTable string
	// Kafka configures the producer.
	Kafka sink.Config
	// Limits bound the events and bytes in flight.
	Limits checkpoint.Limits
	// StatusInterval is the most time between standby status updates.
	// Zero means the default, as for the other intervals and timeouts.
	StatusInterval time.Duration
	// StopTimeout bounds a graceful stop.
	StopTimeout time.Duration
	// ReplicationTimeout is how long PostgreSQL may stay silent on the
	// replication connection (the relay asks for a keepalive after a third
	// of it) before the session ends and the relay reconnects. It also
	// bounds each write there, sets the TCP keepalives of every connection
	// (PostgreSQL and Kafka) to drop a dead peer within about this time,
	// and is the connect and ping timeout of connections to PostgreSQL
	// unless the URL sets connect_timeout or pool_ping_timeout.
	ReplicationTimeout time.Duration
	// CheckpointInterval is how often the delivered position is saved in
	// the checkpoint table while it moves. PostgreSQL is told a position
	// only once it is saved, and after a PostgreSQL restart the relay
	// resumes from the row: at most this much is sent again.
	CheckpointInterval time.Duration
	// Poller re-delivers parked events: the status table's FAILED rows.
	Poller poller.Config
	// Retention deletes old outbox rows and old DELIVERED and DEAD status
	// rows.
	Retention retention.Config
	// ExactlyOnce, when enabled, delivers in Kafka transactions that also
	// commit the slot's position: a read_committed consumer sees each event
	// once, across crashes. Off is at-least-once delivery.
	ExactlyOnce ExactlyOnce
	// Ordering is OrderingKey (the default, also when empty): a key's
	// events reach Kafka in commit order, those behind a parked event of
	// their topic and record key parked after it (events without a key
	// are never held); OrderingTopic: a topic's events, with a key or
	// without, behind a parked event of the topic; or OrderingNone: later
	// events overtake a parked one. With OrderingKey, the topics of a
	// table whose own Ordering is OrderingTopic are ordered by topic
	// (CheckOrdering).
	Ordering string
	// AcceptSlotLoss lets the relay create a new slot although the
	// checkpoint table shows an earlier one existed (events committed while
	// no slot existed are then not relayed).
	AcceptSlotLoss bool
	// OnSlotLoss says what Run does when the slot is missing, invalidated,
	// or ahead of the relay's checkpoint (a [SlotGapError]: after a
	// failover to a standby without the slot, say): SlotLossRefuse (the
	// default, also when empty) ends Run with the error; SlotLossRecover
	// repairs the gap as `cdc-relay recover` does ([Recover]) and streams
	// on. SlotLossRecover needs a timestamp column in every table, and
	// excludes AcceptSlotLoss.
	OnSlotLoss SlotLoss
	// Build is the binary's version, commit and Go version
	// (buildinfo.Get()), for Status and the metrics; zero reports none.
	Build buildinfo.Info
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults the command line starts from.
func DefaultConfig() Config {
	return Config{
		Slot:               "cdc_relay",
		Publication:        "cdc_relay",
		Tables:             []outbox.Table{{Mapping: decoder.DefaultMapping()}},
		StatusSchema:       "public",
		StatusTable:        "outbox_delivery",
		CheckpointSchema:   "public",
		CheckpointTable:    "cdc_relay_checkpoint",
		Kafka:              sink.Config{ClientID: "cdc-relay", Linger: 5 * time.Millisecond, AutoCreateTopics: true},
		Limits:             checkpoint.Limits{Events: 10000, Bytes: 64 << 20},
		StatusInterval:     time.Second,
		StopTimeout:        30 * time.Second,
		ReplicationTimeout: 30 * time.Second,
		CheckpointInterval: 250 * time.Millisecond,
		Poller:             poller.DefaultConfig(),
		Retention:          retention.DefaultConfig(),
		Ordering:           OrderingKey,
	}
}

// The values of Config.Ordering.
const (
	// OrderingKey delivers a key's events in commit order: while an event
	// of a topic and record key is parked, every later event of that
	// topic and key is parked behind it (WAITING) instead of produced.
	OrderingKey = "key"
	// OrderingTopic delivers a topic's events in commit order: while an
	// event of a topic is parked, every later event of that topic, with a
	// key or without, is parked behind it. For event stores and
	// consumers that read a topic as one log (a topic of one partition:
	// Kafka orders each partition, not a topic).
	OrderingTopic = "topic"
	// OrderingNone lets later events of a key overtake a parked one.
	OrderingNone = "none"
)

// ExactlyOnce configures exactly-once delivery.
type ExactlyOnce struct {
	// Enabled turns it on.
	Enabled bool
	// TransactionalID identifies the relay's transactional producer at the
	// brokers; a producer started later with the same id fences this one.
	// Empty is "cdc-relay.<slot>".
	TransactionalID string
	// Interval is the least time from the start of one Kafka commit to
	// the start of the next (see exactlyonce.Options); zero (or less)
	// commits as soon as the commit before returned. run's default is
	// 10ms.
	Interval time.Duration
	// MaxEvents commits a Kafka transaction sooner, at the end of the first
	// PostgreSQL transaction that brings it to this many records; zero is
	// 10,000. A PostgreSQL transaction is never split, however large.
	MaxEvents int
	// CheckpointTopic is the compacted topic that holds the slot's
	// position; empty is sink.DefaultCheckpointTopic.
	CheckpointTopic string
	// TransactionTimeout is how long the broker lets a transaction stay
	// open before it aborts it (at most its transaction.max.timeout.ms);
	// zero is sink.DefaultTransactionTimeout.
	TransactionTimeout time.Duration
}

// withDefaults fills the intervals and timeouts left at zero (or below)
// from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	defaults.Positive(&c.StatusInterval, d.StatusInterval)
	defaults.Positive(&c.StopTimeout, d.StopTimeout)
	defaults.Positive(&c.CheckpointInterval, d.CheckpointInterval)
	defaults.Positive(&c.ReplicationTimeout, d.ReplicationTimeout)
	defaults.Zero(&c.Ordering, d.Ordering)
	if eo := &c.ExactlyOnce; eo.Enabled {
		defaults.Zero(&eo.TransactionalID, "cdc-relay."+c.Slot)
		defaults.Positive(&eo.MaxEvents, 10000)
		defaults.Zero(&eo.CheckpointTopic, sink.DefaultCheckpointTopic)
		defaults.Positive(&eo.TransactionTimeout, sink.DefaultTransactionTimeout)
	}
	return c
}

// claimBytes bounds the records one claim of the poller holds in memory
// (status.ClaimBytes, poller.Config.MaxBytes): half of
// --max-in-flight-bytes, so that the stream and the poller together stay
// within one and a half times it; at least 1 MiB, and no bound without
// one.
func (c Config) claimBytes() int64 {
	if c.Limits.Bytes <= 0 {
		return 0
	}
	return max(c.Limits.Bytes/2, 1<<20)
}

// postgresURL returns the connection string of a new connection: the
// file's latest (pgconnect.LiveURL) in a relay made by New, else
// PostgresURL.
func (c Config) postgresURL() string {
	if c.liveURL == nil {
		return c.PostgresURL
	}
	return c.liveURL.Get()
}

// sources are the relay's tables and message sources, each refusing the
// relay's own topics (ReservedTopics).
func (c Config) sources() outbox.Sources {
	return outbox.Sources{Tables: c.Tables, Messages: c.Messages, Reserved: c.ReservedTopics()}
}

// routedTables are the names of the tables that route by tags (their
// unrouted events are counted by table).
func (c Config) routedTables() []string {
	var names []string
	for i, name := range c.TableNames() {
		if len(c.Tables[i].Mapping.Routes) > 0 {
			names = append(names, name)
		}
	}
	return names
}

// messagePrefixes are the prefixes of the message sources.
func (c Config) messagePrefixes() []string {
	var prefixes []string
	for _, m := range c.Messages {
		prefixes = append(prefixes, m.Prefix)
	}
	return prefixes
}

// Mappings returns the mapping of each table, in order (outbox.Sources).
func (c Config) Mappings() []decoder.Mapping { return c.sources().Mappings() }

// messageMappings are the message sources, each refusing the relay's own
// topics as Mappings' tables do.
func (c Config) messageMappings() []decoder.MessageMapping { return c.sources().MessageMappings() }

// ReservedTopics are the relay's own topics, which no event may go to
// whatever the allowed topics allow (decoder.Mapping.ReservedTopics): the
// checkpoint topic of exactly-once delivery (the default one always, so
// that a relay switched to exactly-once later finds no event's record
// keyed by its slot there; its start would fail on it), the configured
// one, and the dead-letter topic.
func (c Config) ReservedTopics() []string {
	reserved := []string{sink.DefaultCheckpointTopic}
	if t := c.ExactlyOnce.CheckpointTopic; t != "" && t != sink.DefaultCheckpointTopic {
		reserved = append(reserved, t)
	}
	if t := c.Poller.DeadLetterTopic; t != "" {
		reserved = append(reserved, t)
	}
	return reserved
}

// TableNames names the outbox tables, schema.table, in order.
func (c Config) TableNames() []string { return c.sources().TableNames() }

// SourceNames names the relay's sources by the decoder's Event.Table: the
// outbox tables, then the message sources (outbox.Sources.Names).
func (c Config) SourceNames() []string { return c.sources().Names() }

// Validate checks what can be checked without the database: the ordering
// (each table's too, CheckOrdering),
// the sources (outbox.Sources.Validate: something to relay, a table that
// adopts has its id column, the message sources), that a relay of messages
// only does not ask to recover a gap (checkRecoverNeedsTable), and the
// mappings the decoder takes.
func (c Config) Validate() error {
	if c.Ordering != "" && c.Ordering != OrderingKey && c.Ordering != OrderingTopic && c.Ordering != OrderingNone {
		return fmt.Errorf("ordering %q: want %s (a key's events in commit order, held behind a parked one), %s (a topic's events in commit order, "+
			"held behind a parked one) or %s (later events overtake a parked one)", c.Ordering, OrderingKey, OrderingTopic, OrderingNone)
	}
	if c.Ordering == OrderingTopic && c.ExactlyOnce.Enabled {
		return fmt.Errorf("ordering %s is not built for exactly-once delivery yet: use ordering %s (the default) with it, "+
			"or at-least-once delivery (leave --delivery out)", OrderingTopic, OrderingKey)
	}
	if err := c.checkPublishers(); err != nil {
		return err
	}
	if err := c.CheckOrdering(); err != nil {
		return err
	}
	src := c.sources()
	if err := src.Validate(); err != nil {
		return err
	}
	if err := c.checkRecoverNeedsTable(); err != nil {
		return err
	}
	_, err := src.Decoder()
	return err
}

// SourceTopicCheck returns the check of a topic an event of a source goes
// to, which the poller and a corrected topic (`failed retry --topic`) must
// pass as the stream does (outbox.Sources.TopicCheck).
func (c Config) SourceTopicCheck() (func(source, topic string) error, error) {
	return c.sources().TopicCheck()
}

// Migrations returns the names `cdc-relay migrate` creates for this
// configuration, with table i as the outbox table, for migrations.Apply
// and migrations.Check. An i past the tables (a relay of messages only)
// leaves the outbox's names empty: no outbox table.
func (c Config) Migrations(i int) migrations.Config {
	var outbox decoder.Mapping
	if i < len(c.Tables) {
		outbox = c.Tables[i].Mapping
	}
	return migrations.Config{
		OutboxSchema:     outbox.Schema,
		OutboxTable:      outbox.Table,
		StatusSchema:     c.StatusSchema,
		StatusTable:      c.StatusTable,
		CheckpointSchema: c.CheckpointSchema,
		CheckpointTable:  c.CheckpointTable,
		Publication:      c.Publication,
	}
}
