package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/relay"
	"github.com/cdc-relay/cdc-relay/status"
)

// PauseCommand is `cdc-relay pause` and `cdc-relay resume`: one topic's
// pause, kept in the database, or the running relay's relay-wide pause.
type PauseCommand struct {
	stdout, stderr io.Writer
	resume         bool // resume, else pause

	topic           string
	publisher       string // --publisher: whose events of the topic
	addr            string
	token           string
	tokenFile       string
	postgresURL     string
	postgresURLFile string
	slot            string
	statusTable     string
	checkpointTable string
	configPath      string
	progress        []outbox.PublisherProgress // the config file's progress tables, once per publisher keeping rows there
}

// verb is "pause" or "resume".
func (c *PauseCommand) verb() string {
	if c.resume {
		return "resume"
	}
	return "pause"
}

const pauseUsage = `Usage: cdc-relay pause [--topic T] [flags]

With --topic, pauses one topic for the relays of --slot: the topic's new
events are held in the status table (PAUSED, no attempt counted) while the
rest of the stream goes on. The pause is kept in the database (the table
cdc_relay_paused_topics beside the checkpoint table), so a restart or a
standby's takeover keeps it; a running relay reads it within a few seconds.
'cdc-relay resume --topic T' delivers the held events in commit order,
before any newer event of their keys. It needs --postgres-url. A topic is
paused for one publisher: Kafka's, or with --publisher a webhook
publisher's (the config file's publishers:), whose events of the topic are
held while Kafka's flow, and the other way round.

Without --topic, pauses the whole relay running at --metrics-addr (POST
/pause): it reads nothing more from the slot, keeping the slot and its
leadership, until 'cdc-relay resume'. That pause lives in the running
relay's memory: a restart or a standby's takeover forgets it.

Examples:

  cdc-relay pause --topic orders --postgres-url postgres://admin@db/app
  cdc-relay pause --topic orders --publisher partner --config relay.yaml
  cdc-relay pause --metrics-addr relay-1:7187
`

const resumeUsage = `Usage: cdc-relay resume [--topic T] [flags]

With --topic, resumes a topic paused by 'cdc-relay pause --topic' for the
relays of --slot: its events held in the status table (PAUSED) are
delivered in commit order, before any newer event of their keys, and its
new events flow again; a running relay reads it within a few seconds. It
needs --postgres-url. It resumes the topic for one publisher: Kafka's, or
with --publisher the webhook publisher it was paused for.

Without --topic, resumes the whole relay running at --metrics-addr (POST
/resume), paused by 'cdc-relay pause'.

Examples:

  cdc-relay resume --topic orders --postgres-url postgres://admin@db/app
  cdc-relay resume --metrics-addr relay-1:7187
`

// sections are the help's groups of flags, named for the command's verb
// (pause or resume).
func (c *PauseCommand) sections() []flagSection {
	return []flagSection{
		{"What to " + c.verb(), []string{"topic", "publisher"}},
		{"A topic: the database", []string{"config", "postgres-url", "postgres-url-file", "slot", "checkpoint-table", "status-table"}},
		{"The whole relay: the running relay", []string{"metrics-addr", "admin-token", "admin-token-file"}},
	}
}

func (c *PauseCommand) flags() *flag.FlagSet {
	fs := flag.NewFlagSet(c.verb(), flag.ContinueOnError)
	fs.StringVar(&c.topic, "topic", "", "the `topic` to "+c.verb()+", in the database; without it, the whole relay at --metrics-addr")
	fs.StringVar(&c.publisher, "publisher", status.KafkaPublisher,
		"with --topic, the `publisher` whose events of the topic to "+c.verb()+": kafka, or a webhook publisher's name (the config file's publishers:)")
	fs.StringVar(&c.addr, "metrics-addr", defaultMetricsAddr, "the `host:port` where the relay serves its admin endpoints (run's --metrics-addr)")
	fs.StringVar(&c.token, "admin-token", "", "the relay's admin `token` (run's --admin-token); prefer CDC_RELAY_ADMIN_TOKEN or --admin-token-file")
	fs.StringVar(&c.tokenFile, "admin-token-file", "", "read the admin token from this `file`")
	fs.StringVar(&c.postgresURL, "postgres-url", "",
		"PostgreSQL connection `URL`, such as postgres://admin:secret@db:5432/app; the role needs to write the pause table and the status table")
	registerPostgresURLFile(fs, &c.postgresURLFile)
	fs.StringVar(&c.slot, "slot", relay.DefaultConfig().Slot, "the replication slot's `name`: a topic is paused for the relays of this slot")
	fs.StringVar(&c.checkpointTable, "checkpoint-table", "public.cdc_relay_checkpoint",
		"the relay's checkpoint table, as `schema.table`: the pause table is in its schema")
	fs.StringVar(&c.statusTable, "status-table", "public.outbox_delivery", "the status table, as `schema.table`, which holds a paused topic's events")
	registerConfig(fs, &c.configPath)
	// What to pause is said on the command line, never by a variable left
	// set in the environment.
	onlyOnCommandLine(fs, "topic", "publisher")
	return fs
}

// Usage writes the command's help.
func (c *PauseCommand) Usage(w io.Writer) {
	head := pauseUsage
	if c.resume {
		head = resumeUsage
	}
	printUsage(w, c.flags(), head, c.sections())
}

// Run pauses or resumes a topic, or the relay.
func (c *PauseCommand) Run(ctx context.Context, args []string) error {
	fs := c.flags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f, err := loadConfig(fs, c.configPath)
	if err != nil {
		return err
	}
	if err := c.checkPublisher(fs, f); err != nil {
		return err
	}
	if f != nil {
		for _, t := range f.Tables {
			c.progress = append(c.progress, t.ProgressTables()...)
		}
	}
	if c.postgresURL, err = postgresURLFrom(c.postgresURL, c.postgresURLFile); err != nil {
		return usageError{err.Error()}
	}
	if c.token, err = valueOrFile("admin-token", c.token, c.tokenFile, "the admin token"); err != nil {
		return usageError{err.Error()}
	}
	if c.topic == "" {
		return c.relayWide(ctx)
	}
	if c.postgresURL == "" {
		return usageError{"--topic: " + postgresURLRequired + ": a topic's pause is kept in the database"}
	}
	return c.oneTopic(ctx)
}

// oneTopic pauses or resumes c.topic in the database.
func (c *PauseCommand) oneTopic(ctx context.Context) error {
	ss, st, err := decoder.ParseTable(c.statusTable)
	if err != nil {
		return usageError{fmt.Sprintf("--status-table %q: %v", c.statusTable, err)}
	}
	cs, _, err := decoder.ParseTable(c.checkpointTable)
	if err != nil {
		return usageError{fmt.Sprintf("--checkpoint-table %q: %v", c.checkpointTable, err)}
	}
	conn, err := pgconnect.Open(ctx, c.postgresURL, pgconnect.Options{})
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	store := status.NewStore(conn, ss, st, status.Pauses(cs, migrations.PauseTable, c.slot), status.Publisher(c.publisher))
	change := store.PauseTopic
	if c.resume {
		change = store.ResumeTopic
	}
	changed, err := change(ctx, c.topic)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		return fmt.Errorf("%w (run 'cdc-relay migrate' of this version, or pass the --checkpoint-table and --status-table that migrate was given)", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, c.topicMessage(changed))
	if c.resume { // a team's progress table pauses its publishers' events too
		c.sayPausedInProgress(ctx, conn)
	}
	return nil
}

// sayPausedInProgress says, after a resume, in which of the config file's
// progress tables the team pauses c.topic still for c.publisher, and the
// SQL that resumes it there: the relay keeps it paused until then.
func (c *PauseCommand) sayPausedInProgress(ctx context.Context, conn *pgx.Conn) {
	for _, pp := range c.progress {
		if pp.Publisher != c.publisher {
			continue
		}
		pt := pp.Table
		var paused bool
		if err := conn.QueryRow(ctx, "SELECT $1 IN ("+pt.PausedTopics()+")", c.topic).Scan(&paused); err != nil || !paused {
			continue // a table without the column is checked by run and check-config
		}
		fmt.Fprintf(c.stdout, "topic %q is still paused in %s for publisher %q, and the relay keeps it paused until it is resumed there: %s\n",
			c.topic, pt.Schema+"."+pt.Name, pt.Publisher, pt.ResumeSQL(c.topic))
	}
}

// checkPublisher checks --publisher, when given (fs, parsed): a name
// with --topic, and with the config file f one it defines.
func (c *PauseCommand) checkPublisher(fs *flag.FlagSet, f *config.File) error {
	given := false
	fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "publisher" })
	switch {
	case !given:
		return nil
	case c.topic == "":
		return usageError{fmt.Sprintf("--publisher names whose events of a topic to %s: give --topic too (the whole relay's %s is every publisher's)", c.verb(), c.verb())}
	}
	if err := checkPublisherName(c.publisher, f, c.configPath); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// topicMessage says what became of c.topic.
func (c *PauseCommand) topicMessage(changed bool) string {
	t, again := fmt.Sprintf("topic %q", c.topic), "cdc-relay resume --topic "+c.topic
	if c.publisher != status.KafkaPublisher {
		t += " of " + publisherName(c.publisher)
		again += " --publisher " + c.publisher
	}
	switch {
	case !c.resume && changed:
		return fmt.Sprintf("%s paused for slot %q: its new events are held in the status table (PAUSED); a running relay holds them within a few seconds. "+
			"Resume it with '%s'", t, c.slot, again)
	case !c.resume:
		return fmt.Sprintf("%s was paused already for slot %q: nothing changed", t, c.slot)
	case changed:
		return fmt.Sprintf("%s resumed for slot %q: its held events are delivered in commit order, before newer events of their keys; "+
			"a running relay sends its new events again within a few seconds", t, c.slot)
	}
	return fmt.Sprintf("%s was not paused for slot %q, and holds no PAUSED event: nothing changed", t, c.slot)
}

// relayWide asks the relay at c.addr to pause or resume (POST /pause or
// /resume).
func (c *PauseCommand) relayWide(ctx context.Context) error {
	res, answered, err := c.post(ctx)
	if err != nil && answered {
		return fmt.Errorf("the relay at %s did not %s: %w", c.addr, c.verb(), err)
	}
	if err != nil {
		return fmt.Errorf("no relay answers at %s (%w): a relay-wide %s needs a running relay; %s, or %s one topic with --topic (kept in the database)",
			c.addr, err, c.verb(), giveMetricsAddr(c.addr), c.verb())
	}
	switch {
	case !c.resume && res.Changed:
		fmt.Fprintf(c.stdout, "the relay at %s is paused: it reads nothing more from the slot until 'cdc-relay resume' (a restart forgets the pause)\n", c.addr)
	case !c.resume:
		fmt.Fprintf(c.stdout, "the relay at %s was paused already: nothing changed\n", c.addr)
	case res.Changed:
		fmt.Fprintf(c.stdout, "the relay at %s is resumed: it reads the slot again\n", c.addr)
	default:
		fmt.Fprintf(c.stdout, "the relay at %s was not paused: nothing changed\n", c.addr)
	}
	return nil
}

// pauseAnswer is what /pause and /resume answer.
type pauseAnswer struct {
	Paused  bool `json:"paused"`
	Changed bool `json:"changed"`
}

// post sends POST /pause or /resume to the relay at c.addr; answered
// says whether a relay answered, whatever it said (a server that is not a
// relay's is not one).
func (c *PauseCommand) post(ctx context.Context) (res pauseAnswer, answered bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	url := c.addr
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimSuffix(url, "/")+"/"+c.verb(), nil)
	if err != nil {
		return res, false, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var uerr interface{ Unwrap() error }
		if errors.As(err, &uerr) {
			err = uerr.Unwrap() // without the URL, which the message names already
		}
		return res, false, err
	}
	defer resp.Body.Close()
	if err := checkRelayAnswer("POST /"+c.verb(), resp); err != nil {
		return res, false, err
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return res, true, fmt.Errorf("POST /%s: %s: give the relay's admin token (--admin-token-file or CDC_RELAY_ADMIN_TOKEN)", c.verb(), resp.Status)
	case resp.StatusCode != http.StatusOK:
		return res, true, fmt.Errorf("POST /%s: %s", c.verb(), resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return res, true, fmt.Errorf("POST /%s: not a relay's answer: %w", c.verb(), err)
	}
	return res, true, nil
}
