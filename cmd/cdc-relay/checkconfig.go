package main

import (
	"bytes"
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
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/migrations"
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
}

const checkConfigUsage = `Usage: cdc-relay check-config --config relay.yaml [flags]

Checks a config file against the live database, without changing anything
(its session is read-only) and without producing anything to Kafka:

  - the file itself: every key known, every table with a value and a topic
    (or routes), each mistake with its line;
  - wal_level is logical; the slot, if it exists, uses the pgoutput plugin
    in this database; the publication exists and publishes inserts;
  - for each table: it exists and the publication includes it; every
    column the config names exists, with a type the relay can use
    (timestamp: timestamptz, timestamp or bigint; headers_column: json or
    jsonb; tags_column: text[], varchar[], json or jsonb; write_back's
    status and error columns: text, varchar, char or an enum that has the
    delivered and failed values; delivered_at_column: timestamptz or
    timestamp).

Then it prints, for each table, the record the relay would make of its
newest row (by the timestamp column, else the id, else the physical order).

It prints one block per table, "ok" or each problem on its own line, and
exits 1 if there is any problem, 0 if none.

The config file's shape:

  postgres_url: postgres://relay@db/app   # or --postgres-url
  kafka: {brokers: ["kafka:9092"]}
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
      write_back: {status_column: status, delivered: DELIVERED, failed: FAILED,
                   delivered_at_column: processed_at, error_column: null}
    - table: public.events
      id: position
      value: data
      tags_column: tags         # text[] of "key=value" or "key", or jsonb
      routes:
        - {topic: wallet-events, required_tags: [wallet_id]}
        - {topic: payment-events, any_of_tags: [payment_id, transfer_id]}

Optional top-level keys: status_table, checkpoint_table, allowed_topics (as
run's flags of the same names).

Example:

  cdc-relay check-config --config relay.yaml
`

var checkConfigSections = []flagSection{
	{"The config file (required)", []string{"config"}},
	{"Overriding the file", []string{"postgres-url", "postgres-url-file", "slot", "publication"}},
}

func (c *CheckConfigCommand) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("check-config", flag.ContinueOnError)
	fs.StringVar(&c.config, "config", "", "the config `file` to check (YAML)")
	fs.StringVar(&c.postgresURL, "postgres-url", "",
		"PostgreSQL connection `URL`; without it (or --postgres-url-file), the file's postgres_url")
	registerPostgresURLFile(fs, &c.postgresURLFile)
	fs.StringVar(&c.slot, "slot", "", "the replication slot's `name`; without it, the file's slot, else "+relay.DefaultConfig().Slot)
	fs.StringVar(&c.publication, "publication", "", "the publication's `name`; without it, the file's publication, else "+relay.DefaultConfig().Publication)
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
	slot := firstSet(c.slot, f.Slot, relay.DefaultConfig().Slot)
	publication := firstSet(c.publication, f.Publication, relay.DefaultConfig().Publication)

	conn, err := openSampleConn(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())

	w := c.stdout
	fmt.Fprintf(w, "%s: %s, slot %s, publication %s\n", c.config, plural(len(f.Tables), "table"), slot, publication)
	n := 0
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	global, err := checkDatabase(cctx, conn, slot, publication)
	cancel()
	if err != nil {
		return err
	}
	for _, p := range global {
		fmt.Fprintf(w, "  %s\n", p)
	}
	n += len(global)
	for _, t := range f.Tables {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		res, err := checkTable(cctx, conn, publication, t)
		cancel()
		if err != nil {
			return err
		}
		var sample bytes.Buffer
		if res.fit {
			sctx, cancel := context.WithTimeout(ctx, checkTimeout)
			err := printSample(sctx, &sample, conn, t, f.AllowedTopics, res)
			cancel()
			if err != nil {
				res.problems = append(res.problems, problem{table: t.Name(), msg: err.Error()})
			}
		}
		n += len(res.problems)
		fmt.Fprintln(w)
		if len(res.problems) == 0 {
			fmt.Fprintf(w, "%s: ok\n", t.Name())
		} else {
			fmt.Fprintf(w, "%s: %s\n", t.Name(), plural(len(res.problems), "problem"))
			for _, p := range res.problems {
				fmt.Fprintf(w, "  %s\n", p)
			}
		}
		_, _ = sample.WriteTo(w)
	}
	if n > 0 {
		return fmt.Errorf("%s in %s: fix them and check again", plural(n, "problem"), c.config)
	}
	fmt.Fprintf(w, "\nno problems in %s\n", c.config)
	return nil
}

// firstSet returns the first of vs that is not "".
func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
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
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse the PostgreSQL URL: %w", pgerr.Parse(err))
	}
	cfg.RuntimeParams["TimeZone"] = "UTC"
	cfg.RuntimeParams["DateStyle"] = "ISO"
	cfg.RuntimeParams["bytea_output"] = "hex"
	cfg.RuntimeParams["default_transaction_read_only"] = "on"
	cfg.RuntimeParams["application_name"] = "cdc-relay check-config"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, pgerr.Connect(&cfg.Config, err, "")
	}
	return conn, nil
}

// problem is one way the database does not fit a config: the table it
// concerns ("" for the database as a whole), the column ("" when none), and
// what is wrong and what to do, in a sentence that names both.
type problem struct {
	table, column, msg string
}

func (p problem) String() string {
	if p.table == "" {
		return p.msg
	}
	return p.table + ": " + p.msg
}

// querier is what the checks need of a connection: *pgx.Conn, a pool or a
// transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// checkTables checks each table of a config against the database, without
// changing anything: the table exists; every column the config names
// exists with a type the relay can use (and the write-back values fit the
// status column); the decoder accepts the columns
// ([decoder.Mapping.CheckColumns]); the publication exists and includes
// the table. It returns every problem found, each naming the table, the
// column and what to do, in the order of the tables; the error is for a
// database that could not be asked. run calls it at start, so that a
// config naming a missing column fails there too.
func checkTables(ctx context.Context, q querier, publication string, tables []config.Table) ([]problem, error) {
	var problems []problem
	if p, err := checkPublication(ctx, q, publication); err != nil {
		return nil, err
	} else if p != nil {
		problems = append(problems, *p)
	}
	for _, t := range tables {
		res, err := checkTable(ctx, q, publication, t)
		if err != nil {
			return nil, err
		}
		problems = append(problems, res.problems...)
	}
	return problems, nil
}

// checkDatabase checks what the tables share: wal_level, the slot (if it
// exists) and the publication.
func checkDatabase(ctx context.Context, q querier, slot, publication string) ([]problem, error) {
	var problems []problem
	if err := migrations.CheckWALLevel(ctx, q); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, err
		}
		problems = append(problems, problem{msg: err.Error()})
	}
	var plugin, slotType, db, current string
	err := q.QueryRow(ctx, `SELECT coalesce(plugin, ''), slot_type, coalesce(database, ''), current_database()
		FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&plugin, &slotType, &db, &current)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("look up replication slot %q: %w", slot, err)
	case slotType != "logical" || plugin != "pgoutput":
		kind := "physical"
		if slotType == "logical" {
			kind = "the " + plugin + " plugin"
		}
		problems = append(problems, problem{msg: fmt.Sprintf(
			"replication slot %q uses %s, the relay reads pgoutput: name another slot (slot: in the file, or --slot), or drop this one (SELECT pg_drop_replication_slot('%s')) if nothing else reads it",
			slot, kind, slot)})
	case db != current:
		problems = append(problems, problem{msg: fmt.Sprintf(
			"replication slot %q belongs to database %q, not to %q, the one the URL names: name another slot, or connect to %q", slot, db, current, db)})
	}
	p, err := checkPublication(ctx, q, publication)
	if err != nil {
		return nil, err
	}
	if p != nil {
		problems = append(problems, *p)
	}
	return problems, nil
}

// checkPublication returns a problem when the publication is missing or
// does not publish inserts.
func checkPublication(ctx context.Context, q querier, publication string) (*problem, error) {
	var inserts bool
	err := q.QueryRow(ctx, "SELECT pubinsert FROM pg_publication WHERE pubname = $1", publication).Scan(&inserts)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return &problem{msg: fmt.Sprintf("publication %q does not exist: create it for the tables, as CREATE PUBLICATION %s FOR TABLE ... WITH (publish = 'insert')",
			publication, pgx.Identifier{publication}.Sanitize())}, nil
	case err != nil:
		return nil, fmt.Errorf("look up publication %q: %w", publication, err)
	case !inserts:
		return &problem{msg: fmt.Sprintf("publication %q does not publish inserts, which are all the relay reads: ALTER PUBLICATION %s SET (publish = 'insert')",
			publication, pgx.Identifier{publication}.Sanitize())}, nil
	}
	return nil, nil
}

// tableCheck is what checkTable found of one table.
type tableCheck struct {
	problems []problem
	// fit says the table's columns fit the config: a sample can be read.
	fit bool
	// order is the ORDER BY that finds the newest row, by the column by
	// ("" for the physical order).
	order, by string
}

// column is a column of a table as the checks see it.
type column struct {
	name string
	// oid is the column's type; base is the type under a domain (oid
	// otherwise), which the type rules apply to.
	oid, base uint32
	// typ is the type's name, as format_type writes it.
	typ  string
	enum bool
	// maxLen is the length of a varchar(n) or char(n); 0 for none.
	maxLen int
}

// PostgreSQL type OIDs the column checks accept.
const (
	oidInt8        = 20
	oidText        = 25
	oidJSON        = 114
	oidBpchar      = 1042
	oidVarchar     = 1043
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidJSONB       = 3802
	oidTextArray   = 1009
	oidVarcharArr  = 1015
)

// typeRule is the types a column in a role may have.
type typeRule struct {
	oids []uint32
	enum bool   // an enum type is usable too
	want string // the types, for the message
}

// typeRules are the roles whose column types matter, by config key. The
// other roles take any type: the decoder sends a column's text (a bytea
// key or value as its bytes).
var typeRules = map[string]typeRule{
	"timestamp":                      {oids: []uint32{oidTimestamptz, oidTimestamp, oidInt8}, want: "timestamptz, timestamp or bigint (epoch milliseconds)"},
	"headers_column":                 {oids: []uint32{oidJSON, oidJSONB}, want: "json or jsonb (an object)"},
	"tags_column":                    {oids: []uint32{oidTextArray, oidVarcharArr, oidJSON, oidJSONB}, want: "text[], varchar[], json or jsonb"},
	"write_back.status_column":       {oids: []uint32{oidText, oidVarchar, oidBpchar}, enum: true, want: "text, varchar, char or an enum"},
	"write_back.error_column":        {oids: []uint32{oidText, oidVarchar, oidBpchar}, enum: true, want: "text, varchar, char or an enum"},
	"write_back.delivered_at_column": {oids: []uint32{oidTimestamptz, oidTimestamp}, want: "timestamptz or timestamp"},
}

// checkTable checks one table; see checkTables. It does not look up
// whether the publication exists (checkPublication does), only whether it
// includes the table.
func checkTable(ctx context.Context, q querier, publication string, t config.Table) (tableCheck, error) {
	var res tableCheck
	name := t.Name()
	add := func(col, format string, args ...any) {
		res.problems = append(res.problems, problem{table: name, column: col, msg: fmt.Sprintf(format, args...)})
	}
	m := t.Mapping()
	ident := pgx.Identifier{m.Schema, m.Table}.Sanitize()
	var kind *string
	if err := q.QueryRow(ctx, "SELECT (SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1))", ident).Scan(&kind); err != nil {
		return res, fmt.Errorf("look up table %s: %w", name, err)
	}
	switch {
	case kind == nil:
		add("", "the table does not exist (or this role may not see it): fix table: in the config, or create the table")
		return res, nil
	case *kind != "r" && *kind != "p":
		add("", "is not a table (relkind %s): the relay reads the inserts into a table; name the table in table:", *kind)
		return res, nil
	}

	cols, err := tableColumns(ctx, q, ident)
	if err != nil {
		return res, fmt.Errorf("read the columns of %s: %w", name, err)
	}
	byName := map[string]column{}
	for _, c := range cols {
		byName[c.name] = c
	}
	for _, use := range t.Columns() {
		c, ok := byName[use.Name]
		if !ok {
			add(use.Name, "has no column %q (%s): fix %s, or add the column", use.Name, use.Key, fixWhere(use.Key))
			continue
		}
		rule, ok := typeRules[use.Key]
		if !ok || slices.Contains(rule.oids, c.base) || rule.enum && c.enum {
			continue
		}
		add(use.Name, "column %q (%s) has type %s; want %s: change the column's type, or name another column in %s", use.Name, use.Key, c.typ, rule.want, fixWhere(use.Key))
	}
	if wb := t.WriteBack(); wb != nil {
		if c, ok := byName[wb.StatusColumn]; ok {
			for _, v := range []struct{ key, value string }{{"delivered", wb.Delivered}, {"failed", wb.Failed}} {
				msg, err := statusValueFits(ctx, q, c, v.value)
				if err != nil {
					return res, fmt.Errorf("read the values of %s.%s: %w", name, c.name, err)
				}
				if msg != "" {
					add(c.name, "write_back.%s %q %s: change write_back.%s, or the column", v.key, v.value, msg, v.key)
				}
			}
		}
	}
	if len(res.problems) == 0 {
		// What the decoder itself checks, as it would find the table in a
		// Relation message. Asked only when the checks above passed: it
		// reports one problem, which would repeat one of theirs.
		names := make([]string, len(cols))
		types := make([]uint32, len(cols))
		for i, c := range cols {
			names[i], types[i] = c.name, c.oid
		}
		dm := decoderMapping(t, "")
		if err := dm.CheckColumns(names, types); err != nil {
			var me *decoder.MappingError
			col := ""
			if errors.As(err, &me) {
				col, err = me.Missing, me.Err
			}
			add(col, "%v", err)
		}
	}
	res.fit = len(res.problems) == 0
	res.by = firstSet(t.Timestamp, t.ID)
	if res.by != "" {
		res.order = pgx.Identifier{res.by}.Sanitize() + " DESC NULLS LAST"
	} else {
		res.order = "ctid DESC"
	}

	pub, err := migrations.LookupPublication(ctx, q, migrations.Config{OutboxSchema: m.Schema, OutboxTable: m.Table, Publication: publication})
	if err != nil {
		return res, err
	}
	switch {
	case !pub.Exists: // checkPublication says so, once
	case pub.Partitioned && !pub.ViaRoot:
		add("", "publication %q publishes this partitioned table's rows under the names of its partitions, which the relay does not read: %s (it changes what every subscriber of the publication receives)",
			publication, migrations.ViaRootFix(publication))
	case !pub.HasTable:
		add("", "publication %q does not include the table: ALTER PUBLICATION %s ADD TABLE %s", publication, pgx.Identifier{publication}.Sanitize(), ident)
	}
	return res, nil
}

// fixWhere says where in the config a column named by key is set.
func fixWhere(key string) string {
	if h, ok := strings.CutPrefix(key, "headers."); ok {
		return fmt.Sprintf("the column of header %q under headers", h)
	}
	if key == "topic" {
		return "the template in topic"
	}
	return key
}

// tableColumns reads the columns of the table ident, in order.
func tableColumns(ctx context.Context, q querier, ident string) ([]column, error) {
	rows, err := q.Query(ctx, `SELECT a.attname, a.atttypid, coalesce(b.oid, t.oid), format_type(a.atttypid, a.atttypmod),
			coalesce(b.typtype, t.typtype) = 'e',
			CASE WHEN coalesce(b.oid, t.oid) IN (1042, 1043) AND coalesce(nullif(t.typtypmod, -1), a.atttypmod) > 4
				THEN coalesce(nullif(t.typtypmod, -1), a.atttypmod) - 4 ELSE 0 END
		FROM pg_attribute a
		JOIN pg_type t ON t.oid = a.atttypid
		LEFT JOIN pg_type b ON t.typtype = 'd' AND b.oid = t.typbasetype
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, ident)
	if err != nil {
		return nil, err
	}
	var cols []column
	var c column
	_, err = pgx.ForEachRow(rows, []any{&c.name, &c.oid, &c.base, &c.typ, &c.enum, &c.maxLen}, func() error {
		cols = append(cols, c)
		return nil
	})
	return cols, err
}

// statusValueFits says why a write-back value does not fit the status
// column c ("is not a value of enum type x (A, B)", "is longer than
// varchar(n)"), or "".
func statusValueFits(ctx context.Context, q querier, c column, value string) (string, error) {
	if c.enum {
		rows, err := q.Query(ctx, "SELECT enumlabel FROM pg_enum WHERE enumtypid = $1 ORDER BY enumsortorder", c.base)
		if err != nil {
			return "", err
		}
		labels, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return "", err
		}
		if !slices.Contains(labels, value) {
			return fmt.Sprintf("is not a value of the column's enum type %s (%s)", c.typ, strings.Join(labels, ", ")), nil
		}
		return "", nil
	}
	if c.maxLen > 0 && utf8.RuneCountInString(value) > c.maxLen {
		return fmt.Sprintf("is longer than the column's type %s allows", c.typ), nil
	}
	return "", nil
}

// decoderMapping is the mapping the sample is decoded with: the table's
// own, with the file's allowed_topics.
func decoderMapping(t config.Table, allowedTopics string) decoder.Mapping {
	m := t.Mapping()
	m.AllowedTopics = allowedTopics
	return m
}

// sampleLimit is how much of a key or value the sample shows.
const sampleLimit = 512

// printSample prints the record the relay would make of the table's newest
// row (by checkTable's res.order), or says the table is empty. conn must
// render values as openSampleConn's does.
func printSample(ctx context.Context, w io.Writer, conn *pgx.Conn, t config.Table, allowedTopics string, res tableCheck) error {
	ident := pgx.Identifier{t.Mapping().Schema, t.Mapping().Table}.Sanitize()
	rr := conn.PgConn().ExecParams(ctx, "SELECT * FROM "+ident+" ORDER BY "+res.order+" LIMIT 1", nil, nil, nil, nil)
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
			return fmt.Errorf("reading the newest row took longer than %s: an index on %q would help", checkTimeout, res.by)
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
	dec, err := decoder.New(decoderMapping(t, allowedTopics))
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
	if res.by != "" {
		by = "by " + res.by
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
			if n == t.TagsColumn {
				fmt.Fprintf(w, "    tags       %s\n", sampleBytes(values[i]))
			}
		}
		for _, r := range t.Routes {
			fmt.Fprintf(w, "    route      %s\n", routeText(r))
		}
	}
	if t.Key == "" {
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
