package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/cdc-relay/cdc-relay/backfill"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// BackfillCommand is `cdc-relay backfill`: publish the rows of one outbox
// table that an SQL predicate selects, beside a running relay.
type BackfillCommand struct {
	stdout, stderr io.Writer

	relayFlags
	table               string
	logLevel, logFormat string
	opts                backfill.Config
	parsed              *flag.FlagSet // the flags as parsed, for the command that resumes
}

const backfillUsage = `Usage: cdc-relay backfill --table T --where 'SQL' [flags]

Publishes the rows of one outbox table that --where selects, through the
table's own mapping (topic, key, value, headers, routes) as the relay streams
them, at least once: for rows the relay never sent (events written before
the slot existed), or to send a range again (a new consumer, a topic deleted
by mistake, a consumer's bug). "cdc-relay recover --since" republishes every
row since a time; backfill takes any predicate, and pages by the key.

--where is SQL, run as it is with the role of --postgres-url (in a read-only
transaction, so it cannot write), such as:

  --where "created_at > now() - interval '1 hour'"
  --where "aggregate_type = 'Order' AND position > 4000"
  --where true              (every row)

The role of --postgres-url needs SELECT on the table and on what --where
reads, TEMPORARY on the database (for the keys it selects; PUBLIC has it
unless revoked): without one, it stops with the GRANT to run. Without
SELECT, INSERT, UPDATE on cdc_relay_backfills it runs, and status does not
show it.

The rows are those the predicate selects at the start: their keys are copied
first into a temporary table of the backfill's session, 10,000 a query in the
order of the table's primary key (keyset pagination: never one huge query),
every query reading the one snapshot taken when the selection began. Rows
committed later are the relay's to stream, whatever their key. They are
then read --batch at a time in key order, each batch produced with the relay's producer settings and acknowledged by Kafka
before the next is read, at most --rate rows a second (the default, 2000/s,
keeps a running relay's latency; 0 is no limit). A running relay keeps
streaming meanwhile: backfill uses a connection of its own, and no slot.
A table without a primary key cannot be backfilled.

Every record carries the header "cdc-relay-backfill", whose value is the
backfill's start time (RFC 3339, UTC): consumers may ignore it, or tell a
backfill's records from the stream's. Consumers deduplicate on the "id"
header as for any at-least-once delivery.

One backfill of a table runs at a time: a second one is refused, naming the
server process of the first. Progress goes to stderr: a bar redrawn in place
on a terminal, a line every 5 seconds otherwise; a summary ends it. Ctrl-C
(SIGINT, SIGTERM) stops once the records in flight are acknowledged and
prints the command that resumes with --after, the last key published.
--dry-run counts the rows and prints the first and last key; it needs no
Kafka.

With --config, --table names one of the file's tables, and the file maps it.
When its events go to webhook publishers too (publishers:), each batch goes
to each of them, as the relay sends it, and the next is read once every
publisher took it; while a receiver is failing, the backfill waits for it
(it says so once), and a receiver's refusal (a 4xx) stops it, naming the
row, as Kafka's does.

Example:

  export CDC_RELAY_POSTGRES_URL=postgres://relay:secret@db:5432/app
  cdc-relay backfill --kafka-brokers kafka-1:9092 --table public.outbox \
    --where "created_at > now() - interval '1 hour'" --dry-run
`

// backfillSections orders backfill's flags in its usage.
var backfillSections = []flagSection{
	{"What to publish", []string{"table", "where", "after", "topic-override", "dry-run"}},
	{"Pace", []string{"rate", "batch"}},
	{"Configuration file (optional)", []string{"config"}},
	{"Connections (required: PostgreSQL and Kafka)", []string{"postgres-url", "postgres-url-file", "kafka-brokers"}},
	mappingSection,
	{"Kafka producer", producerFlagNames},
	{"Kafka security", kafkaSecurityFlagNames},
	{"Logging", []string{"log-level", "log-format"}},
}

// mappingSection lists the flags that map a table's rows to records, in
// the usage of a command on one table.
var mappingSection = flagSection{"From row to Kafka record (without --config)", []string{
	"topic-template", "topic-column", "key-column", "payload-column", "id-column",
	"header-columns", "headers-column", "timestamp-column", "timestamp-unit", "allowed-topics"}}

func (c *BackfillCommand) flags() *flag.FlagSet {
	fs := c.oneTableFlags("backfill")
	fs.StringVar(&c.table, "table", "public.outbox", "the outbox `table` to backfill, as schema.table; with --config, one of the file's tables")
	fs.StringVar(&c.opts.Where, "where", "", "the `SQL` condition that selects the rows (required; true selects all), run with the role of --postgres-url")
	fs.StringVar(&c.opts.After, "after", "", "start after this `key` (the last key a stopped backfill published); a composite key as a JSON array of strings")
	fs.StringVar(&c.opts.TopicOverride, "topic-override", "", "produce every record to this `topic` instead of the mapping's (one record per row)")
	fs.BoolVar(&c.opts.DryRun, "dry-run", false, "count the rows and print the first and last key; publish nothing")
	c.opts.Rate = backfill.DefaultRate
	fs.Var((*rateValue)(&c.opts.Rate), "rate", "publish at most `n` rows a second (such as 500, or 500/s); 0 is no limit")
	fs.IntVar(&c.opts.Batch, "batch", backfill.DefaultBatch, "read at most `n` rows a query (at most --rate)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log `format`: text, or json for one object a line")
	// What to publish is chosen on the command line, never by a variable
	// left set in a shell.
	onlyOnCommandLine(fs, "where", "after", "topic-override", "dry-run", "rate", "batch")
	return fs
}

// Usage writes backfill's help.
func (c *BackfillCommand) Usage(w io.Writer) {
	printUsage(w, listedOnly(c.flags(), backfillSections), backfillUsage, backfillSections)
}

// rateValue is --rate: rows a second, "500" or "500/s".
type rateValue float64

func (r *rateValue) String() string { return strconv.FormatFloat(float64(*r), 'f', -1, 64) + "/s" }

func (r *rateValue) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "/s"), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("want rows a second, such as 500/s (0 is no limit)")
	}
	*r = rateValue(v)
	return nil
}

// Run parses args and backfills.
func (c *BackfillCommand) Run(ctx context.Context, args []string) error {
	fs := c.flags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c.parsed = fs
	if err := c.finish(fs); err != nil {
		return err
	}
	pr := backfill.NewPrinter(c.stderr, isTerminal(c.stderr))
	log, err := newLogger(pr.Writer(), c.logLevel, c.logFormat)
	if err != nil {
		return err
	}
	c.opts.Logger = log
	c.opts.Progress = pr.Update
	c.kafkaSecurity.logSettings(log)
	if !c.opts.DryRun {
		closePublishers, err := c.backfillPublishers(c.backfilled(), log)
		if err != nil {
			return err
		}
		defer closePublishers()
	}
	stopTicks := pr.Start() // a line on time even while a batch waits
	res, err := backfill.Run(ctx, c.opts)
	stopTicks()
	pr.Clear()
	err = c.kafkaSecurity.explain(err)
	return interrupted(ctx, c.report(res, err))
}

// finish completes the backfill's config after fs was parsed: the table's
// mapping, from the command line or the config file, and the producer's
// settings.
func (c *BackfillCommand) finish(fs *flag.FlagSet) error {
	if c.opts.Where == "" {
		return usageError{"--where is required: the SQL condition that selects the rows to publish (--where true for every row)"}
	}
	if c.opts.Batch < 1 {
		return usageError{"--batch must be at least 1"}
	}
	if c.opts.DryRun && c.brokers == "" {
		c.brokers = dryRunBrokers // a dry run produces nothing
	}
	c.tables.table = c.table
	// --table names one of a config file's tables: the file's check that
	// no mapping flag is set beside it must not see it.
	if err := c.relayFlags.finish(without(fs, "table")); err != nil {
		return err
	}
	m, err := c.mapping()
	if err != nil {
		return err
	}
	c.opts.PostgresURL, c.opts.Mapping, c.opts.Kafka = c.cfg.PostgresURL, m, c.cfg.Kafka
	c.opts.Kafka.ClientID += "-backfill"
	c.opts.RecordTable = migrations.BackfillTableName(migrations.Config{CheckpointSchema: c.cfg.CheckpointSchema})
	return nil
}

// dryRunBrokers stands for --kafka-brokers in a dry run without it: it
// connects to no broker.
const dryRunBrokers = "dry-run.invalid:9092"

// backfilled is the table to backfill, once mapping found it: its
// publishers are those the rows go to.
func (c *BackfillCommand) backfilled() outbox.Table {
	for _, t := range c.cfg.Tables {
		if t.Mapping.Schema == c.opts.Mapping.Schema && t.Mapping.Table == c.opts.Mapping.Table {
			return t
		}
	}
	return outbox.Table{Mapping: c.opts.Mapping}
}

// mapping is the mapping of the table to backfill: the command line's,
// or the config file's table that --table names.
func (c *BackfillCommand) mapping() (decoder.Mapping, error) { return c.tableMapping(c.table) }

// oneTableFlags registers r's flags on a new flag set named name, but
// --table: a command on one table (backfill, audit) registers its own,
// which with --config names one of the file's tables.
func (r *relayFlags) oneTableFlags(name string) *flag.FlagSet {
	all := flag.NewFlagSet(name, flag.ContinueOnError)
	r.register(all)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	all.VisitAll(func(f *flag.Flag) {
		if f.Name != "table" {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	return fs
}

// tableMapping is the mapping of table: the command line's, or, with
// --config, the file's table of that name.
func (r *relayFlags) tableMapping(table string) (decoder.Mapping, error) {
	if r.file == nil {
		return r.cfg.Tables[0].Mapping, nil
	}
	schema, name, err := decoder.ParseTable(table)
	if err != nil {
		return decoder.Mapping{}, usageError{fmt.Sprintf("--table %q: %v", table, err)}
	}
	var names []string
	for _, t := range r.cfg.Tables {
		if t.Mapping.Schema == schema && t.Mapping.Table == name {
			return t.Mapping, nil
		}
		names = append(names, t.Mapping.Schema+"."+t.Mapping.Table)
	}
	return decoder.Mapping{}, usageError{fmt.Sprintf("--table %s is not in %s, whose tables are %s", table, r.configPath, strings.Join(names, ", "))}
}

// without returns a flag set of fs's flags but name, sharing their
// values, with the same flags set.
func without(fs *flag.FlagSet, name string) *flag.FlagSet {
	out := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != name {
			out.Var(f.Value, f.Name, f.Usage)
		}
	})
	fs.Visit(func(f *flag.Flag) {
		if f.Name != name {
			_ = out.Set(f.Name, f.Value.String()) // the value it has: marks it set
		}
	})
	return out
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
