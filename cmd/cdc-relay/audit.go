package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cdc-relay/cdc-relay/audit"
	"github.com/cdc-relay/cdc-relay/backfill"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// AuditCommand is `cdc-relay audit`: check that every row of an outbox
// table (or of a range of it) reached Kafka, once, on its topic, and each
// key's in commit order.
type AuditCommand struct {
	stdout, stderr io.Writer

	relayFlags
	table               string
	since, until        string
	topics              string // --topic
	json                bool
	logLevel, logFormat string
	opts                audit.Config
}

const auditUsage = `Usage: cdc-relay audit --table T [--since TIME] [--until TIME] [--from-id ID] [--to-id ID] [flags]

Checks that the rows of one outbox table reached Kafka: it reads the rows
(all of them, or those of a time or id range), computes each row's topics,
record key and "id" header with the table's own mapping, as the relay does,
then reads the records of those topics and matches them to the rows by
their "id" header and key. It reports:

  missing       a row with no record on one of its topics (a row that
                cannot become a record, which the relay parks DEAD, too)
  duplicate     a row with more than one record on a topic (at-least-once
                delivery allows them: consumers deduplicate on "id")
  wrong topic   a record of a row on a topic its mapping does not send it
                to (among the topics read: the rows' and --topic's)
  out of order  two rows of one topic and record key whose first records
                are not in the rows' commit order in the partition

Commit order: the table does not keep it. The audit reads it from
--order-column: by default the primary key when it is one integer column
(a bigserial or an identity), whose values are taken at insert; that is
commit order where a key's events are written one transaction after
another (the usual outbox: the aggregate's row is locked, then its event
inserted). Events of one key written by transactions that overlap may
commit, and so reach Kafka, in the other order: check such a finding with
the application. A timestamp column the application sets in commit order
serves too. A table whose primary key is a uuid or text has no order to
read: order is not checked unless --order-column names one, and the
summary says so.

Rows are read in one read-only snapshot (REPEATABLE READ), --batch at a
time, at most --rate rows a second; records from the first offset at or
after --since less --margin (the broker's timestamp index: ListOffsets by
timestamp; the partitions' start without --since) to the last stable offset
when the rows are read (or the first offset after --until plus --margin),
at most --kafka-rate records a second. Audit a range the relay has sent:
a row committed after the relay's position is reported missing. Memory
grows with the rows, not the records: a million rows of uuid ids took
270 MiB at most (docs/BENCHMARKS.md).

The role of --postgres-url needs SELECT on the table; the Kafka principal
DESCRIBE and READ on the topics. Nothing is written to either.

Progress goes to stderr on a terminal. The summary goes to stdout, --json
prints it as JSON. Exit code: 0 every row's records are there, once, on
their topics and in order; 1 something was found; 2 a usage error or a
failure to read PostgreSQL or Kafka.

Example:

  export CDC_RELAY_POSTGRES_URL=postgres://relay:secret@db:5432/app
  cdc-relay audit --kafka-brokers kafka-1:9092 --table public.outbox \
    --since 2026-11-30T08:00:00Z --until 2026-11-30T09:00:00Z
`

// auditSections orders audit's flags in its usage.
var auditSections = []flagSection{
	{"What to audit", []string{"table", "since", "until", "from-id", "to-id", "order-column", "topic", "margin"}},
	{"Output", []string{"json", "max-findings"}},
	{"Pace", []string{"rate", "kafka-rate", "batch"}},
	{"Configuration file (optional)", []string{"config"}},
	{"Connections (required: PostgreSQL and Kafka)", []string{"postgres-url", "postgres-url-file", "kafka-brokers"}},
	mappingSection,
	{"Kafka security", kafkaSecurityFlagNames},
	{"Logging", []string{"log-level", "log-format"}},
}

func (c *AuditCommand) flags() *flag.FlagSet {
	fs := c.oneTableFlags("audit")
	// The relay's words say it needs REPLICATION; the audit reads only.
	fs.Lookup("postgres-url").Usage = "PostgreSQL connection `URL`, such as postgres://auditor:secret@db:5432/app; the role needs SELECT on the table only"
	o := &c.opts
	fs.StringVar(&c.table, "table", "public.outbox", "the outbox `table` to audit, as schema.table; with --config, one of the file's tables")
	fs.StringVar(&c.since, "since", "", "audit the rows whose timestamp column is at or after this `time` (RFC 3339, such as 2026-11-30T08:00:00Z)")
	fs.StringVar(&c.until, "until", "", "audit the rows whose timestamp column is before this `time` (RFC 3339)")
	fs.StringVar(&o.FromID, "from-id", "", "audit the rows whose id column is at least this `id` (compared as the column's type)")
	fs.StringVar(&o.ToID, "to-id", "", "audit the rows whose id column is at most this `id`")
	fs.StringVar(&o.OrderColumn, "order-column", "", "the `column` read as commit order: an integer or a timestamp; none checks no order "+
		"(default: the primary key when it is one integer column, else none)")
	fs.StringVar(&c.topics, "topic", "", "read these `topics` too (comma-separated), where a record on the wrong topic may be")
	durationVar(fs, &o.Margin, "margin", audit.DefaultMargin, "read Kafka's records from this long before --since to this long after --until: a record's timestamp is its row's, and records are in commit order")
	fs.BoolVar(&c.json, "json", false, "print the summary and the findings as JSON")
	fs.IntVar(&o.Limit, "max-findings", audit.DefaultLimit, "list at most `n` findings of each kind (all are counted); 0 lists all")
	o.RowRate, o.RecordRate = audit.DefaultRowRate, audit.DefaultRecordRate
	fs.Var((*rateValue)(&o.RowRate), "rate", "read at most `n` rows a second from PostgreSQL (such as 5000, or 5000/s); 0 is no limit")
	fs.Var((*rateValue)(&o.RecordRate), "kafka-rate", "read at most `n` records a second from Kafka; 0 is no limit")
	fs.IntVar(&o.Batch, "batch", audit.DefaultBatch, "read at most `n` rows a fetch")
	fs.StringVar(&c.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log `format`: text, or json for one object a line")
	onlyOnCommandLine(fs, "since", "until", "from-id", "to-id", "order-column", "topic", "margin", "json", "max-findings", "rate", "kafka-rate", "batch")
	return fs
}

// Usage writes audit's help.
func (c *AuditCommand) Usage(w io.Writer) {
	printUsage(w, listedOnly(c.flags(), auditSections), auditUsage, auditSections)
}

// Run parses args, audits, and prints what it found: exit code 1 when it
// found anything, 2 when it could not read.
func (c *AuditCommand) Run(ctx context.Context, args []string) error {
	fs := c.flags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := c.finish(fs); err != nil {
		return err
	}
	pr := backfill.NewPrinter(c.stderr, isTerminal(c.stderr))
	log, err := newLogger(pr.Writer(), c.logLevel, c.logFormat)
	if err != nil {
		return err
	}
	c.opts.Logger = log
	if isTerminal(c.stderr) {
		c.opts.Progress = pr.Update
	}
	c.kafkaSecurity.logSettings(log)
	res, err := audit.Run(ctx, c.opts)
	pr.Clear()
	if err != nil {
		return interrupted(ctx, exitCodeError{code: 2, err: c.kafkaSecurity.explain(err)})
	}
	if err := c.print(res); err != nil {
		return err
	}
	if !res.Clean() {
		return exitCodeError{code: 1}
	}
	return nil
}

// finish completes the audit's config after fs was parsed.
func (c *AuditCommand) finish(fs *flag.FlagSet) error {
	var err error
	if c.opts.Since, err = parseTimeFlag("since", c.since); err != nil {
		return err
	}
	if c.opts.Until, err = parseTimeFlag("until", c.until); err != nil {
		return err
	}
	if !c.opts.Since.IsZero() && !c.opts.Until.IsZero() && !c.opts.Until.After(c.opts.Since) {
		return usageError{"--until must be after --since"}
	}
	if c.opts.Batch < 1 {
		return usageError{"--batch must be at least 1"}
	}
	c.opts.Topics = splitList(c.topics)
	c.tables.table = c.table
	if err := c.relayFlags.finish(without(fs, "table")); err != nil {
		return err
	}
	m, err := c.tableMapping(c.table)
	if err != nil {
		return err
	}
	c.opts.PostgresURL, c.opts.Mapping, c.opts.Kafka = c.cfg.PostgresURL, m, c.cfg.Kafka
	c.opts.Kafka.ClientID += "-audit"
	return c.kafkaSends(m)
}

// kafkaSends sets the audit to expect records on the topics the table of
// m sends to Kafka only (a config file's table or route may send its
// events to webhook publishers alone), and refuses a table that sends
// none there: the audit reads Kafka only.
func (c *AuditCommand) kafkaSends(m decoder.Mapping) error {
	i := slices.IndexFunc(c.cfg.Tables, func(t outbox.Table) bool { return t.Mapping.Schema == m.Schema && t.Mapping.Table == m.Table })
	if i < 0 {
		return nil
	}
	t := c.cfg.Tables[i]
	pubs := t.AllPublishers()
	if !slices.Contains(pubs, outbox.KafkaPublisher) {
		return usageError{fmt.Sprintf("--table %s.%s: %s sends its events to %s only, not to Kafka; the audit reads Kafka only",
			m.Schema, m.Table, c.configPath, strings.Join(pubs, ", "))}
	}
	if len(pubs) > 1 {
		c.opts.KafkaSends = func(topic string) bool { return t.SendsTo(topic, outbox.KafkaPublisher) }
	}
	return nil
}

// parseTimeFlag is --name's time, zero when s is empty.
func parseTimeFlag(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usageError{fmt.Sprintf("--%s %q: want a time such as 2026-11-23T08:00:00Z", name, s)}
	}
	return t, nil
}

// print writes res: JSON with --json, else the summary and the findings
// listed.
func (c *AuditCommand) print(res audit.Result) error {
	if c.json {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprint(c.stdout, auditText(res))
	return nil
}

// auditText is the audit's summary for a person: a line of counts, a
// line per finding listed, and the verdict.
func auditText(r audit.Result) string {
	var b strings.Builder
	n := backfill.Thousands
	fmt.Fprintf(&b, "audit of %s: %s row(s), %s record(s) expected, %s read (%s matched, %s of other rows)\n",
		r.Table, n(r.Rows), n(r.Expected), n(r.Records), n(r.Matched), n(r.Unmatched))
	for _, t := range r.TopicsAbsent {
		fmt.Fprintf(&b, "topic %s does not exist: its rows' records are all missing (deleted? or does the mapping name it otherwise than the relay's?)\n", t)
	}
	if r.Elsewhere > 0 {
		fmt.Fprintf(&b, "%s row(s) go to other publishers than Kafka only: no record of theirs is expected\n", n(r.Elsewhere))
	}
	if r.Unrouted > 0 {
		fmt.Fprintf(&b, "%s row(s) match no route: they go nowhere, as the relay sends them\n", n(r.Unrouted))
	}
	for _, m := range r.Missing {
		if m.Reason != "" {
			fmt.Fprintf(&b, "missing: id %s (key %q): cannot become a record, the relay parks it DEAD: %s\n", m.ID, m.Key, m.Reason)
			continue
		}
		fmt.Fprintf(&b, "missing: id %s on %s (key %q)\n", m.ID, m.Topic, m.Key)
	}
	for _, d := range r.Duplicates {
		fmt.Fprintf(&b, "duplicate: id %s on %s: %d records\n", d.ID, d.Topic, d.Records)
	}
	for _, w := range r.WrongTopic {
		fmt.Fprintf(&b, "wrong topic: id %s on %s[%d] at offset %d: its row goes to %s\n", w.ID, w.Topic, w.Partition, w.Offset, strings.Join(w.Want, ", "))
	}
	for _, o := range r.OutOfOrder {
		fmt.Fprintf(&b, "out of order: key %q on %s: id %s (%s[%d] offset %d) was committed before id %s (%s[%d] offset %d)\n",
			o.Key, o.Topic, o.Earlier.ID, o.Topic, o.Earlier.Partition, o.Earlier.Offset, o.Later.ID, o.Topic, o.Later.Partition, o.Later.Offset)
	}
	order := "keys in the order of " + r.OrderColumn
	if r.OrderColumn == "" {
		order = "order not checked (no order column: --order-column names one)"
	}
	fmt.Fprintf(&b, "%s missing, %s duplicate(s), %s on the wrong topic, %s out of order; %s\n",
		n(r.MissingCount), n(r.DuplicateCount), n(r.WrongTopicCount), n(r.OutOfOrderCount), order)
	listed := int64(len(r.Missing) + len(r.Duplicates) + len(r.WrongTopic) + len(r.OutOfOrder))
	if listed < r.MissingCount+r.DuplicateCount+r.WrongTopicCount+r.OutOfOrderCount {
		fmt.Fprintf(&b, "(%s of them listed above: --max-findings lists more of each kind, --json prints them for a script)\n", n(listed))
	}
	if r.Clean() {
		b.WriteString("every row's records are there, once, on their topics\n")
	}
	return b.String()
}
