package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/relay"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/setup"
	"github.com/cdc-relay/cdc-relay/sink"
)

// MigrateCommand is `cdc-relay migrate`: prepare a database.
type MigrateCommand struct {
	stdout, stderr io.Writer

	postgresURL string
	tables      tableFlags
	skipOutbox  bool
	slot        string
	noSlot      bool
	grantsFor   string
	adopt       string
	idColumn    string
	// messagePrefix is --message-prefix: migrate creates cdc_relay.emit
	// with it, and checks the server can send messages.
	messagePrefix string

	postgresURLFile string
	configPath      string

	// Exactly-once: with --delivery exactly-once and brokers, the
	// checkpoint topic is created too.
	delivery        string
	brokers         string
	checkpointTopic string
	kafkaSecurity   kafkaSecurityFlags
}

const migrateUsage = `Usage: cdc-relay migrate [flags]

Prepares a database for the relay. Safe to run again: it applies only what is
missing.

  - checks wal_level = logical, and says how to fix it when it is not;
  - creates the status table and the checkpoint table (versioned migrations
    embedded in the binary, recorded in cdc_relay_schema_migrations);
  - creates the outbox table with the default layout if it does not exist
    (id uuid, aggregate_type, aggregate_id, event_type, topic, payload jsonb,
    headers jsonb, created_at timestamptz);
  - creates the publication FOR TABLE <outbox> WITH (publish = 'insert',
    publish_via_partition_root = true), or adds the outbox table to an
    existing publication (for a partitioned outbox, one that publishes via
    the root: it says how to set that);
  - with --config, for each table whose write_back lists pending values,
    creates the trigger cdc_relay_reset, so that an UPDATE setting a row's
    status back to one of them sends its event again (replaced when the
    values change, dropped when the table lists none). Creating a trigger
    needs the table's owner;
  - creates the replication slot (unless --no-slot), so that the events
    committed from now on wait in the WAL for the relay's first run. That
    needs a role with the REPLICATION attribute; without it, migrate says so
    and the first run creates the slot. An unread slot keeps the WAL on the
    server's disk: start the relay soon after.

Switching over from a poller that kept its position: --adopt 'PREDICATE'
(adopt: per table in the config file) sends the rows the predicate
selects as of the new slot's snapshot, such as those after the poller's
last position; the slot streams every row committed after, so none is
sent twice by the switch. The relay's poller sends them, each as it is
then, beside the stream. With a status column's pending values too, a row
either selects is adopted once. The
predicate is SQL over the table's columns, run as it is with migrate's
role; migrate checks it first (a typo fails with PostgreSQL's message,
before anything is created). Rows are adopted only when the slot is
created: with the slot there already, migrate refuses and says how to
adopt again. --adopt needs the slot created now (REPLICATION); adopt: in a
config file is adopted by the first run instead.

With --delivery exactly-once and --kafka-brokers, it also creates the
compacted topic where "run --delivery exactly-once" keeps each slot's
position (--checkpoint-topic, cleanup.policy=compact, one partition);
without, the first such run does. At-least-once delivery (the default) needs
no such topic, and migrate creates none, whatever brokers it is given.

Every migration is idempotent and runs every time, so migrate converges on
the tables the flags name: a second relay's tables in the same database, or
a table dropped by mistake, are created too.

Pass "cdc-relay run" the same table, publication and slot flags. With
--adopt, migrate prints that run command; for a table it did not create
(--skip-outbox), with --retention 0s: the default, 7d, would delete the
table's rows older than 7 days.

Examples:

  cdc-relay migrate --postgres-url postgres://admin:secret@db:5432/app
  cdc-relay migrate --postgres-url postgres://admin:secret@db:5432/app \
    --table public.events --skip-outbox --id-column position \
    --adopt "position > (SELECT last_position FROM outbox_topic_progress
             WHERE topic = 'wallet-events' AND publisher = 'KafkaPublisher')"
`

// migrateSections orders migrate's flags in its usage.
var migrateSections = []flagSection{
	{"Configuration file (optional)", []string{"config"}},
	{"Connection (required)", []string{"postgres-url", "postgres-url-file"}},
	{"Tables", []string{"table", "skip-outbox", "status-table", "checkpoint-table", "publication"}},
	{"Replication slot", []string{"slot", "no-slot"}},
	{"Messages: an outbox without a table (PostgreSQL 14+)", []string{"message-prefix"}},
	{"Switch-over (optional)", []string{"adopt", "id-column"}},
	{"Exactly-once delivery (optional)", append([]string{"delivery", "kafka-brokers", "checkpoint-topic"}, kafkaSecurityFlagNames...)},
	{"A role for the relay", []string{"print-grants"}},
}

func (c *MigrateCommand) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.StringVar(&c.postgresURL, "postgres-url", "",
		"PostgreSQL connection `URL`, such as postgres://admin:secret@db:5432/app; the role needs CREATE on the schemas")
	registerPostgresURLFile(fs, &c.postgresURLFile)
	c.tables.register(fs)
	fs.BoolVar(&c.skipOutbox, "skip-outbox", false, "do not create the outbox table: map an existing one with run's column flags")
	fs.StringVar(&c.slot, "slot", relay.DefaultConfig().Slot, "the `name` of the logical replication slot to create (pgoutput) when missing")
	fs.BoolVar(&c.noSlot, "no-slot", false, "do not create the replication slot: create it elsewhere, or let the first run create it")
	fs.StringVar(&c.grantsFor, "print-grants", "",
		"print the SQL that creates `role` with the least the relay needs for these tables (LOGIN, REPLICATION, SELECT on the outbox and DELETE for retention, writing the relay's tables), for an administrator to pipe to psql, and change nothing")
	fs.StringVar(&c.delivery, "delivery", atLeastOnce,
		"the delivery `mode` run will use, as run's --delivery: with exactly-once and --kafka-brokers, create the checkpoint topic; at-least-once needs none")
	fs.StringVar(&c.brokers, "kafka-brokers", "", "Kafka seed brokers, comma-separated `host:port,...`: with --delivery exactly-once, create the checkpoint topic there")
	fs.StringVar(&c.checkpointTopic, "checkpoint-topic", sink.DefaultCheckpointTopic, "the `topic` to create, as run's --checkpoint-topic")
	c.kafkaSecurity.register(fs)
	fs.StringVar(&c.adopt, "adopt", "",
		"an SQL `predicate` over the outbox table's columns, such as 'position > 4000': when migrate creates the slot, the rows it selects as of the slot's snapshot are sent by the relay, none twice by the switch; refused when the slot exists")
	fs.StringVar(&c.idColumn, "id-column", relay.DefaultConfig().Tables[0].Mapping.IDColumn,
		"with --adopt, the `column` by which the relay reads each adopted row, as run's --id-column")
	registerMessagePrefix(fs, &c.messagePrefix)
	onlyOnCommandLine(fs, "print-grants", "adopt")
	registerConfig(fs, &c.configPath)
	return fs
}

// relayConfig is the relay configuration the flags and the config file
// name: with a file, its tables, which must exist (migrate creates only
// the default outbox table).
func (c *MigrateCommand) relayConfig(file *config.File) (relay.Config, error) {
	// Retention as run has it by default: on for the outbox table of the
	// flags, off for a config file's tables (see relayFlags.finish).
	rc := relay.Config{Slot: c.slot, Tables: []outbox.Table{{}}, Retention: relay.DefaultConfig().Retention}
	if err := c.tables.apply(&rc); err != nil {
		return rc, err
	}
	if c.adopt != "" {
		rc.Tables[0].Mapping.IDColumn, rc.Tables[0].Adopt = c.idColumn, c.adopt
	}
	if file != nil {
		configSources(&rc, file, "")
		rc.Retention.Outbox = 0
		c.skipOutbox = true
	}
	if err := addMessagePrefix(&rc, c.messagePrefix, ""); err != nil { // migrate checks no topic
		return rc, err
	}
	return rc, nil
}

// setupConfig is what migrate reads of rc (package setup).
func setupConfig(rc relay.Config) setup.Config {
	return setup.Config{Config: rc.SlotConfig(), Publication: rc.Publication, Messages: rc.Messages, DeleteOutbox: rc.Retention.Outbox > 0}
}

// Usage writes migrate's help.
func (c *MigrateCommand) Usage(w io.Writer) {
	printUsage(w, c.flags(), migrateUsage, migrateSections)
}

// Run parses args and migrates.
func (c *MigrateCommand) Run(ctx context.Context, args []string) error {
	fs := c.flags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	createTopic, err := c.wantsCheckpointTopic()
	if err != nil {
		return err
	}
	file, err := loadConfig(fs, c.configPath)
	if err != nil {
		return err
	}
	if c.grantsFor != "" {
		rc, err := c.relayConfig(file)
		if err != nil {
			return err
		}
		fmt.Fprint(c.stdout, setup.Grants(setupConfig(rc), c.grantsFor))
		return nil
	}
	if c.postgresURL, err = postgresURLFrom(c.postgresURL, c.postgresURLFile); err != nil {
		return err
	}
	if c.postgresURL == "" {
		return usageError{postgresURLRequired}
	}
	if w := pgconnect.MultiHostWarning(c.postgresURL); w != "" {
		fmt.Fprintf(c.stderr, "cdc-relay migrate: warning: %s\n", w)
	}
	if !c.noSlot {
		if err := replication.ValidSlotName(c.slot); err != nil {
			return usageError{"--slot: " + err.Error()}
		}
	}
	if err := c.checkAdoptFlags(file); err != nil {
		return err
	}
	rc, err := c.relayConfig(file)
	if err != nil {
		return err
	}
	if err := checkMessagesServer(ctx, c.postgresURL, rc); err != nil {
		return err
	}
	if rc.Logger == nil {
		// What creating the slot waits for, among others, on stderr.
		rc.Logger = slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	res, err := setup.Migrate(ctx, c.postgresURL, setupConfig(rc), setup.Options{SkipOutbox: c.skipOutbox, NoSlot: c.noSlot,
		Notice: func(line string) { fmt.Fprintln(c.stderr, line) }})
	if err != nil {
		return err
	}
	c.printMigrated(res, rc)
	if c.adopt != "" && !res.Slot.Created {
		return errors.New("nothing adopted: --adopt needs the slot created now, and it was not (see above); the tables and the publication are ready: " +
			"run migrate --adopt again as a role with the REPLICATION attribute, or put adopt: in a config file for the first `run --config` to adopt")
	}
	if createTopic {
		return c.checkpointTopicCreate(ctx)
	}
	if c.brokers != "" {
		fmt.Fprintf(c.stdout, "no checkpoint topic created: at-least-once delivery needs none (--delivery exactly-once creates it)\n")
	}
	return nil
}

// printMigrated says what Migrate did: the migrations applied, the
// outbox table and the publication created or extended, the SQL helper
// of messages, the reset triggers and the slot.
func (c *MigrateCommand) printMigrated(res setup.Result, rc relay.Config) {
	fmt.Fprintf(c.stdout, "migrated %s: applied %d migration(s)", pgerr.Describe(c.postgresURL), len(res.Applied))
	if res.CreatedOutbox {
		fmt.Fprintf(c.stdout, ", created table %s.%s", rc.Tables[0].Mapping.Schema, rc.Tables[0].Mapping.Table)
	}
	if len(res.Recreated) > 0 {
		fmt.Fprintf(c.stdout, ", created again the relay's table(s) %s, which had been dropped", strings.Join(res.Recreated, ", "))
	}
	switch {
	case res.CreatedPublication && len(res.Published) == 0:
		fmt.Fprintf(c.stdout, ", created publication %q of no table (messages need none)", rc.Publication)
	case res.CreatedPublication:
		fmt.Fprintf(c.stdout, ", created publication %q for %s", rc.Publication, strings.Join(res.Published, ", "))
	case len(res.Published) > 0:
		fmt.Fprintf(c.stdout, ", added %s to publication %q", strings.Join(res.Published, ", "), rc.Publication)
	}
	if res.Emit != "" {
		fmt.Fprintf(c.stdout, ", function cdc_relay.emit writing prefix %q", res.Emit)
	} else if len(rc.Messages) > 0 {
		fmt.Fprintf(c.stdout, ", no function cdc_relay.emit (it writes envelopes, and every message source is payload_only)")
	}
	fmt.Fprintln(c.stdout)
	printResetTriggers(c.stdout, res.Resets)
	c.printSlot(res, rc)
}

// wantsCheckpointTopic reports whether migrate creates the checkpoint
// topic: only for exactly-once delivery, on the brokers given with
// --kafka-brokers (on the command line or in the environment, not from a
// config file). At-least-once delivery never reads the topic.
func (c *MigrateCommand) wantsCheckpointTopic() (bool, error) {
	switch c.delivery {
	case atLeastOnce:
		return false, nil
	case exactlyOnce:
		return c.brokers != "", nil
	}
	return false, usageError{fmt.Sprintf("--delivery %q: want %s or %s", c.delivery, atLeastOnce, exactlyOnce)}
}

// printResetTriggers says, per table, what migrate did to its reset
// trigger.
func printResetTriggers(w io.Writer, resets []setup.ResetTrigger) {
	for _, r := range resets {
		does := fmt.Sprintf("setting %s back to %s sends the event again", r.StatusColumn, strings.Join(r.Pending, ", "))
		if r.FromPending {
			does = fmt.Sprintf("setting %s to %s, from any value (a row being tried again reads pending), sends the event again; the relay's own writes do not",
				r.StatusColumn, strings.Join(r.Pending, ", "))
		}
		switch r.Change {
		case migrations.ResetCreated:
			fmt.Fprintf(w, "reset trigger created on %s: %s\n", r.Table, does)
		case migrations.ResetKept:
			fmt.Fprintf(w, "reset trigger on %s is current: %s\n", r.Table, does)
		case migrations.ResetDropped:
			fmt.Fprintf(w, "reset trigger dropped from %s: its write_back lists no pending values\n", r.Table)
		}
	}
}

// checkpointTopicCreate creates the checkpoint topic of exactly-once
// delivery, compacted, unless it exists. A broker that refuses or does not
// answer is reported, not an error: the first run creates the topic.
func (c *MigrateCommand) checkpointTopicCreate(ctx context.Context) error {
	if err := decoder.ValidTopic(c.checkpointTopic); err != nil {
		return usageError{"--checkpoint-topic: " + err.Error()}
	}
	kcfg := sink.Config{Brokers: splitList(c.brokers), ClientID: "cdc-relay-migrate"}
	if err := c.kafkaSecurity.finish(&kcfg); err != nil {
		return err
	}
	snk, err := sink.New(kcfg)
	if err != nil {
		return err
	}
	defer snk.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	created, err := snk.EnsureCheckpointTopic(ctx, c.checkpointTopic)
	if err != nil {
		// As for the slot: the database is ready, and the first run
		// creates the topic.
		fmt.Fprintf(c.stdout, "could not create checkpoint topic %q: %v\nthe first `cdc-relay run --delivery exactly-once` creates it\n",
			c.checkpointTopic, c.kafkaSecurity.explain(err))
		return nil
	}
	if created {
		fmt.Fprintf(c.stdout, "created checkpoint topic %q (cleanup.policy=compact) for exactly-once delivery\n", c.checkpointTopic)
	} else {
		fmt.Fprintf(c.stdout, "checkpoint topic %q exists and is compacted\n", c.checkpointTopic)
	}
	return nil
}

// checkAdoptFlags checks --adopt against the other flags: it is the one
// table's of the command line (a config file says adopt: per table), it
// needs the slot created now, and an id column.
func (c *MigrateCommand) checkAdoptFlags(file *config.File) error {
	switch {
	case c.adopt == "":
		return nil
	case file != nil:
		return usageError{fmt.Sprintf("--adopt is the predicate of the command line's one table; with --config, set adopt: on the table in %s", c.configPath)}
	case c.noSlot:
		return usageError{"--adopt and --no-slot exclude each other: rows are adopted when migrate creates the slot"}
	case strings.TrimSpace(c.adopt) == "":
		return usageError{"--adopt is empty: give an SQL predicate over the table's columns, such as 'position > 4000'"}
	case c.idColumn == "":
		return usageError{"--adopt needs --id-column: the relay reads each adopted row by its id"}
	}
	return nil
}

// adopts reports whether a table of rc has pending values or an adopt
// predicate: a slot that migrate creates adopts the rows they select.
func adopts(rc relay.Config) bool {
	for _, t := range rc.Tables {
		if t.WriteBack != nil && len(t.WriteBack.Pending) > 0 || t.Adopts() {
			return true
		}
	}
	return false
}

// printSlot says what migrate did about the replication slot, and how
// many rows a new slot adopted.
func (c *MigrateCommand) printSlot(res setup.Result, rc relay.Config) {
	switch {
	case c.noSlot:
	case errors.As(res.SlotErr, new(*relay.SlotGapError)):
		fmt.Fprintf(c.stdout, "did not create replication slot %q: %v\n", c.slot, res.SlotErr)
	case res.SlotErr != nil:
		fmt.Fprintf(c.stdout, "could not create replication slot %q: %v\n"+
			"the first `cdc-relay run` creates it, and events committed before then are not relayed; "+
			"to keep them, run migrate as a role with the REPLICATION attribute now\n", c.slot, res.SlotErr)
	case res.Slot.Created:
		if res.Slot.Recreated {
			fmt.Fprintf(c.stdout, "dropped replication slot %q, created by a relay or migrate stopped before it recorded the slot and adopted the rows (none was adopted), to create it again\n", c.slot)
		}
		fmt.Fprintf(c.stdout, "created replication slot %q at %s: events committed from now on wait for the relay (the slot keeps WAL until it reads them)\n",
			c.slot, res.Slot.Slot.ConfirmedFlush)
		if adopts(rc) {
			fmt.Fprintf(c.stdout, "adopted %d row(s) that %s selected before the slot: the relay's poller sends each as the row is then, none twice by the switch%s\n",
				res.Slot.Adopted, adoptedBy(rc), writtenBack(rc))
		}
		if c.adopt != "" {
			fmt.Fprintln(c.stdout, c.nextRun())
		}
	case res.Slot.InUse:
		fmt.Fprintf(c.stdout, "replication slot %q exists and another consumer streams it (%s), confirmed %s: left as it is, with no checkpoint; "+
			"the relay's first run takes it over from its confirmed position once that consumer has stopped "+
			"(a Debezium connector: DELETE /connectors/NAME), and waits for that meanwhile\n",
			c.slot, res.Slot.Slot.Consumer(), res.Slot.Slot.ConfirmedFlush)
	default:
		fmt.Fprintf(c.stdout, "replication slot %q exists (confirmed %s, keeping %s of WAL)\n",
			c.slot, res.Slot.Slot.ConfirmedFlush, res.Slot.Slot.Retained())
	}
}

// nextRun is the `run` command that follows `migrate --adopt`: the same
// table, id column, tables, publication and slot, and, for a table
// migrate did not create (--skip-outbox), --retention 0s, so that the
// relay deletes none of the application's rows.
func (c *MigrateCommand) nextRun() string {
	args := []string{"cdc-relay run --postgres-url URL", "--table " + c.tables.table, "--id-column " + c.idColumn}
	for _, f := range []struct{ name, value, def string }{
		{"status-table", c.tables.statusTable, "public.outbox_delivery"},
		{"checkpoint-table", c.tables.checkpointTable, "public.cdc_relay_checkpoint"},
		{"publication", c.tables.publication, "cdc_relay"},
		{"slot", c.slot, "cdc_relay"},
	} {
		if f.value != f.def {
			args = append(args, "--"+f.name+" "+f.value)
		}
	}
	why := ""
	if c.skipOutbox {
		args = append(args, "--retention 0s")
		why = " (--retention 0s: the table is yours, and the default, 7d, would delete its rows older than 7 days)"
	}
	return "next, with your table's column flags (--payload-column, --timestamp-column, …): " + strings.Join(args, " ") + why
}

// adoptedBy says what selected the rows a new slot adopted: the pending
// statuses, the adopt predicates, or both.
func adoptedBy(rc relay.Config) string {
	pending, where := false, false
	for _, t := range rc.Tables {
		pending = pending || t.WriteBack != nil && len(t.WriteBack.Pending) > 0
		where = where || t.Adopts()
	}
	switch {
	case pending && where:
		return "a pending status or adopt"
	case where:
		return "adopt"
	}
	return "a pending status"
}

// writtenBack is what the adoption line adds when a table writes its
// outcome back.
func writtenBack(rc relay.Config) string {
	for _, t := range rc.Tables {
		if t.WriteBack != nil {
			return ", and writes it back"
		}
	}
	return ""
}
