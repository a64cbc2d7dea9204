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
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/relay"
)

// RunCommand is `cdc-relay run`: stream outbox inserts to Kafka.
type RunCommand struct {
	stdout, stderr io.Writer

	cfg       relay.Config
	tables    tableFlags
	brokers   string
	headerCol string
	logLevel  string
	logFormat string
	debugAddr string
}

const runUsage = `Usage: cdc-relay run [flags]

Streams inserts on the outbox table from a pgoutput replication slot to Kafka.
Creates the slot if it is missing; run "cdc-relay migrate" first to create the
tables and the publication. The database needs wal_level = logical and a role
with the REPLICATION attribute.

Each record: topic = the topic column when not null, else the topic template;
key = the key column; value = the payload column as PostgreSQL renders it;
headers "id", the header columns, and every key of the headers column's JSON
object; timestamp = the timestamp column.

The position is confirmed to PostgreSQL only after Kafka acknowledged every
event before it. SIGINT or SIGTERM stops cleanly: the current transaction is
finished, in-flight events are acknowledged, the position is confirmed, and a
restart sends nothing twice.

Example:

	cdc-relay run --postgres-url postgres://relay:secret@db:5432/app \
	    --kafka-brokers kafka-1:9092,kafka-2:9092
`

func (c *RunCommand) flags() *flag.FlagSet {
	c.cfg = relay.DefaultConfig()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	setUsage(fs, c.stderr, runUsage)
	registerRelayFlags(fs, &c.cfg, &c.tables, &c.brokers, &c.headerCol)
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.debugAddr, "debug-addr", "", "serve Go's profiler (/debug/pprof/) on this `host:port`; keep it private")
	return fs
}

// registerRelayFlags registers the flags of relay.Config.
func registerRelayFlags(fs *flag.FlagSet, cfg *relay.Config, tables *tableFlags, brokers, headerCols *string) {
	m := &cfg.Mapping
	fs.StringVar(&cfg.PostgresURL, "postgres-url", "", "PostgreSQL connection `URL` (postgres://user:pass@host:5432/db); the role needs REPLICATION")
	fs.StringVar(brokers, "kafka-brokers", "", "Kafka seed brokers, comma-separated `host:port` list")
	fs.StringVar(&cfg.Slot, "slot", cfg.Slot, "the replication slot; created (pgoutput) if missing")
	tables.register(fs)
	fs.StringVar(&m.TopicTemplate, "topic-template", m.TopicTemplate, "the topic when the topic column is absent or NULL; {column} is replaced by that column's value")
	fs.StringVar(&m.IDColumn, "id-column", m.IDColumn, "column sent as header \"id\", the consumers' dedup key (used if present)")
	fs.StringVar(&m.KeyColumn, "key-column", m.KeyColumn, "column used as the record key")
	fs.StringVar(&m.PayloadColumn, "payload-column", m.PayloadColumn, "column used as the record value, bytes as PostgreSQL renders them")
	fs.StringVar(&m.TopicColumn, "topic-column", m.TopicColumn, "column naming the topic, overriding the template when not NULL (used if present)")
	fs.StringVar(&m.HeadersColumn, "headers-column", m.HeadersColumn, "JSON object column whose keys become headers (used if present)")
	fs.StringVar(&m.TimestampColumn, "timestamp-column", m.TimestampColumn, "timestamptz, timestamp or bigint-milliseconds column used as the record timestamp (used if present)")
	*headerCols = strings.Join(m.HeaderColumns, ",")
	fs.StringVar(headerCols, "header-columns", *headerCols, "comma-separated columns copied into headers of the same name")
	fs.Int64Var(&cfg.Limits.Events, "max-in-flight-events", cfg.Limits.Events, "most events read but not yet acked; reading pauses at the limit")
	fs.Int64Var(&cfg.Limits.Bytes, "max-in-flight-bytes", cfg.Limits.Bytes, "most event bytes read but not yet acked; reading pauses at the limit")
	fs.DurationVar(&cfg.StatusInterval, "status-interval", cfg.StatusInterval, "most time between standby status updates to PostgreSQL")
	fs.DurationVar(&cfg.StopTimeout, "stop-timeout", cfg.StopTimeout, "on SIGTERM, how long to wait for the current transaction and in-flight acks")
	fs.DurationVar(&cfg.CheckpointInterval, "checkpoint-interval", cfg.CheckpointInterval, "how often the confirmed position is saved in the checkpoint table")
	fs.DurationVar(&cfg.Kafka.Linger, "kafka-linger", cfg.Kafka.Linger, "how long a partition's batch waits for more records")
	fs.StringVar(&cfg.Kafka.ClientID, "kafka-client-id", cfg.Kafka.ClientID, "Kafka client id")
	fs.BoolVar(&cfg.Kafka.AutoCreateTopics, "kafka-create-topics", false, "ask the broker to create missing topics (the broker must allow it)")
	fs.BoolVar(&cfg.AcceptSlotLoss, "accept-slot-loss", false, "create a new slot although the checkpoint table shows the old one was lost")
}

// finish completes cfg after parsing.
func finishRelayConfig(cfg *relay.Config, tables *tableFlags, brokers, headerCols string) error {
	if cfg.PostgresURL == "" {
		return usageError{"--postgres-url (or CDC_RELAY_POSTGRES_URL) is required"}
	}
	cfg.Kafka.Brokers = splitList(brokers)
	if len(cfg.Kafka.Brokers) == 0 {
		return usageError{"--kafka-brokers (or CDC_RELAY_KAFKA_BROKERS) is required"}
	}
	if cfg.Limits.Events <= 0 || cfg.Limits.Bytes <= 0 {
		return usageError{"--max-in-flight-events and --max-in-flight-bytes must be positive: they bound the relay's memory"}
	}
	cfg.Mapping.HeaderColumns = splitList(headerCols)
	if err := tables.apply(cfg); err != nil {
		return err
	}
	if err := cfg.Mapping.Validate(); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// Run parses args and runs the relay until ctx is done.
func (c *RunCommand) Run(ctx context.Context, args []string) error {
	fs := c.flags()
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := finishRelayConfig(&c.cfg, &c.tables, c.brokers, c.headerCol); err != nil {
		return err
	}
	log, err := newLogger(c.stderr, c.logLevel, c.logFormat)
	if err != nil {
		return err
	}
	c.cfg.Logger = log
	log.Info("cdc-relay starting", "version", Version, "postgres", redactURL(c.cfg.PostgresURL),
		"kafka", c.cfg.Kafka.Brokers, "slot", c.cfg.Slot, "table", c.tables.table)
	if c.debugAddr != "" {
		srv, err := debugServer(c.debugAddr)
		if err != nil {
			return err
		}
		defer srv.Close()
		log.Info("profiler listening", "addr", c.debugAddr)
	}
	return relay.Run(ctx, c.cfg)
}

// debugServer serves net/http/pprof on addr.
func debugServer(addr string) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // ends with Close
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

// redactURL describes a connection string (URL or keyword/value form) for
// logs: user, host, port and database, never a password.
func redactURL(s string) string {
	cfg, err := pgconn.ParseConfig(s)
	if err != nil {
		return "(unparsable connection string)"
	}
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), Path: "/" + cfg.Database}
	return u.String()
}
