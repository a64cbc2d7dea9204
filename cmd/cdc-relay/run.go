package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/relay"
	"github.com/cdc-relay/cdc-relay/replication"
)

// RunCommand is `cdc-relay run`: stream outbox inserts to Kafka.
type RunCommand struct {
	stdout, stderr io.Writer

	relayFlags
	runFlags
}

// runFlags are run's flags beyond those of relay.Config: delivery, the
// HTTP endpoints, logging and the profiler.
type runFlags struct {
	delivery   deliveryFlags
	admin      adminFlags
	logLevel   string
	logFormat  string
	debugAddr  string
	onSlotLoss string
	ordering   string
}

// register registers the flags on fs.
func (r *runFlags) register(fs *flag.FlagSet) {
	r.delivery.register(fs)
	r.admin.register(fs)
	fs.StringVar(&r.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&r.logFormat, "log-format", "text", "log `format`: text, or json for one object a line")
	fs.StringVar(&r.debugAddr, "debug-addr", "", "serve Go's profiler (/debug/pprof/) on this `host:port`; keep it private")
	fs.StringVar(&r.onSlotLoss, "on-slot-loss", string(relay.SlotLossRefuse),
		"the `action` when the slot is missing, invalidated, or ahead of the relay's checkpoint (after a failover to a standby without it, say): "+
			"refuse (stop, naming the gap) or recover (create the slot, publish the outbox rows written since the checkpoint again, as cdc-relay recover does, "+
			"and stream on; consumers may see some twice). recover needs a timestamp column in every table, and excludes --accept-slot-loss")
	fs.StringVar(&r.ordering, "ordering", relay.OrderingKey,
		"the `order` kept: key (a key's events in commit order, those behind a parked event held), topic (a topic's, with a key or without: for an event store "+
			"whose topics have one partition) or none (later events overtake a parked one)")
}

// finishOrdering sets cfg.Ordering from --ordering, and checks the
// tables' own orderings against it (relay.Config.CheckOrdering).
func (r *runFlags) finishOrdering(cfg *relay.Config) error {
	if r.ordering != relay.OrderingKey && r.ordering != relay.OrderingTopic && r.ordering != relay.OrderingNone {
		return usageError{fmt.Sprintf("--ordering %q: want %s, %s or %s", r.ordering, relay.OrderingKey, relay.OrderingTopic, relay.OrderingNone)}
	}
	if r.ordering == relay.OrderingTopic && cfg.ExactlyOnce.Enabled {
		return usageError{"--ordering topic is not built for exactly-once delivery yet: use --ordering key (the default) with it, " +
			"or at-least-once delivery (leave --delivery out)"}
	}
	cfg.Ordering = r.ordering
	if err := cfg.CheckOrdering(); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// defaultTimestampColumn is the time column of the outbox table that
// migrate creates.
const defaultTimestampColumn = "created_at"

// defaultOutboxTable is the outbox table migrate creates, --table's
// default, as decoder.ParseTable names it.
const defaultOutboxTable = "public.outbox"

// checkDefaultRetention refuses the default --retention on a table of the
// flags other than the one migrate creates (public.outbox, with its
// created_at): another table is the application's own (an event log,
// say), whose rows the default would delete after 7 days. The operator
// says which they want. A config file's tables have no retention unless
// --retention is given (relayFlags.finish).
func checkDefaultRetention(fs *flag.FlagSet, cfg relay.Config, fromFile bool) error {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "retention" })
	if fromFile || given || cfg.Retention.Outbox <= 0 || len(cfg.Tables) == 0 {
		return nil
	}
	m := cfg.Tables[0].Mapping
	keep := fmt.Sprintf("the default --retention %s would delete its rows older than that: give --retention 0s to keep every row (an event log, say), "+
		"or --retention %s to delete them", formatDuration(cfg.Retention.Outbox), formatDuration(cfg.Retention.Outbox))
	if table := m.Schema + "." + m.Table; table != defaultOutboxTable {
		return usageError{fmt.Sprintf("--table %s is a table of your own (migrate creates %s), and %s", table, defaultOutboxTable, keep)}
	}
	if ts := m.TimestampColumn; ts != "" && ts != defaultTimestampColumn {
		return usageError{fmt.Sprintf("--timestamp-column %q maps a table of your own (the outbox table migrate creates has %s), and %s",
			ts, defaultTimestampColumn, keep)}
	}
	return nil
}

// finishSlotLoss sets cfg.OnSlotLoss from --on-slot-loss.
func (r *runFlags) finishSlotLoss(cfg *relay.Config) error {
	switch loss := relay.SlotLoss(r.onSlotLoss); loss {
	case relay.SlotLossRefuse:
	case relay.SlotLossRecover:
		if cfg.AcceptSlotLoss {
			return usageError{"--on-slot-loss recover and --accept-slot-loss exclude each other: recover publishes the rows of a gap in the WAL again, " +
				"--accept-slot-loss goes on without them; choose one"}
		}
	default:
		return usageError{fmt.Sprintf("--on-slot-loss %q: want %s or %s", r.onSlotLoss, relay.SlotLossRefuse, relay.SlotLossRecover)}
	}
	cfg.OnSlotLoss = relay.SlotLoss(r.onSlotLoss)
	return nil
}

// relayFlags are the flags of relay.Config, which run and recover share.
type relayFlags struct {
	cfg             relay.Config
	tables          tableFlags
	brokers         string
	headerCol       string
	postgresURLFile string
	kafkaSecurity   kafkaSecurityFlags
	configPath      string
	file            *config.File // the config file, when --config is given
	messagePrefix   string       // --message-prefix
}

// register sets cfg to the defaults and registers its flags on fs.
func (r *relayFlags) register(fs *flag.FlagSet) {
	r.cfg = relay.DefaultConfig()
	registerRelayFlags(fs, &r.cfg, &r.tables, &r.brokers, &r.headerCol)
	registerMessagePrefix(fs, &r.messagePrefix)
	registerPostgresURLFile(fs, &r.postgresURLFile)
	r.kafkaSecurity.register(fs)
	registerConfig(fs, &r.configPath)
}

// finish completes cfg after fs was parsed: from the config file, if any,
// then from the flags.
func (r *relayFlags) finish(fs *flag.FlagSet) error {
	file, err := loadConfig(fs, r.configPath)
	if err != nil {
		return err
	}
	r.file = file
	if r.cfg.PostgresURL, err = postgresURLFrom(r.cfg.PostgresURL, r.postgresURLFile); err != nil {
		return err
	}
	r.cfg.PostgresURLFile = r.postgresURLFile // read again at each connection
	if err := finishRelayConfig(&r.cfg, &r.tables, r.brokers, r.headerCol); err != nil {
		return err
	}
	allowedTopics := r.cfg.Tables[0].Mapping.AllowedTopics // the flag's, else the file's
	if file != nil {
		configSources(&r.cfg, file, allowedTopics)
		// The tables of a config file are the application's: the relay
		// deletes none of their rows unless told to.
		retention := false
		fs.Visit(func(f *flag.Flag) { retention = retention || f.Name == "retention" })
		if !retention {
			r.cfg.Retention.Outbox = 0
		}
		if err := r.cfg.Validate(); err != nil {
			return fmt.Errorf("%s: %w", r.configPath, err)
		}
	}
	if err := addMessagePrefix(&r.cfg, r.messagePrefix, allowedTopics); err != nil {
		return err
	}
	return r.kafkaSecurity.finish(&r.cfg.Kafka)
}

const runUsage = `Usage: cdc-relay run [flags]

Streams the rows inserted into the outbox table to Kafka, read from a pgoutput
logical replication slot. Run "cdc-relay migrate" first: it creates the
relay's tables and the publication. The slot is created on the first run.
PostgreSQL needs wal_level = logical, and the role the REPLICATION attribute.

Keep the password off the command line, where ps shows it to every user of
the machine: set CDC_RELAY_POSTGRES_URL, or put the connection string in a
file readable by the relay only and pass --postgres-url-file, or leave the
password out of it and use PGPASSWORD or ~/.pgpass. --postgres-url and
--postgres-url-file exclude each other, wherever each is set.

Each row becomes one Kafka record:

  topic      the topic column when not NULL, else the topic template
  key        the key column
  value      the payload column, as PostgreSQL renders it
  headers    "id", the header columns, and each key of the headers column
  timestamp  the timestamp column

The position is confirmed to PostgreSQL only after Kafka acknowledged every
event before it. With --delivery exactly-once, events are produced in Kafka
transactions that also commit the slot's position to --checkpoint-topic, so
that a consumer with isolation.level=read_committed sees each event once,
across crashes; the position is confirmed once the transaction committed.
SIGINT, SIGTERM or SIGHUP stops cleanly: the current
transaction is finished, its events are acknowledged, the position is
confirmed, and a restart sends nothing twice. What is not acknowledged
within --stop-timeout stays unconfirmed and is sent again after a restart.

After a PostgreSQL failover, the promoted standby has the relay's slot only
if it is a failover slot (PostgreSQL 17+: the relay makes its slot one, and
the servers need the settings docs/failover.md lists). Otherwise the slot is
missing, or behind what the relay read, and the relay refuses to start,
naming the gap: "cdc-relay recover" repairs it. With --on-slot-loss recover
the relay repairs it by itself and streams on: it creates the slot, publishes
again the outbox rows written since its checkpoint (by the timestamp
column, from the checkpoint's commit time less 10 minutes; consumers may see
some twice), logs the window and
the count, and counts it in cdc_relay_slot_recoveries_total.

While it runs it serves, on --metrics-addr (` + defaultMetricsAddr + `): /metrics for
Prometheus, /healthz, /readyz, /status (JSON; "cdc-relay status" prints it),
and the admin endpoints POST /pause, POST /resume, GET /failed and
POST /failed/{id}/retry, which need --admin-token on an address other than
loopback.

Example:

  export CDC_RELAY_POSTGRES_URL=postgres://relay:secret@db:5432/app
  cdc-relay run --kafka-brokers kafka-1:9092,kafka-2:9092
`

// runSections orders run's flags in its usage.
var runSections = []flagSection{
	{"Configuration file (optional)", []string{"config"}},
	{"Connections (required: PostgreSQL and Kafka)", []string{"postgres-url", "postgres-url-file", "kafka-brokers"}},
	{"Slot and tables", []string{"slot", "publication", "table", "status-table", "checkpoint-table", "on-slot-loss", "accept-slot-loss"}},
	{"Messages: an outbox without a table (PostgreSQL 14+)", []string{"message-prefix"}},
	{"From row to Kafka record", []string{
		"topic-template", "topic-column", "key-column", "payload-column", "id-column",
		"header-columns", "headers-column", "timestamp-column", "timestamp-unit", "allowed-topics"}},
	{"Kafka producer", producerFlagNames},
	{"Kafka security", kafkaSecurityFlagNames},
	{"Delivery", deliveryFlagNames},
	{"Limits and timing", []string{"max-in-flight-events", "max-in-flight-bytes", "stop-timeout", "status-interval", "replication-timeout", "checkpoint-interval"}},
	{"Parked events (the status table)", []string{"ordering", "retry-base", "retry-max", "max-attempts", "retry-batch", "dead-letter-topic"}},
	{"Retention", []string{"retention", "status-retention", "cleanup-interval"}},
	{"Metrics, health and admin endpoints", []string{"metrics-addr", "admin-token", "admin-token-file"}},
	{"Logging and debugging", []string{"log-level", "log-format", "debug-addr"}},
}

func (c *RunCommand) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	c.relayFlags.register(fs)
	c.runFlags.register(fs)
	return fs
}

// Usage writes run's help.
func (c *RunCommand) Usage(w io.Writer) { printUsage(w, c.flags(), runUsage, runSections) }

// registerRelayFlags registers the flags of relay.Config.
func registerRelayFlags(fs *flag.FlagSet, cfg *relay.Config, tables *tableFlags, brokers, headerCols *string) {
	m := &cfg.Tables[0].Mapping
	fs.StringVar(&cfg.PostgresURL, "postgres-url", "",
		"PostgreSQL connection `URL`, such as postgres://relay:secret@db:5432/app; the role needs the REPLICATION attribute")
	fs.StringVar(brokers, "kafka-brokers", "", "Kafka seed brokers, comma-separated: `host:port,...`")
	fs.StringVar(&cfg.Slot, "slot", cfg.Slot, "the `name` of the logical replication slot (lower-case letters, digits and underscores), created (pgoutput) when missing; one relay streams it at a time, others wait")
	tables.register(fs)
	fs.StringVar(&m.TopicTemplate, "topic-template", m.TopicTemplate,
		"the topic `template` for a row whose topic column is absent or NULL: each {column} is replaced by that column's value")
	fs.StringVar(&m.TopicColumn, "topic-column", m.TopicColumn, "the `column` naming the record's topic, used instead of the template when not NULL; ignored, with a warning, if the table lacks it at the first start ('' for none)")
	fs.StringVar(&m.KeyColumn, "key-column", m.KeyColumn, "the `column` used as the record key")
	fs.StringVar(&m.PayloadColumn, "payload-column", m.PayloadColumn, "the `column` used as the record value, the bytes as PostgreSQL renders them")
	fs.StringVar(&m.IDColumn, "id-column", m.IDColumn, "the `column` sent as header \"id\", the consumers' deduplication key; ignored, with a warning, if the table lacks it at the first start ('' for none)")
	*headerCols = strings.Join(m.HeaderColumns, ",")
	fs.StringVar(headerCols, "header-columns", *headerCols, "comma-separated `columns` copied into headers of the same name")
	fs.StringVar(&m.HeadersColumn, "headers-column", m.HeadersColumn, "a JSON object `column` whose keys and values become headers; ignored, with a warning, if the table lacks it at the first start ('' for none)")
	fs.StringVar(&m.TimestampColumn, "timestamp-column", m.TimestampColumn,
		"the `column` used as the record timestamp: timestamptz, timestamp or bigint (epoch time in --timestamp-unit); ignored, with a warning, if the table lacks it at the first start ('' for none)")
	fs.Var((*timestampUnitFlag)(&m.TimestampUnit), "timestamp-unit",
		"the `unit` of a bigint --timestamp-column: s, ms or us (epoch seconds, milliseconds or microseconds); unset judges it by the values' magnitude, and recover refuses a column it cannot judge")
	fs.StringVar(&m.AllowedTopics, "allowed-topics", m.AllowedTopics,
		"a Go regular `expression` that the whole topic of a row must match, or the row is parked DEAD in the status table; "+
			"empty allows every topic that does not start with _ or connect- (Kafka's own and its tools': __consumer_offsets, _schemas, connect-configs); .* allows all")
	fs.Int64Var(&cfg.Limits.Events, "max-in-flight-events", cfg.Limits.Events,
		"at most `n` events read but not yet acknowledged by Kafka; reading pauses at the limit")
	fs.Int64Var(&cfg.Limits.Bytes, "max-in-flight-bytes", cfg.Limits.Bytes,
		"at most `n` bytes of events read but not yet acknowledged by Kafka; reading pauses at the limit. "+
			"Each claim of the status-table poller holds at most half as much besides (at least 1 MiB)")
	durationVar(fs, &cfg.StopTimeout, "stop-timeout", cfg.StopTimeout,
		"when stopping (SIGINT, SIGTERM or SIGHUP), how long to wait for the current transaction and its acknowledgements; what is not confirmed by then is sent again after a restart")
	durationVar(fs, &cfg.StatusInterval, "status-interval", cfg.StatusInterval, "the most time between standby status updates to PostgreSQL")
	durationVar(fs, &cfg.ReplicationTimeout, "replication-timeout", cfg.ReplicationTimeout,
		"when nothing has come from PostgreSQL for this long (the relay asks for a keepalive after a third of it), the connection is presumed dead and the relay reconnects, resuming from the slot; also the TCP keepalive timing of every connection")
	durationVar(fs, &cfg.CheckpointInterval, "checkpoint-interval", cfg.CheckpointInterval,
		"how often the delivered position is saved in the checkpoint table; PostgreSQL is told a position only after it is saved, and a restart resends at most this much")
	durationVar(fs, &cfg.Kafka.Linger, "kafka-linger", cfg.Kafka.Linger, "how long a partition's batch waits for more records; 0s sends at once")
	registerProducerFlags(fs, &cfg.Kafka)
	fs.StringVar(&cfg.Kafka.ClientID, "kafka-client-id", cfg.Kafka.ClientID, "the Kafka client `id`, as brokers log it")
	fs.BoolVar(&cfg.Kafka.AutoCreateTopics, "kafka-create-topics", cfg.Kafka.AutoCreateTopics,
		"ask the broker to create a missing topic (the broker decides: auto.create.topics.enable); =false never asks, and events for a missing topic are parked in the status table")
	pc := &cfg.Poller
	durationVar(fs, &pc.RetryBase, "retry-base", pc.RetryBase,
		"the wait before a parked event is tried again after its first failed attempt; each failure doubles it, with jitter")
	durationVar(fs, &pc.RetryMax, "retry-max", pc.RetryMax, "the longest wait between attempts to deliver a parked event")
	fs.IntVar(&pc.MaxAttempts, "max-attempts", pc.MaxAttempts, "after `n` failed attempts a parked event is marked DEAD and no longer tried")
	fs.IntVar(&pc.Batch, "retry-batch", pc.Batch, "at most `n` parked events are claimed and produced at once, and held in memory until Kafka answers them all (their records at most half of --max-in-flight-bytes)")
	fs.StringVar(&pc.DeadLetterTopic, "dead-letter-topic", pc.DeadLetterTopic,
		"also produce each event marked DEAD to this `topic`, with the error in its headers")
	rc := &cfg.Retention
	durationVar(fs, &rc.Outbox, "retention", rc.Outbox,
		"delete outbox rows older than this, by the timestamp column (safe: their inserts are already in the WAL); 0s keeps them")
	durationVar(fs, &rc.Status, "status-retention", rc.Status,
		"delete DELIVERED and DEAD status rows older than this; FAILED rows are always kept; 0s keeps them")
	durationVar(fs, &rc.Interval, "cleanup-interval", rc.Interval, "how often retention runs")
	fs.BoolVar(&cfg.AcceptSlotLoss, "accept-slot-loss", false,
		"create a new slot although the checkpoint table shows that the old one was dropped; events committed while no slot existed are not relayed. "+
			"Excludes --on-slot-loss recover")
}

// finishRelayConfig completes cfg after parsing.
func finishRelayConfig(cfg *relay.Config, tables *tableFlags, brokers, headerCols string) error {
	if cfg.PostgresURL == "" {
		return usageError{postgresURLRequired}
	}
	cfg.Kafka.Brokers = splitList(brokers)
	if len(cfg.Kafka.Brokers) == 0 {
		return usageError{"--kafka-brokers (or CDC_RELAY_KAFKA_BROKERS) is required"}
	}
	if cfg.Limits.Events <= 0 || cfg.Limits.Bytes <= 0 {
		return usageError{"--max-in-flight-events and --max-in-flight-bytes must be positive: they bound the relay's memory"}
	}
	def := relay.DefaultConfig()
	for _, d := range []struct {
		name       string
		value, def time.Duration
	}{
		{"stop-timeout", cfg.StopTimeout, def.StopTimeout},
		{"status-interval", cfg.StatusInterval, def.StatusInterval},
		{"replication-timeout", cfg.ReplicationTimeout, def.ReplicationTimeout},
		{"checkpoint-interval", cfg.CheckpointInterval, def.CheckpointInterval},
		{"retry-base", cfg.Poller.RetryBase, def.Poller.RetryBase},
		{"retry-max", cfg.Poller.RetryMax, def.Poller.RetryMax},
		{"cleanup-interval", cfg.Retention.Interval, def.Retention.Interval},
	} {
		if d.value <= 0 {
			return usageError{fmt.Sprintf("--%s must be more than 0s (the default is %s)", d.name, d.def)}
		}
	}
	if cfg.Poller.MaxAttempts < 1 || cfg.Poller.Batch < 1 {
		return usageError{"--max-attempts and --retry-batch must be at least 1"}
	}
	if cfg.Poller.DeadLetterTopic != "" {
		if err := decoder.ValidTopic(cfg.Poller.DeadLetterTopic); err != nil {
			return usageError{"--dead-letter-topic: " + err.Error()}
		}
	}
	if err := replication.ValidSlotName(cfg.Slot); err != nil {
		return usageError{"--slot: " + err.Error()}
	}
	cfg.Tables[0].Mapping.HeaderColumns = splitList(headerCols)
	if err := tables.apply(cfg); err != nil {
		return err
	}
	if err := cfg.Tables[0].Mapping.Validate(); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// Run parses args and runs the relay until ctx is done.
func (c *RunCommand) Run(ctx context.Context, args []string) error {
	fs := c.flags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := c.finish(fs); err != nil {
		return err
	}
	if err := c.delivery.finish(fs, &c.cfg); err != nil {
		return err
	}
	if c.cfg.ExactlyOnce.Enabled {
		if err := refuseWebhooksExactlyOnce(c.file, c.configPath); err != nil {
			return err
		}
	}
	if err := c.finishSlotLoss(&c.cfg); err != nil {
		return err
	}
	if err := c.finishOrdering(&c.cfg); err != nil {
		return err
	}
	if err := checkDefaultRetention(fs, c.cfg, c.file != nil); err != nil {
		return err
	}
	if err := c.admin.finish(); err != nil {
		return err
	}
	log, err := newLogger(c.stderr, c.logLevel, c.logFormat)
	if err != nil {
		return err
	}
	c.cfg.Logger = log
	c.cfg.Build = buildinfo.Get()
	log.Info("cdc-relay starting", "version", c.cfg.Build.Version, "commit", c.cfg.Build.Commit, "postgres", pgerr.Describe(c.cfg.PostgresURL),
		"kafka", c.cfg.Kafka.Brokers, "slot", c.cfg.Slot, "tables", strings.Join(c.cfg.SourceNames(), ", "), "delivery", c.delivery.delivery,
		"on_slot_loss", c.onSlotLoss)
	c.kafkaSecurity.logSettings(log)
	logUnknownEnv(log)
	if w := pgconnect.MultiHostWarning(c.cfg.PostgresURL); w != "" {
		log.Warn(w)
	}
	if c.file != nil {
		warnConfig(c.file, log)
		if err := checkAtStart(ctx, c.cfg, c.configPath, c.file, log); err != nil {
			return err
		}
	}
	if c.debugAddr != "" {
		srv, err := debugServer(c.debugAddr)
		if err != nil {
			return err
		}
		defer srv.Close()
		log.Info("profiler listening", "addr", c.debugAddr)
	}
	rel, err := relay.New(c.cfg)
	if err != nil {
		return err
	}
	srv, err := c.admin.serve(rel, log)
	if err != nil {
		return err
	}
	if srv != nil {
		defer srv.Close()
		log.Info("serving metrics and health", "addr", srv.Addr(), "admin_token", c.admin.token != "")
	}
	return c.kafkaSecurity.explain(rel.Run(ctx))
}

// debugServer serves net/http/pprof on addr.
func debugServer(addr string) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	// Not /debug/pprof/cmdline: the command line may hold a password.
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	// Serve returns http.ErrServerClosed once run's deferred Close ends it.
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", level)}
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageError{fmt.Sprintf("--log-format %q: want text or json", format)}
}
