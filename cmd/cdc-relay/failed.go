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
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/status"
)

// FailedCommand is `cdc-relay failed <list|show|retry|skip|purge>`: look at
// and act on the events parked in the status table. This file reads the
// subcommand and the flags they share; each subcommand is in the file
// named after it (failed_list.go, failed_show.go, failed_retry.go,
// failed_skip.go, failed_purge.go), and failed_print.go prints rows.
type FailedCommand struct {
	stdout, stderr io.Writer

	sub string // the subcommand; "" until Run has read it

	postgresURL string
	statusTable string
	state       string        // --status (list, retry)
	topic       string        // --topic (list, retry)
	limit       int           // --limit (list)
	json        bool          // --json (list, show)
	all         bool          // --all (retry)
	dead        bool          // --dead (purge)
	olderThan   time.Duration // --older-than (purge)
	// publisher is --publisher: the publisher whose rows the subcommand
	// reads or acts on; "" for list and show without it, which read every
	// publisher's (see failed_publisher.go).
	publisher string
	// allowedTopics is retry's --allowed-topics: the topics a corrected
	// topic (--topic) may be, as run's.
	allowedTopics string
	// file is the config file --config names, or nil: with it, a
	// corrected topic must also pass the allowed topics of the event's
	// own source (checkSourceTopic).
	file *config.File

	given map[string]bool // the flags given on the command line

	// storeOf makes the status store of a publisher, once Run has
	// connected: list and show without --publisher read each one's rows.
	storeOf func(publisher string) *status.Store

	postgresURLFile string
	configPath      string
}

// failedSubcommand is one of failed's subcommands: its usage, its own
// flags, and what checks its operands and runs it.
type failedSubcommand struct {
	// head is its usage text, before the flags.
	head string
	// flags registers its own flags in fs, beside those every subcommand
	// has (nil: none).
	flags func(c *FailedCommand, fs *flag.FlagSet)
	// publisher describes its --publisher (see registerPublisher), which
	// reads every publisher's rows by default when every is set, else
	// acts on Kafka's.
	publisher string
	every     bool
	// sections orders its own flags in its usage, after the connection's.
	sections []flagSection
	// prepare checks its flags and operands, and returns what runs it on
	// a store; usage makes a usageError that names the subcommand. Every
	// mistake is found here, before connecting.
	prepare func(c *FailedCommand, operands []string, usage func(format string, a ...any) error) (failedRun, error)
}

// failedRun runs a subcommand on the status table's store.
type failedRun func(ctx context.Context, s *status.Store) error

// failedSubcommands are failed's subcommands, in the order of its usage.
var failedSubcommands = []string{"list", "show", "retry", "skip", "purge"}

// failedTable is each of failedSubcommands, by name.
var failedTable = map[string]failedSubcommand{
	"list":  failedList,
	"show":  failedShow,
	"retry": failedRetry,
	"skip":  failedSkip,
	"purge": failedPurge,
}

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

Each event is parked for one publisher: Kafka (kafka), or a webhook
publisher of the config file. list and show read every publisher's events
(a PUBLISHER column, or line, names those not Kafka's); retry, skip and
purge act on one publisher's, Kafka's unless --publisher names another, and
report an id of another publisher's without acting on it.

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
  cdc-relay failed retry 21 --publisher partner
  cdc-relay failed retry --all --status dead
  cdc-relay failed purge --dead --older-than 30d
`

func (c *FailedCommand) flags(sub string) *flag.FlagSet {
	fs := flag.NewFlagSet("failed "+sub, flag.ContinueOnError)
	fs.StringVar(&c.postgresURL, "postgres-url", "",
		"PostgreSQL connection `URL`, such as postgres://admin:secret@db:5432/app; the role needs SELECT on the status table, and UPDATE and DELETE to retry, skip and purge")
	registerPostgresURLFile(fs, &c.postgresURLFile)
	fs.StringVar(&c.statusTable, "status-table", "public.outbox_delivery",
		"the status table, as `schema.table`: it keeps a copy of each event the relay could not deliver, with the reason, until it is delivered or dealt with")
	if own := failedTable[sub].flags; own != nil {
		own(c, fs)
	}
	if sc, ok := failedTable[sub]; ok {
		registerPublisher(fs, &c.publisher, sc.every, sc.publisher)
	}
	registerConfig(fs, &c.configPath)
	// What to act on is said on the command line, never by a variable left
	// set in the environment.
	onlyOnCommandLine(fs, "status", "state", "topic", "limit", "json", "all", "dead", "older-than", "publisher")
	return fs
}

// failedSections orders each subcommand's flags in its usage.
func failedSections(sub string) []flagSection {
	conn := flagSection{"Connection (--postgres-url, --postgres-url-file or --config required)", []string{"config", "postgres-url", "postgres-url-file", "status-table"}}
	return append([]flagSection{conn}, failedTable[sub].sections...)
}

// Usage writes failed's help, or its subcommand's once Run has read one.
func (c *FailedCommand) Usage(w io.Writer) {
	if c.sub == "" {
		fmt.Fprint(w, failedUsage)
		return
	}
	printUsage(w, c.flags(c.sub), failedTable[c.sub].head, failedSections(c.sub))
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
	writeBack, err := c.storeOptions(file)
	if err != nil {
		return err
	}
	conn, err := pgconnect.Open(ctx, c.postgresURL, pgconnect.Options{})
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	c.storeOf = func(publisher string) *status.Store {
		// Every publisher's store writes back as the relay's do: a table
		// several publishers send has its rows say what every copy allows.
		return status.NewStore(conn, schema, table, append([]status.Option{status.Publisher(publisher)}, writeBack...)...)
	}
	return withMigrateHint(run(ctx, c.storeOf(c.acting())))
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
func (c *FailedCommand) prepare(operands []string) (failedRun, error) {
	usage := func(format string, a ...any) error { return usageError{c.sub + ": " + fmt.Sprintf(format, a...)} }
	var err error
	if c.postgresURL, err = postgresURLFrom(c.postgresURL, c.postgresURLFile); err != nil {
		return nil, usage("%s", err)
	}
	if c.postgresURL == "" {
		return nil, usage("%s", postgresURLRequired)
	}
	if c.given["publisher"] {
		if err := checkPublisherName(c.publisher, c.file, c.configPath); err != nil {
			return nil, usage("%v", err)
		}
	}
	return failedTable[c.sub].prepare(c, operands, usage)
}

// storeOptions are the status stores' options for the config file (nil
// without one): retry, skip and purge update the outbox rows of the
// tables that write back, as the relay does, each as far as the other
// publishers' copies allow; a row that refuses is reported on stderr.
func (c *FailedCommand) storeOptions(file *config.File) ([]status.Option, error) {
	if file == nil {
		return nil, nil
	}
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tables := configTables(file, "")
	rows, err := outbox.WriteBackRows(tables, log)
	if err != nil {
		return nil, err
	}
	return []status.Option{status.WriteBack(rows), status.SharedWriteBack(outbox.SharedWriteBack(tables)...)}, nil
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
