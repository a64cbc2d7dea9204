package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/internal/suggest"
	"github.com/cdc-relay/cdc-relay/relay"
	"github.com/cdc-relay/cdc-relay/status"
)

// FailedCommand is `cdc-relay failed <list|show|retry|skip|purge>`: look at
// and act on the events parked in the status table.
type FailedCommand struct {
	stdout, stderr io.Writer

	sub string // the subcommand; "" until Run has read it

	postgresURL string
	statusTable string
	state       string // --status
	topic       string
	limit       int
	json        bool
	all         bool
	dead        bool
	olderThan   time.Duration
	// allowedTopics is retry's --allowed-topics: the topics a corrected
	// topic (--topic) may be, as run's.
	allowedTopics string
	// file is the config file --config names, or nil: with it, a
	// corrected topic must also pass the allowed topics of the event's
	// own source (checkSourceTopic).
	file *config.File

	given map[string]bool // the flags given on the command line

	postgresURLFile string
	configPath      string
}

// failedSubcommands are failed's subcommands, in the order of its usage.
var failedSubcommands = []string{"list", "show", "retry", "skip", "purge"}

const failedUsage = `Usage: cdc-relay failed <subcommand> [flags]

Looks at and acts on the events parked in the status table (outbox_delivery):
the events the relay could not deliver. The relay's poller tries each FAILED
event again: one that gets through becomes DELIVERED, one that fails every
attempt becomes DEAD. While an event is FAILED or DEAD, the later events of
its topic and key wait behind it (WAITING), and are delivered in order once
it is delivered, skipped or purged; the events of a paused topic are PAUSED
until it is resumed ('cdc-relay resume --topic').

Subcommands:

  list   [--status S] [--topic T] [--limit N] [--json]
         the parked events, newest first
  show   ID [--json]
         one event in full: the record, its headers, the last error
  retry  ID... | --all [--status FAILED|DEAD] | ID --topic T
         make events due again: FAILED, 0 attempts, tried at once;
         with --topic, to topic T instead of the one it was parked for
  skip   ID...
         give up on events (DEAD, skipped): the events behind them go on
  purge  ID... | --dead [--older-than D]
         delete events from the status table

IDs are the numbers in the ID column of 'cdc-relay failed list'. Each
subcommand takes --postgres-url (CDC_RELAY_POSTGRES_URL) or
--postgres-url-file, and --status-table (CDC_RELAY_STATUS_TABLE), and every
flag can be set by its environment variable, as for the other commands.
'cdc-relay failed <subcommand> -h' says more.

Exit status: 0 when it did what it was asked; 1 on an error, or when it did
not do all it was asked (an id not in the table, a DELIVERED or WAITING event
to retry, nothing matched); 2 for a mistake on the command line.

Examples:

  export CDC_RELAY_POSTGRES_URL=postgres://admin:secret@db:5432/app
  cdc-relay failed list --status dead
  cdc-relay failed show 12
  cdc-relay failed retry 12 13
  cdc-relay failed retry 14 --topic outbox.event.order
  cdc-relay failed skip 12
  cdc-relay failed retry --all --status dead
  cdc-relay failed purge --dead --older-than 30d
`

// failedHeads are the subcommands' usage texts, before their flags.
var failedHeads = map[string]string{
	"list": `Usage: cdc-relay failed list [--status S] [--topic T] [--limit N] [--json]

Lists the events in the status table, newest first: for people a table
(id, status, what it waits for, attempts, the outbox table the event came
from, topic, event id, next attempt, last error, cut to fit), with --json
one JSON array for
scripts, every field of each event. Events parked by an older version of
the relay, or by 'cdc-relay recover', name no table ("-", or null in JSON).

In JSON, "key" is a string: the key's text, or base64 when key_encoding is
"base64". "value" is the JSON itself when the record value is JSON
(value_encoding "json"; its spacing may differ from the bytes stored), else
its text ("text") or base64 ("base64"). A NULL key or value is null, without
an encoding. Times are RFC 3339 in UTC. "waits_for" is the id of the first
held event of its topic and key, which it waits for, or 0.
`,
	"show": `Usage: cdc-relay failed show ID [--json]

Prints one event of the status table in full: its state, the outbox table
it came from, the record (topic, key, headers one a line, timestamp, the
value pretty-printed when it is JSON) and the last error. With --json, one
JSON object, as in 'cdc-relay failed list --json'.
`,
	"retry": `Usage: cdc-relay failed retry ID... | --all [--status FAILED|DEAD]
       cdc-relay failed retry ID --topic T [--allowed-topics RE]

Makes events due again: each becomes FAILED with 0 attempts and its next
attempt now, and the relay's poller delivers it at its next poll (a running
'cdc-relay run'). Fix what made the events fail first.

Name the events by id (spaces or commas between ids), or retry every FAILED
and DEAD event with --all (only those of --status when given). A DELIVERED
event is never retried: it reached Kafka. An id that is not in the table or
is DELIVERED is reported, and the exit status is 1, after the other events
are retried.

With --config, the outbox row of each event whose table has write_back
says its failed value again, with 0 attempts and its next attempt now; the
poller's delivery then makes it say delivered.

The events of its key parked behind a retried event (WAITING) follow it in
order, each once Kafka acknowledged the one before. A WAITING or PAUSED event
is not retried itself: the error names the event it waits for (retry, skip
or purge that one), or its paused topic (resume it). Without ordered parking
('run --ordering none'), a retried event arrives after later events of the
same key.

With --topic T, one event (one id) is delivered to topic T instead of the
topic it was parked for: for an event parked for an illegal topic, or one
that --allowed-topics (or the config file's allowed_topics) does not allow,
which could otherwise never be delivered. T must be a legal Kafka topic
name that --allowed-topics allows (by default any not starting with "_" or
"connect-"), as run checks; with --config, the allowed topics of the
event's own source (a messages: entry's allowed_topics). The event keeps
the topic it was parked for (original topic, in 'failed show'). The events
of its key that waited behind it in its old topic are released, and the
output says how many: the poller delivers them to the topic they were
parked for (correct each in turn once it is FAILED or DEAD). In its new
topic it is delivered in its key's order: after the held events of that
topic and key parked before it.
`,
	"skip": `Usage: cdc-relay failed skip ID...

Gives up on FAILED or DEAD events: each becomes DEAD, marked skipped (its
last error says "skipped by an operator"), and stays in the status table
until purged. The events of its key that waited behind it (WAITING) are
released: the relay's poller delivers them in order. The output says how
many each skip released. An id that is not in the table, or not FAILED or
DEAD, is reported, and the exit status is 1, after the others are skipped.

With --config, the outbox row of each skipped event whose table has
write_back says its dead value.
`,
	"purge": `Usage: cdc-relay failed purge ID... | --dead [--older-than D]

Deletes events from the status table, for good: the status table holds the
only copy of an event that was never delivered.

Name the events by id (spaces or commas between ids), in any state, FAILED
included (the output says which were FAILED), or delete every DEAD event
with --dead (only those marked DEAD more than --older-than ago when given).
--dead never deletes FAILED or DELIVERED events. An id that is not in the
table is reported, and the exit status is 1, after the others are deleted.
Purging the first held event of a key releases the events of its key that
waited behind it: the output says how many, and the poller delivers them in
order.

With --config, the outbox row of each purged FAILED, WAITING or PAUSED
event whose table has write_back says its dead value: the event is given
up on.
`,
}

func (c *FailedCommand) flags(sub string) *flag.FlagSet {
	fs := flag.NewFlagSet("failed "+sub, flag.ContinueOnError)
	fs.StringVar(&c.postgresURL, "postgres-url", "",
		"PostgreSQL connection `URL`, such as postgres://admin:secret@db:5432/app; the role needs SELECT on the status table, and UPDATE and DELETE to retry, skip and purge")
	registerPostgresURLFile(fs, &c.postgresURLFile)
	fs.StringVar(&c.statusTable, "status-table", "public.outbox_delivery",
		"the status table, as `schema.table`: it keeps a copy of each event the relay could not deliver, with the reason, until it is delivered or dealt with")
	switch sub {
	case "list":
		fs.StringVar(&c.state, "status", "", "only the events in this `state`: FAILED, DEAD, WAITING, PAUSED or DELIVERED (in any case); all when empty")
		fs.StringVar(&c.topic, "topic", "", "only the events for this `topic`, exactly")
		fs.IntVar(&c.limit, "limit", 50, "at most `n` events, the newest; 0 lists them all")
		fs.BoolVar(&c.json, "json", false, "print one JSON array, every field of each event, for scripts")
	case "show":
		fs.BoolVar(&c.json, "json", false, "print one JSON object, every field of the event, for scripts")
	case "retry":
		fs.BoolVar(&c.all, "all", false, "retry every FAILED and DEAD event (only those of --status when given)")
		fs.StringVar(&c.state, "status", "", "with --all, only the events in this `state`: FAILED or DEAD (in any case)")
		fs.StringVar(&c.topic, "topic", "", "deliver the one event named to this `topic` instead of the one it was parked for (kept as its original topic)")
		fs.StringVar(&c.allowedTopics, "allowed-topics", "",
			"with --topic, a Go `regexp` the whole new topic must match, as run's; empty: any topic not starting with \"_\" or \"connect-\" (the config file's allowed_topics with --config)")
	case "purge":
		fs.BoolVar(&c.dead, "dead", false, "delete every DEAD event (only those older than --older-than when given)")
		durationVar(fs, &c.olderThan, "older-than", 0,
			"with --dead, only the events marked DEAD more than this long ago (by updated_at), such as 30d or 12h")
	}
	registerConfig(fs, &c.configPath)
	// What to act on is said on the command line, never by a variable left
	// set in the environment.
	onlyOnCommandLine(fs, "status", "topic", "limit", "json", "all", "dead", "older-than")
	return fs
}

// failedSections orders each subcommand's flags in its usage.
func failedSections(sub string) []flagSection {
	conn := flagSection{"Connection (--postgres-url, --postgres-url-file or --config required)", []string{"config", "postgres-url", "postgres-url-file", "status-table"}}
	switch sub {
	case "list":
		return []flagSection{conn, {"Which events", []string{"status", "topic", "limit"}}, {"Output", []string{"json"}}}
	case "show":
		return []flagSection{conn, {"Output", []string{"json"}}}
	case "retry":
		return []flagSection{conn, {"Which events (ids, or --all)", []string{"all", "status"}}, {"A new topic (one id)", []string{"topic", "allowed-topics"}}}
	case "purge":
		return []flagSection{conn, {"Which events (ids, or --dead)", []string{"dead", "older-than"}}}
	}
	return []flagSection{conn}
}

// Usage writes failed's help, or its subcommand's once Run has read one.
func (c *FailedCommand) Usage(w io.Writer) {
	if c.sub == "" {
		fmt.Fprint(w, failedUsage)
		return
	}
	printUsage(w, c.flags(c.sub), failedHeads[c.sub], failedSections(c.sub))
}

// Run reads the subcommand and its flags, and runs it.
func (c *FailedCommand) Run(ctx context.Context, args []string) error {
	if err := c.chooseSubcommand(args); err != nil {
		return err
	}
	file, operands, err := c.parseFlags(args[1:])
	if err != nil {
		return err
	}
	run, err := c.prepare(operands)
	if err != nil {
		return err
	}
	schema, table, err := decoder.ParseTable(c.statusTable)
	if err != nil {
		return usageError{fmt.Sprintf("%s: --status-table %q: %v", c.sub, c.statusTable, err)}
	}
	opts, err := c.storeOptions(file)
	if err != nil {
		return err
	}
	conn, err := pgconnect.Open(ctx, c.postgresURL, pgconnect.Options{})
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return withMigrateHint(run(ctx, status.NewStore(conn, schema, table, opts...)))
}

// chooseSubcommand sets c.sub to the subcommand args name, or returns
// flag.ErrHelp for a request of help (c.sub then names the subcommand
// asked about, if any) or a usageError.
func (c *FailedCommand) chooseSubcommand(args []string) error {
	if len(args) == 0 {
		return usageError{"want a subcommand: list, show, retry, skip or purge"}
	}
	sub := args[0]
	switch sub {
	case "-h", "-help", "--help":
		return flag.ErrHelp
	case "help": // cdc-relay failed help [subcommand]
		if len(args) > 1 {
			if err := checkSubcommand(args[1]); err != nil {
				return err
			}
			c.sub = args[1]
		}
		return flag.ErrHelp
	}
	if strings.HasPrefix(sub, "-") {
		return usageError{fmt.Sprintf("flag %s before the subcommand: flags go after it, as in 'cdc-relay failed list %s'", sub, sub)}
	}
	if err := checkSubcommand(sub); err != nil {
		return err
	}
	c.sub = sub
	return nil
}

// parseFlags sets c's fields from the subcommand's flags in args (and
// the config file they name, which it returns: nil without one), records
// the flags given in c.given, and returns the operands.
func (c *FailedCommand) parseFlags(args []string) (*config.File, []string, error) {
	fs := c.flags(c.sub)
	flagArgs, operands := splitArgs(fs, args)
	c.given = map[string]bool{}
	for _, a := range flagArgs {
		if name, ok := argFlagName(a); ok {
			c.given[name] = true
		}
	}
	if err := parseFlags(fs, flagArgs); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, err
		}
		return nil, nil, usageError{c.sub + ": " + err.Error()}
	}
	file, err := loadConfig(fs, c.configPath)
	if err != nil {
		return nil, nil, err
	}
	if file != nil && c.allowedTopics == "" {
		c.allowedTopics = file.AllowedTopics
	}
	c.file = file
	return file, operands, nil
}

// withMigrateHint adds to err, when PostgreSQL says the status table or
// one of its columns is missing, what the operator runs to fix it.
func withMigrateHint(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case !errors.As(err, &pgErr):
	case pgErr.Code == "42P01": // undefined_table
		err = fmt.Errorf("%w (run 'cdc-relay migrate', or pass the --status-table that migrate was given)", err)
	case pgErr.Code == "42703": // undefined_column: the table of an older version
		err = fmt.Errorf("%w (the status table lacks a column of this version: run 'cdc-relay migrate' of this version first)", err)
	}
	return err
}

// checkSubcommand returns a usageError unless sub is one of failed's.
func checkSubcommand(sub string) error {
	for _, s := range failedSubcommands {
		if s == sub {
			return nil
		}
	}
	msg := fmt.Sprintf("unknown subcommand %q", sub)
	if s := suggest.Name(sub, failedSubcommands); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	} else {
		msg += ": want list, show, retry, skip or purge"
	}
	return usageError{msg}
}

// prepare checks the flags and operands of c.sub, and returns what runs
// it on a store. Every mistake is found here, before connecting.
func (c *FailedCommand) prepare(operands []string) (func(context.Context, *status.Store) error, error) {
	usage := func(format string, a ...any) error { return usageError{c.sub + ": " + fmt.Sprintf(format, a...)} }
	var err error
	if c.postgresURL, err = postgresURLFrom(c.postgresURL, c.postgresURLFile); err != nil {
		return nil, usage("%s", err)
	}
	if c.postgresURL == "" {
		return nil, usage("%s", postgresURLRequired)
	}
	if c.sub == "list" && len(operands) > 0 {
		return nil, usage("unexpected argument %q: list takes flags only (show ID prints one event)", operands[0])
	}
	ids, err := parseIDs(operands)
	if err != nil {
		return nil, usage("%v", err)
	}
	state := strings.ToUpper(strings.TrimSpace(c.state))
	switch c.sub {
	case "list":
		switch state {
		case "", status.Failed, status.Dead, status.Waiting, status.Paused, status.Delivered:
		default:
			return nil, usage("--status %q: want FAILED, DEAD, WAITING, PAUSED or DELIVERED", c.state)
		}
		if c.limit < 0 {
			return nil, usage("--limit %d: want 0 (all) or more", c.limit)
		}
		opts := status.ListOptions{Status: state, Topic: c.topic, Limit: c.limit}
		return func(ctx context.Context, s *status.Store) error { return c.list(ctx, s, opts) }, nil
	case "show":
		if len(ids) != 1 {
			return nil, usage("want one id, got %d", len(ids))
		}
		return func(ctx context.Context, s *status.Store) error { return c.show(ctx, s, ids[0]) }, nil
	default:
		return c.prepareChange(ids, state, usage)
	}
}

// prepareChange checks the flags and ids of retry, skip and purge, and
// returns what runs the change on a store.
func (c *FailedCommand) prepareChange(ids []int64, state string, usage func(string, ...any) error) (func(context.Context, *status.Store) error, error) {
	switch c.sub {
	case "retry":
		switch {
		case len(ids) > 0 && c.all:
			return nil, usage("give ids or --all, not both")
		case len(ids) == 0 && !c.all:
			return nil, usage("name the events to retry by id, or pass --all")
		case state != "" && !c.all:
			return nil, usage("--status narrows --all; with ids, each named event is retried")
		case state == status.Delivered:
			return nil, usage("--status DELIVERED: delivered events are never retried, they reached Kafka")
		case state == status.Waiting || state == status.Paused:
			return nil, usage("--status %s: such events are not retried; they follow the first held event of their key (retry, skip or purge that one), or their topic's resume", state)
		case state != "" && state != status.Failed && state != status.Dead:
			return nil, usage("--status %q: want FAILED or DEAD", c.state)
		}
		if err := c.checkNewTopic(ids); err != nil {
			return nil, usage("%v", err)
		}
		opts := status.RetryOptions{IDs: ids, All: c.all, Status: state, Topic: c.topic}
		return func(ctx context.Context, s *status.Store) error { return c.retry(ctx, s, opts) }, nil
	case "skip":
		if len(ids) == 0 {
			return nil, usage("name the events to skip by id")
		}
		opts := status.SkipOptions{IDs: ids}
		return func(ctx context.Context, s *status.Store) error { return c.skip(ctx, s, opts) }, nil
	case "purge":
		switch {
		case len(ids) > 0 && c.dead:
			return nil, usage("give ids or --dead, not both")
		case len(ids) == 0 && !c.dead:
			return nil, usage("name the events to purge by id, or pass --dead")
		case c.olderThan > 0 && !c.dead:
			return nil, usage("--older-than narrows --dead; with ids, each named event is deleted")
		}
		opts := status.PurgeOptions{IDs: ids, Dead: c.dead, OlderThan: c.olderThan}
		return func(ctx context.Context, s *status.Store) error { return c.purge(ctx, s, opts) }, nil
	}
	return nil, checkSubcommand(c.sub)
}

// checkNewTopic checks retry's --topic: one id, and a topic the relay may
// write (decoder.Mapping.TopicCheck, as run and its poller check); when
// the config file's sources allow different topics, a legal name, the rest
// once the event's source is known.
func (c *FailedCommand) checkNewTopic(ids []int64) error {
	if c.topic == "" {
		if c.given["topic"] {
			return errors.New("--topic is empty: give the topic to deliver the event to")
		}
		return nil
	}
	if len(ids) != 1 || c.all {
		return errors.New("--topic corrects one event at a time: name one id, not several nor --all")
	}
	check, err := decoder.Mapping{AllowedTopics: c.allowedTopics}.TopicCheck()
	if err != nil {
		return err
	}
	if c.sourcesDiffer() {
		// The config file's message sources allow other topics: the
		// event's own source is checked once its row is read
		// (checkSourceTopic).
		check = decoder.ValidTopic
	}
	if err := check(c.topic); err != nil {
		return fmt.Errorf("--topic: %w", err)
	}
	return nil
}

// sourcesDiffer reports whether the config file has a message source
// with allowed_topics of its own: its events' topics are not those of
// --allowed-topics (or the file's).
func (c *FailedCommand) sourcesDiffer() bool {
	if c.file == nil {
		return false
	}
	for _, m := range c.file.Messages {
		if m.AllowedTopics != "" {
			return true
		}
	}
	return false
}

// checkSourceTopic checks, with a config file, a corrected topic against
// the allowed topics of the event's own source as run configures them
// from the file (relay.Config.CheckCorrectedTopic): a message source's
// own allowed_topics, else --allowed-topics or the file's.
func (c *FailedCommand) checkSourceTopic(ctx context.Context, s *status.Store, opts status.RetryOptions) error {
	if c.file == nil || opts.Topic == "" {
		return nil
	}
	var rc relay.Config
	configSources(&rc, c.file, c.allowedTopics)
	if err := rc.CheckCorrectedTopic(ctx, s, opts); err != nil {
		return fmt.Errorf("--topic: %w", err)
	}
	return nil
}

// splitArgs separates flags (with their values) from operands, so that
// ids may come before or after the flags: the flag package stops at the
// first operand. Everything after "--" is an operand.
func splitArgs(fs *flag.FlagSet, args []string) (flags, operands []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(operands, args[i+1:]...)
		}
		name, ok := argFlagName(a)
		if !ok {
			operands = append(operands, a)
			continue
		}
		flags = append(flags, a)
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f.Value) && !strings.Contains(a, "=") && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return flags, operands
}

// argFlagName returns the name of the flag in a ("--limit=5" → "limit"),
// and false when a is not a flag.
func argFlagName(a string) (string, bool) {
	if len(a) < 2 || a[0] != '-' || a == "--" {
		return "", false
	}
	name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	name, _, _ = strings.Cut(name, "=")
	return name, true
}

// parseIDs reads ids given as operands, separated by spaces or commas.
func parseIDs(operands []string) ([]int64, error) {
	var ids []int64
	for _, op := range operands {
		for _, s := range strings.Split(op, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil || id < 1 {
				return nil, fmt.Errorf("%q is not an id: want the number in the ID column of 'cdc-relay failed list'", s)
			}
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// list is `failed list`.
func (c *FailedCommand) list(ctx context.Context, s *status.Store, opts status.ListOptions) error {
	limit := opts.Limit
	if limit > 0 {
		opts.Limit++ // one more, to know whether there are more
	}
	rows, err := s.List(ctx, opts)
	if err != nil {
		return err
	}
	more := limit > 0 && len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	if c.json {
		if rows == nil {
			rows = []status.Row{} // [], not null
		}
		err = writeIndentedJSON(c.stdout, rows)
	} else if len(rows) == 0 {
		_, err = fmt.Fprintf(c.stdout, "no %s in %s\n", describeList(opts), c.statusTable)
	} else {
		err = writeTable(c.stdout, rows, time.Now())
	}
	if err != nil {
		return err
	}
	if more {
		fmt.Fprintf(c.stderr, "(the newest %d; --limit 0 lists them all)\n", limit)
	}
	return nil
}

// describeList names what a list selects: "FAILED events for topic t".
func describeList(opts status.ListOptions) string {
	d := "events"
	if opts.Status != "" {
		d = opts.Status + " events"
	}
	if opts.Topic != "" {
		d += fmt.Sprintf(" for topic %q", opts.Topic)
	}
	return d
}

// show is `failed show`.
func (c *FailedCommand) show(ctx context.Context, s *status.Store, id int64) error {
	row, err := s.Get(ctx, id)
	if err != nil {
		return withListHint(err)
	}
	if c.json {
		return writeIndentedJSON(c.stdout, row)
	}
	return writeRecord(c.stdout, row, time.Now())
}

// retry is `failed retry`.
func (c *FailedCommand) retry(ctx context.Context, s *status.Store, opts status.RetryOptions) error {
	if err := c.checkSourceTopic(ctx, s, opts); err != nil {
		return err
	}
	changes, err := s.Retry(ctx, opts)
	if len(changes) > 0 && opts.Topic != "" {
		fmt.Fprintf(c.stdout, "retried 1 event: %d, to topic %q (its original topic is kept: 'cdc-relay failed show %d')\n", changes[0].ID, opts.Topic, changes[0].ID)
		printReleased(c.stdout, changes)
	} else if len(changes) > 0 {
		fmt.Fprintf(c.stdout, "retried %s: %s\n", eventCount(len(changes)), joinIDs(changes, ""))
	}
	switch {
	case err != nil && len(opts.IDs) > 0 && (errors.Is(err, status.ErrNotFound) || errors.Is(err, status.ErrDelivered) || errors.Is(err, status.ErrHeld)):
		return notDone{"retried", err}
	case err != nil:
		return err
	case len(changes) == 0:
		which := "FAILED or DEAD"
		if opts.Status != "" {
			which = opts.Status
		}
		return fmt.Errorf("nothing to retry: no %s events in %s", which, c.statusTable)
	}
	return nil
}

// purge is `failed purge`.
func (c *FailedCommand) purge(ctx context.Context, s *status.Store, opts status.PurgeOptions) error {
	changes, err := s.Purge(ctx, opts)
	if len(changes) > 0 {
		fmt.Fprintf(c.stdout, "purged %s: %s", eventCount(len(changes)), joinIDs(changes, ""))
		if failed := joinIDs(changes, status.Failed); failed != "" {
			verb := "were"
			if !strings.Contains(failed, " ") {
				verb = "was"
			}
			fmt.Fprintf(c.stdout, "; %s %s FAILED, never delivered", failed, verb)
		}
		fmt.Fprintln(c.stdout)
		printReleased(c.stdout, changes)
	}
	switch {
	case err != nil && len(opts.IDs) > 0 && errors.Is(err, status.ErrNotFound):
		return notDone{"purged", err}
	case err != nil:
		return err
	case len(changes) == 0:
		msg := "nothing to purge: no DEAD events in " + c.statusTable
		if opts.OlderThan > 0 {
			msg = fmt.Sprintf("nothing to purge: no events in %s marked DEAD more than %s ago", c.statusTable, formatDuration(opts.OlderThan))
		}
		return errors.New(msg)
	}
	return nil
}

// skip is `failed skip`.
func (c *FailedCommand) skip(ctx context.Context, s *status.Store, opts status.SkipOptions) error {
	changes, err := s.Skip(ctx, opts)
	if len(changes) > 0 {
		fmt.Fprintf(c.stdout, "skipped %s: %s (now DEAD, skipped; 'cdc-relay failed purge' deletes them)\n", eventCount(len(changes)), joinIDs(changes, ""))
		printReleased(c.stdout, changes)
	}
	if err != nil {
		return notDone{"skipped", err}
	}
	return nil
}

// printReleased says, for each change that released events of its key,
// how many, one a line.
func printReleased(w io.Writer, changes []status.Change) {
	for _, ch := range changes {
		if ch.Released > 0 {
			fmt.Fprintf(w, "%d released %s of its key waiting behind it: the poller delivers them in order\n", ch.ID, eventCount(ch.Released))
		}
	}
}

// eventCount is "1 event" or "n events".
func eventCount(n int) string {
	if n == 1 {
		return "1 event"
	}
	return strconv.Itoa(n) + " events"
}

// joinIDs lists the ids of changes, of those that were in state was
// when it is not "".
func joinIDs(changes []status.Change, was string) string {
	var ids []string
	for _, c := range changes {
		if was == "" || c.Was == was {
			ids = append(ids, strconv.FormatInt(c.ID, 10))
		}
	}
	return strings.Join(ids, " ")
}

// listHint says where to find the ids, after an id that was not found.
const listHint = " ('cdc-relay failed list' shows the ids; is --status-table right?)"

// withListHint adds listHint to an error about an id that was not found.
func withListHint(err error) error {
	if errors.Is(err, status.ErrNotFound) {
		return fmt.Errorf("%w%s", err, listHint)
	}
	return err
}

// notDone reports on one line the ids that retry or purge was given but
// could not act on (the store joins one error per id, one a line).
type notDone struct {
	verb string // "retried", "skipped", "purged"
	err  error
}

func (e notDone) Error() string {
	msg := "not " + e.verb + ": " + strings.ReplaceAll(e.err.Error(), "\n", "; ")
	if errors.Is(e.err, status.ErrNotFound) {
		msg += listHint
	}
	return msg
}

func (e notDone) Unwrap() error { return e.err }

// The table of `failed list`.

// storeOptions are the status store's options for the config file (nil
// without one): retry and purge update the outbox rows of the tables that
// write back, as the relay does; a row that refuses is reported on stderr.
func (c *FailedCommand) storeOptions(file *config.File) ([]status.Option, error) {
	if file == nil {
		return nil, nil
	}
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rows, err := relay.WriteBackRows(relay.Config{Tables: configTables(file, ""), Logger: log})
	if err != nil {
		return nil, err
	}
	return []status.Option{status.WriteBack(rows)}, nil
}
