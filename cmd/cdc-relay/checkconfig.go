package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/preflight"
	"github.com/cdc-relay/cdc-relay/progress"
	"github.com/cdc-relay/cdc-relay/pubwatch"
	"github.com/cdc-relay/cdc-relay/relay"
)

// CheckConfigCommand is `cdc-relay check-config`: check a config file
// against the live database, and show a sample record of each table.
type CheckConfigCommand struct {
	stdout, stderr io.Writer

	config          string
	postgresURL     string
	postgresURLFile string
	slot            string
	publication     string
	statusTable     string
}

const checkConfigUsage = `Usage: cdc-relay check-config --config relay.yaml [flags]

Checks a config file against the live database, without changing anything
(its session is read-only; the one trial that writes, below, is always
rolled back) and without producing anything to Kafka:

  - the file itself: every key known, every table with a value and a topic
    (or routes), every message source with a prefix, each mistake with its
    line; two routes of a table that name one topic are a warning, not a
    problem (an event that matches both is sent to it once); a table's
    ordering that run would refuse under the file's ordering;
  - wal_level is logical; the slot, if it exists, uses the pgoutput plugin
    in this database; the publication exists and publishes inserts;
  - for each table with time_zone: PostgreSQL knows the zone
    (pg_timezone_names), which write-back's statements name;
  - for each table: it exists and the publication includes it; every
    column the config names exists, with a type the relay can use
    (timestamp: timestamptz, timestamp or bigint; headers_column: json or
    jsonb; tags_column: text[], varchar[], json or jsonb; write_back's
    status and error columns: text, varchar, char or an enum, the status
    column one that has the delivered, failed, retrying, dead and pending
    values; delivered_at_column, next_attempt_column and
    last_attempt_column: timestamptz or timestamp; attempts_column:
    smallint, integer, bigint or numeric);
  - for each table with write_back whose columns fit: the delivered,
    retrying and dead values are each written to one row, with the columns
    the relay sets beside them, in a transaction that is always rolled
    back (a savepoint per value, at most 2 s of waiting for a locked row),
    so that the table's own CHECK constraints and triggers say whether
    they take them. A value refused is a problem, with PostgreSQL's
    SQLSTATE and message; an empty table is noted and not tried. The
    start-up check of run --config makes the other checks, never this
    one: it only reads;
  - for each table whose write_back lists pending values: it has the
    trigger cdc_relay_reset that "cdc-relay migrate --config" creates (on
    the status table's trigger function, enabled, for these values), or
    setting a row back to a pending value would not send its event again;
  - for each table with adopt (its own, or a route's) whose columns fit:
    PostgreSQL plans the query that adopts its rows (EXPLAIN, with this
    role), so that a typo is a problem, naming a route's adopt refused,
    before migrate creates the slot. The first run, which
    creates the slot when migrate did not, plans it too, with its own
    role, and stops on a refusal;
  - for each table with progress: its progress table exists with its
    topic, publisher and position columns, a unique index on (topic,
    publisher), no other NOT NULL column without a default, and this role
    may read, insert and update it, as run checks at start;
  - with message sources (messages:): the server is PostgreSQL 14 or
    later, whose pgoutput sends logical decoding messages. A message
    names no table or column: nothing else is checked for it;
  - for each webhook publisher (publishers:): its secret is read and
    parsed, its TLS files are read, and its URL's host resolves. Nothing
    is sent to it.

Then it prints, for each table, its ordering in words (its own ordering:,
else the file's, else key); for each table with write_back, what its rows say as
their events go through the relay, in the table's own values (delivered,
refused and to be tried again, given up on, set back by a runbook,
adopted at the switch-over); for each table with progress, what each
column of its progress table says; for each table, the record the relay would
make of its newest row (by the timestamp column, else the id, else the
physical order);
for each message source, how a message of its prefix becomes a record (a
message is in the WAL only: there is no row to show).

It prints one block per table and per message source, "ok" or each problem
on its own line, and exits 1 if there is any problem, 0 if none.

The config file's shape:

  postgres_url: postgres://relay@db/app   # or --postgres-url
  kafka: {brokers: ["kafka:9092"]}     # also compression: none, gzip,
                                       # snappy, lz4 or zstd, and
                                       # batch_max_bytes: 1000012
  slot: cdc_relay
  publication: cdc_relay
  tables:
    - table: public.notification_outbox
      id: id                    # column -> header "id"
      key: deal_id              # column -> record key
      value: payload            # column -> record value
      topic: "notifications.{template}"   # literal or {column} template
      topic_column: null        # a column that, when not null, overrides topic
      headers: {template: template, recipient: recipient_id}  # name <- column
      headers_column: null      # a json(b) object column merged into headers
      timestamp: created_at
      time_zone: null           # zone of timestamp columns without one
                                # (America/New_York); null: UTC
      write_back: {status_column: status, delivered: DELIVERED, failed: FAILED,
                   retrying: PENDING,   # while it is tried again; null: failed
                   dead: null,          # once given up on; null: failed
                   pending: [PENDING, PROCESSING],
                   delivered_at_column: processed_at, error_column: null,
                   keep_error: false,   # true keeps the error once delivered
                   attempts_column: retry_count, next_attempt_column: null,
                   last_attempt_column: null}
    - table: public.events
      id: position
      value: data
      tags_column: tags         # text[] of "key=value" or "key", or jsonb
      routes:
        - {topic: wallet-events, required_tags: [wallet_id]}
        - {topic: payment-events, any_of_tags: [payment_id, transfer_id]}
      adopt: position > 4000    # rows to send once when the slot is created;
                                # a route's own adopt: for its topic instead
      progress: {table: outbox_topic_progress, publisher: KafkaPublisher}
                                # the team's own progress table, kept true
      ordering: topic           # key or topic: the order of this table's
                                # topics, overriding the file's ordering
                                # (topic needs routes or a fixed topic)
  messages:                     # pg_logical_emit_message (PostgreSQL 14+)
    - prefix: outbox            # content: a JSON envelope of topic, key,
      topic: orders.events      # id, headers and payload; this topic for
                                # an envelope that names none
    - prefix: audit
      payload_only: true        # the content is the record value
      topic: audit.events
      key_field: account_id     # optional: a member of the content
      id_field: event_id        # optional: else the message's WAL position

A file needs tables:, messages: or both. Optional top-level keys:
status_table, checkpoint_table, allowed_topics (as run's flags of the same
names; allowed_topics applies to the message sources too, unless an entry
of messages sets its own), ordering.

Example:

  cdc-relay check-config --config relay.yaml
`

var checkConfigSections = []flagSection{
	{"The config file (required)", []string{"config"}},
	{"Overriding the file", []string{"postgres-url", "postgres-url-file", "slot", "publication", "status-table"}},
}

func (c *CheckConfigCommand) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("check-config", flag.ContinueOnError)
	fs.StringVar(&c.config, "config", "", "the config `file` to check (YAML)")
	fs.StringVar(&c.postgresURL, "postgres-url", "",
		"PostgreSQL connection `URL`; without it (or --postgres-url-file), the file's postgres_url")
	registerPostgresURLFile(fs, &c.postgresURLFile)
	fs.StringVar(&c.slot, "slot", "", "the replication slot's `name`; without it, the file's slot, else "+relay.DefaultConfig().Slot)
	fs.StringVar(&c.publication, "publication", "", "the publication's `name`; without it, the file's publication, else "+relay.DefaultConfig().Publication)
	fs.StringVar(&c.statusTable, "status-table", "", "the status table, as `schema.table`, whose trigger function a reset trigger calls; without it, the file's status_table, else "+
		defaultStatusTable())
	return fs
}

// Usage writes check-config's help.
func (c *CheckConfigCommand) Usage(w io.Writer) {
	printUsage(w, c.flags(), checkConfigUsage, checkConfigSections)
}

// checkTimeout bounds the checks and the reading of each sample row.
const checkTimeout = 30 * time.Second

// Run checks the config file and prints what it found.
func (c *CheckConfigCommand) Run(ctx context.Context, args []string) error {
	fs := c.flags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if c.config == "" {
		return usageError{"--config (or CDC_RELAY_CONFIG) is required: the config file to check"}
	}
	f, err := config.Load(c.config)
	if err != nil {
		return err
	}
	url, err := postgresURLFrom(c.postgresURL, c.postgresURLFile)
	if err != nil {
		return err
	}
	if url == "" {
		url = f.PostgresURL
	}
	if url == "" {
		return usageError{"no PostgreSQL URL: set postgres_url in " + c.config + ", or --postgres-url (CDC_RELAY_POSTGRES_URL), or --postgres-url-file"}
	}
	slot := cmp.Or(c.slot, f.Slot, relay.DefaultConfig().Slot)
	names := preflight.Names{Publication: cmp.Or(c.publication, f.Publication, relay.DefaultConfig().Publication), ConfigPath: c.config}
	statusTable := cmp.Or(c.statusTable, f.StatusTable, defaultStatusTable())
	if names.StatusSchema, names.StatusTable, err = decoder.ParseTable(statusTable); err != nil {
		return usageError{fmt.Sprintf("--status-table %q: %v", statusTable, err)}
	}

	conn, err := openSampleConn(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())

	w := c.stdout
	fmt.Fprintf(w, "%s: %s, slot %s, publication %s\n", c.config, sourcesText(f), slot, names.Publication)
	for _, warning := range f.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warning)
	}
	n := 0
	if p := orderingProblem(f); p != "" {
		fmt.Fprintf(w, "  %s\n", p)
		n++
	}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	global, err := preflight.CheckDatabase(cctx, conn, slot, names.Publication)
	cancel()
	if err != nil {
		return err
	}
	for _, p := range global {
		fmt.Fprintf(w, "  %s\n", p)
	}
	n += len(global)
	problems, err := checkSources(ctx, w, conn, names, f)
	if err != nil {
		return err
	}
	n += checkPublishers(ctx, w, f, checkWebhook)
	if n += problems; n > 0 {
		return fmt.Errorf("%s in %s: fix them and check again", plural(n, "problem"), c.config)
	}
	fmt.Fprintf(w, "\nno problems in %s\n", c.config)
	return nil
}

// checkSources checks and prints each table of f, then each message
// source, and returns the number of problems.
func checkSources(ctx context.Context, w io.Writer, conn *pgx.Conn, names preflight.Names, f *config.File) (int, error) {
	n := 0
	byTopic := topicOrdered(f)
	for _, t := range f.Tables {
		problems, err := checkTable(ctx, w, conn, names, t, f.AllowedTopics, orderingText(t, f.Ordering, byTopic))
		if err != nil {
			return 0, err
		}
		n += problems
	}
	if len(f.Messages) == 0 {
		return n, nil
	}
	problems, err := messageProblems(ctx, conn)
	if err != nil {
		return 0, err
	}
	for _, m := range f.Messages {
		printMessageSource(w, m, f.AllowedTopics, problems)
		n += len(problems)
	}
	return n, nil
}

// checkTable checks one table, tries its write-back values, and prints
// its block: "ok" or its problems, its ordering (in words), what the
// trial found, and the sample record. It returns the number of problems.
func checkTable(ctx context.Context, w io.Writer, conn *pgx.Conn, names preflight.Names, t outbox.Table, allowedTopics, ordering string) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	res, err := preflight.CheckTable(cctx, conn, names, t)
	cancel()
	if err != nil {
		return 0, err
	}
	var trial preflight.WriteBackTrial
	if res.Fit {
		tctx, cancel := context.WithTimeout(ctx, checkTimeout)
		trial, err = preflight.TryWriteBack(tctx, conn, t)
		cancel()
		if err != nil {
			return 0, err
		}
		res.Problems = append(res.Problems, trial.Problems...)
		actx, cancel := context.WithTimeout(ctx, checkTimeout)
		p, err := preflight.CheckAdopt(actx, conn, t)
		cancel()
		if err != nil {
			return 0, err
		}
		if p != nil {
			res.Problems = append(res.Problems, *p)
		}
	}
	checked, problem := checkProgressTable(ctx, conn, t)
	if problem != nil {
		res.Problems = append(res.Problems, *problem)
	}
	var sample bytes.Buffer
	if res.Fit {
		sctx, cancel := context.WithTimeout(ctx, checkTimeout)
		err := printSample(sctx, &sample, conn, t, allowedTopics, res)
		cancel()
		if err != nil {
			res.Problems = append(res.Problems, preflight.Problem{Table: t.Name(), Msg: err.Error()})
		}
	}
	fmt.Fprintln(w)
	if len(res.Problems) == 0 {
		fmt.Fprintf(w, "%s: ok\n", t.Name())
	} else {
		fmt.Fprintf(w, "%s: %s\n", t.Name(), plural(len(res.Problems), "problem"))
		for _, p := range res.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	fmt.Fprintf(w, "  %s\n", ordering)
	if wb := t.WriteBack; wb != nil {
		fmt.Fprintf(w, "  what each row says (write_back):\n")
		for _, l := range wb.Lifecycle() {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	printProgress(w, t, checked)
	if len(trial.Accepted) > 0 {
		fmt.Fprintf(w, "  write_back values the table takes (tried on one row, rolled back): %s\n", strings.Join(trial.Accepted, ", "))
	}
	if trial.Untried != "" {
		fmt.Fprintf(w, "  write_back values not tried against the table's constraints and triggers: %s\n", trial.Untried)
	}
	_, _ = sample.WriteTo(w)
	return len(res.Problems), nil
}

// checkedProgress is a table's progress table as progress.Check found
// it, and the columns it left out.
type checkedProgress struct {
	table progress.Table
	left  []string
}

// checkProgressTable checks t's progress table as the relay will at
// start (progress.Check), and returns it as the relay will keep it, or
// the problem that stops the relay; nil, nil without one.
func checkProgressTable(ctx context.Context, conn *pgx.Conn, t outbox.Table) (*checkedProgress, *preflight.Problem) {
	if t.Progress == nil {
		return nil, nil
	}
	pctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	checked, left, err := progress.Check(pctx, conn, *t.Progress, t.ProgressSource())
	if err != nil {
		return nil, &preflight.Problem{Table: t.Name(), Msg: err.Error()}
	}
	return &checkedProgress{table: checked, left: left}, nil
}

// printProgress prints what the checked progress table says, in the
// team's words.
func printProgress(w io.Writer, t outbox.Table, c *checkedProgress) {
	if c == nil {
		return
	}
	for _, pp := range t.ProgressTables() {
		table := c.table
		table.Publisher = pp.Table.Publisher
		whose := ""
		if pp.Publisher != outbox.KafkaPublisher {
			whose = ": the rows of publisher " + pp.Publisher
		}
		fmt.Fprintf(w, "  what %s says (progress, publisher %s%s):\n", t.Progress.Schema+"."+t.Progress.Name, table.Publisher, whose)
		for _, l := range table.Says() {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	if len(c.left) > 0 {
		fmt.Fprintf(w, "    not written, the table has no such column: %s\n", strings.Join(c.left, ", "))
	}
}

// defaultStatusTable is the status table's name without --status-table.
func defaultStatusTable() string {
	d := relay.DefaultConfig()
	return d.StatusSchema + "." + d.StatusTable
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// openSampleConn connects for check-config: a read-only session that
// renders values as the relay's replication connection does (TimeZone=UTC,
// DateStyle=ISO, bytea_output=hex), so that the decoder reads the sample
// row as it would read the row from the WAL. Its errors never hold the
// password.
func openSampleConn(ctx context.Context, url string) (*pgx.Conn, error) {
	return pgconnect.Open(ctx, url, pgconnect.Options{RuntimeParams: map[string]string{
		"TimeZone":                      "UTC",
		"DateStyle":                     "ISO",
		"bytea_output":                  "hex",
		"default_transaction_read_only": "on",
		"application_name":              "cdc-relay check-config",
	}})
}

// decoderMapping is the mapping the sample is decoded with: the table's
// own (a copy), with the file's allowed_topics.
func decoderMapping(t outbox.Table, allowedTopics string) decoder.Mapping {
	m := t.Clone().Mapping
	m.AllowedTopics = allowedTopics
	return m
}

// sampleLimit is how much of a key or value the sample shows.
const sampleLimit = 512

// printSample prints the record the relay would make of the table's newest
// row (by res.Order), or says the table is empty. conn must render values
// as openSampleConn's does.
func printSample(ctx context.Context, w io.Writer, conn *pgx.Conn, t outbox.Table, allowedTopics string, res preflight.TableCheck) error {
	ident := pgx.Identifier{t.Mapping.Schema, t.Mapping.Table}.Sanitize()
	rr := conn.PgConn().ExecParams(ctx, "SELECT * FROM "+ident+" ORDER BY "+res.Order+" LIMIT 1", nil, nil, nil, nil)
	fields := rr.FieldDescriptions()
	names := make([]string, len(fields))
	types := make([]uint32, len(fields))
	for i, f := range fields {
		names[i], types[i] = f.Name, f.DataTypeOID
	}
	var values [][]byte
	for rr.NextRow() {
		for _, v := range rr.Values() {
			if v != nil {
				v = slices.Clone(v)
			}
			values = append(values, v)
		}
	}
	if _, err := rr.Close(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("reading the newest row took longer than %s: an index on %q would help", checkTimeout, res.By)
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			return fmt.Errorf("read the newest row: %w: GRANT SELECT ON %s TO the relay's role (recover reads the table too)", err, ident)
		}
		return fmt.Errorf("read the newest row: %w", err)
	}
	if values == nil {
		fmt.Fprintf(w, "  no rows yet: no sample\n")
		return nil
	}
	ms, err := pubwatch.WithNotNull(ctx, conn, []decoder.Mapping{decoderMapping(t, allowedTopics)})
	if err != nil {
		return fmt.Errorf("cannot decode a sample: %w", err)
	}
	dec, err := decoder.New(ms[0])
	if err != nil {
		return fmt.Errorf("cannot decode a sample: %w", err)
	}
	rows, err := dec.Rows(names, types)
	if err != nil {
		return fmt.Errorf("cannot decode a sample: %w", err)
	}
	msg := rows.Decode(values, 0)
	ev := msg.Event
	by := "by its physical place, the table having no timestamp or id column"
	if res.By != "" {
		by = "by " + res.By
	}
	fmt.Fprintf(w, "  sample record, from the newest row (%s):\n", by)
	switch {
	case msg.Routed && len(msg.Routes) == 0:
		fmt.Fprintf(w, "    topics     none: its tags match no route, so it would be counted and sent nowhere\n")
	case msg.Routed:
		fmt.Fprintf(w, "    topics     %s (one copy each, by its tags)\n", strings.Join(msg.Routes, ", "))
	default:
		fmt.Fprintf(w, "    topic      %s\n", ev.Topic)
	}
	if msg.Routed {
		for i, n := range names {
			if n == t.Mapping.TagsColumn {
				fmt.Fprintf(w, "    tags       %s\n", sampleBytes(values[i]))
			}
		}
		for _, r := range t.Mapping.Routes {
			fmt.Fprintf(w, "    route      %s\n", routeText(r))
		}
	}
	if t.Mapping.KeyColumn == "" {
		fmt.Fprintf(w, "    key        (none: no key column; Kafka spreads the records over the partitions)\n")
	} else {
		fmt.Fprintf(w, "    key        %s\n", sampleBytes(ev.Key))
	}
	fmt.Fprintf(w, "    value      %s\n", sampleBytes(ev.Value))
	if len(ev.Headers) == 0 {
		fmt.Fprintf(w, "    headers    (none)\n")
	}
	for i, h := range ev.Headers {
		label := ""
		if i == 0 {
			label = "headers"
		}
		fmt.Fprintf(w, "    %-9s  %s: %s\n", label, h.Key, sampleBytes(h.Value))
	}
	if ev.Timestamp.IsZero() {
		fmt.Fprintf(w, "    timestamp  (none: the producer stamps the record)\n")
	} else {
		fmt.Fprintf(w, "    timestamp  %s\n", ev.Timestamp.UTC().Format(time.RFC3339Nano))
	}
	if msg.Poison != nil {
		fmt.Fprintf(w, "  this row would be parked in the status table, not produced: %v\n", msg.Poison)
	}
	return nil
}

// routeText describes a route: its topic and the tags it wants.
func routeText(r decoder.Route) string {
	var want []string
	if len(r.RequiredTags) > 0 {
		want = append(want, "all of ["+strings.Join(r.RequiredTags, ", ")+"]")
	}
	if len(r.AnyOfTags) > 0 {
		want = append(want, "any of ["+strings.Join(r.AnyOfTags, ", ")+"]")
	}
	return r.Topic + " when the tags have " + strings.Join(want, " and ")
}

// sampleBytes shows a key, value or header: its text when it is UTF-8,
// else its hex and length; at most sampleLimit bytes of either.
func sampleBytes(b []byte) string {
	if b == nil {
		return "(null)"
	}
	more := ""
	if len(b) > sampleLimit {
		more = fmt.Sprintf(" … (%d bytes in all)", len(b))
	}
	if utf8.Valid(b) {
		s := string(b)
		if len(s) > sampleLimit {
			s = strings.ToValidUTF8(s[:sampleLimit], "")
		}
		return s + more
	}
	shown := b[:min(len(b), sampleLimit)]
	if more == "" {
		more = fmt.Sprintf(" (%d bytes, not UTF-8)", len(b))
	} else {
		more += ", not UTF-8"
	}
	return fmt.Sprintf("hex %x%s", shown, more)
}
