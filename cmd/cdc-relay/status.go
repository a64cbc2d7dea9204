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
	"text/tabwriter"
	"time"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/relay"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/report"
)

// StatusCommand is `cdc-relay status`: how a relay is doing, from its
// /status endpoint, or from the database when no relay answers.
type StatusCommand struct {
	stdout, stderr io.Writer

	addr            string
	postgresURL     string
	postgresURLFile string
	slot            string
	tables          tableFlags
	json            bool
	configPath      string
	file            *config.File
}

const statusUsage = `Usage: cdc-relay status [flags]

Says in a few lines how a relay is doing: its role (leader or standby),
whether it is ready or paused and why not, the lag, the WAL the slot keeps,
the events in flight, the events parked in the status table, and the events
the relay still owes Kafka; when the status table holds events (FAILED,
DEAD, WAITING behind an earlier event of their key, PAUSED with their
topic), a line per topic with its counts and the age of its oldest (the
100 topics with the most).

It asks the relay at --metrics-addr (GET /status, as "cdc-relay run" serves
it). When no relay answers there and a PostgreSQL URL is given, it reads the
slot and the status table instead. --json prints the status as JSON, the
same fields as GET /status.

It exits 0 when a relay answered and is ready (paused or not), 1 when it
answered and is not ready (or on an error, such as an unreadable --config),
2 on a usage error, and 3 when no relay answers at --metrics-addr, also when
the database was read instead. So a container's health check needs
nothing else: ["CMD", "/cdc-relay", "status"].

Examples:

  cdc-relay status
  cdc-relay status --metrics-addr relay-1:7187 --json
  CDC_RELAY_POSTGRES_URL=postgres://relay@db/app cdc-relay status
`

var statusSections = []flagSection{
	{"Where to look", []string{"metrics-addr", "config", "postgres-url", "postgres-url-file", "slot", "table", "status-table", "checkpoint-table"}},
	{"Output", []string{"json"}},
}

func (c *StatusCommand) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.StringVar(&c.addr, "metrics-addr", defaultMetricsAddr, "the `host:port` where the relay serves /status (run's --metrics-addr)")
	fs.StringVar(&c.postgresURL, "postgres-url", "", "when no relay answers, read the slot and the status table from this PostgreSQL `URL`")
	registerPostgresURLFile(fs, &c.postgresURLFile)
	fs.StringVar(&c.slot, "slot", relay.DefaultConfig().Slot, "the replication slot's `name`, when reading the database")
	c.tables.registerTables(fs, "the relay's checkpoint table, as `schema.table`, when reading the database: the pause table and the table of backfills are in its schema")
	fs.BoolVar(&c.json, "json", false, "print JSON, as GET /status")
	registerConfig(fs, &c.configPath)
	return fs
}

// Usage writes status's help.
func (c *StatusCommand) Usage(w io.Writer) { printUsage(w, c.flags(), statusUsage, statusSections) }

// statusTimeout bounds the request to the relay and the database reads.
const statusTimeout = 5 * time.Second

// Run prints the status.
func (c *StatusCommand) Run(ctx context.Context, args []string) error {
	fs := c.flags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var err error
	if c.file, err = loadConfig(fs, c.configPath); err != nil {
		return err
	}
	if c.postgresURL, err = postgresURLFrom(c.postgresURL, c.postgresURLFile); err != nil {
		return err
	}
	st, askErr := report.Status{}, errors.New("--metrics-addr is empty")
	if c.addr != "" {
		st, askErr = c.ask(ctx)
	}
	if askErr != nil {
		if c.postgresURL == "" {
			return exitCodeError{statusNoRelay, fmt.Errorf("no relay answers at %s (%w): %s, or --postgres-url to read the database instead", c.addr, askErr, giveMetricsAddr(c.addr))}
		}
		if st, err = c.fromDatabase(ctx); err != nil {
			return exitCodeError{statusNoRelay, fmt.Errorf("no relay answers at %s (%v), and reading the database failed: %w", c.addr, askErr, err)}
		}
		st.NotReady = fmt.Sprintf("no relay answers at %s", c.addr)
	}
	if c.json {
		err = writeIndentedJSON(c.stdout, st)
	} else {
		printStatus(c.stdout, st, time.Now())
	}
	if err != nil {
		return err
	}
	return statusExit(st, askErr == nil)
}

// The exit codes of status beside 2, a usage error, and 1, an error such
// as an unreadable --config: what a health check (Docker's, a Kubernetes
// exec probe) reads.
const (
	statusReady    = 0 // a relay answered and is ready (paused or not)
	statusNotReady = 1 // a relay answered and is not ready
	statusNoRelay  = 3 // no relay answered at --metrics-addr, whatever the database said
)

// statusExit returns nil for a relay that answered ready, else the exit
// code that says why not, without a message: the printed status says it.
func statusExit(st report.Status, answered bool) error {
	switch {
	case !answered:
		return exitCodeError{code: statusNoRelay}
	case !st.Ready:
		return exitCodeError{code: statusNotReady}
	}
	return nil
}

// ask reads GET /status from the relay at c.addr.
func (c *StatusCommand) ask(ctx context.Context) (report.Status, error) {
	var st report.Status
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	url := c.addr
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(url, "/")+"/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var uerr interface{ Unwrap() error }
		if errors.As(err, &uerr) {
			err = uerr.Unwrap() // without the URL, which the message names already
		}
		return st, err
	}
	defer resp.Body.Close()
	if err := checkRelayAnswer("GET /status", resp); err != nil {
		return st, err
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET /status: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("GET /status: not a relay's status: %w", err)
	}
	return st, nil
}

// fromDatabase reads what the database says of the slot and the status
// table.
func (c *StatusCommand) fromDatabase(ctx context.Context) (report.Status, error) {
	cfg := relay.DefaultConfig()
	cfg.Slot = c.slot
	if err := c.tables.applyTables(&cfg); err != nil {
		return report.Status{}, err
	}
	if c.file != nil {
		configSources(&cfg, c.file, "")
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	conn, err := pgconnect.Open(ctx, c.postgresURL, pgconnect.Options{})
	if err != nil {
		return report.Status{}, err
	}
	defer conn.Close(context.Background())
	db, err := report.ReadDatabaseStats(ctx, conn, cfg.ReportNames())
	if err != nil {
		return report.Status{}, err
	}
	if db.BackfillsProblem != "" {
		fmt.Fprintln(c.stderr, "note: "+db.BackfillsProblem)
	}
	st := report.Status{
		Role: report.RoleNone, Slot: cfg.Slot, Table: strings.Join(cfg.SourceNames(), ", "),
		PausedTopics: db.PausedTopics, ConfirmedLSN: db.Confirmed.String(),
	}
	st.SetDatabase(db)
	if !db.SlotExists {
		st.LastError = fmt.Sprintf("slot %q does not exist: `cdc-relay migrate` creates it", cfg.Slot)
	} else if db.SlotActive {
		st.LastError = "the slot is active: a relay streams it, but not one that answers at --metrics-addr"
	}
	return st, nil
}

// printStatus writes st for a person: a headline, then a line per topic.
func printStatus(w io.Writer, st report.Status, now time.Time) {
	head := "cdc-relay"
	if st.Version != "" {
		head += " " + st.Version
	}
	if commit := (buildinfo.Info{Commit: st.Commit}).ShortCommit(); commit != "" {
		head += " (commit " + commit + ")"
	}
	switch {
	case st.Role == report.RoleNone:
		head += ": no relay answers; from the database"
	case st.Ready:
		head += ": " + st.Role + ", ready"
	default:
		head += ": " + st.Role + ", NOT READY"
	}
	if st.Paused {
		head += ", PAUSED (POST /resume resumes)"
	}
	fmt.Fprintln(w, head)
	printPaused(w, st)
	if st.NotReady != "" && st.Role != report.RoleNone {
		fmt.Fprintf(w, "  why         %s\n", st.NotReady)
	}
	fmt.Fprintf(w, "  slot        %s, table %s, confirmed %s\n", st.Slot, st.Table, st.ConfirmedLSN)
	lag := "lag " + bytesText(st.LagBytes)
	if st.Role != report.RoleNone && st.InFlightEvents > 0 {
		lag += fmt.Sprintf(", the oldest event in flight committed %s ago", (time.Duration(st.LagSeconds * float64(time.Second))).Round(time.Millisecond))
	}
	fmt.Fprintf(w, "  wal         %s; the slot keeps %s\n", lag, bytesText(st.WALRetainedBytes))
	if st.Role != report.RoleNone {
		fmt.Fprintf(w, "  events      %d read, %d produced, %d parked since it started; %d in flight (%s)\n",
			st.EventsRead, st.EventsProduced, st.EventsParked, st.InFlightEvents, bytesText(st.InFlightBytes))
	}
	printHeld(w, st)
	for _, b := range st.Backfills {
		fmt.Fprintf(w, "  backfill    %s: %d of %d rows published, last key %s; started %s ago (run %s), updated %s ago\n", b.Table, b.RowsPublished, b.RowsSelected,
			b.LastKey, now.Sub(b.StartedAt).Round(time.Second), b.RunID, now.Sub(b.UpdatedAt).Round(time.Second))
	}
	if st.PostgresVersion > 0 {
		fmt.Fprintf(w, "  failover    %s\n", failoverText(st))
	}
	if st.OnSlotLoss != "" {
		fmt.Fprintf(w, "  slot loss   %s (--on-slot-loss); %d gap(s) in the WAL repaired since it started\n", st.OnSlotLoss, st.SlotRecoveries)
	}
	if !st.DatabaseAt.IsZero() {
		fmt.Fprintf(w, "  as of       %s ago (slot and status table)\n", now.Sub(st.DatabaseAt).Round(time.Second))
	}
	if st.LastError != "" {
		at := ""
		if !st.LastErrorAt.IsZero() {
			at = fmt.Sprintf(" (%s ago)", now.Sub(st.LastErrorAt).Round(time.Second))
		}
		fmt.Fprintf(w, "  last error  %s%s\n", st.LastError, at)
	}
}

// printHeld writes the parked events: the FAILED and DEAD counts, the
// events the relay still owes, and, when the status table holds events,
// a line per topic.
func printHeld(w io.Writer, st report.Status) {
	if st.Failed < 0 {
		return
	}
	parked := fmt.Sprintf("%d FAILED (being retried), %d DEAD (given up)", st.Failed, st.Dead)
	if st.Failed+st.Dead > 0 || len(st.Topics) > 0 {
		parked += ": cdc-relay failed list"
	}
	fmt.Fprintf(w, "  parked      %s\n", parked)
	if st.EventsBehind > 0 {
		oldest := ""
		if st.OldestUndeliveredSeconds > 0 { // not said by a relay of an earlier version
			oldest = ", the oldest for " + (time.Duration(st.OldestUndeliveredSeconds * float64(time.Second))).Round(time.Second).String()
		}
		fmt.Fprintf(w, "  behind      %d events owed to Kafka (in flight, FAILED, WAITING, PAUSED)%s; the WAL not read yet counts in the lag above\n",
			st.EventsBehind, oldest)
	}
	if len(st.Topics) == 0 {
		return
	}
	fmt.Fprintln(w, "  held by topic:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "    TOPIC\tFAILED\tDEAD\tWAITING\tPAUSED\tOLDEST\t")
	for _, t := range st.Topics {
		oldest := time.Duration(t.OldestHeldSeconds * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(tw, "    %s\t%d\t%d\t%d\t%d\t%s\t\n", t.Topic, t.Failed, t.Dead, t.Waiting, t.Paused, oldest)
	}
	_ = tw.Flush()
	if more := st.HeldTopics - len(st.Topics); more > 0 {
		fmt.Fprintf(w, "    and %d more topics with fewer held events\n", more)
	}
}

// failoverText says whether a promoted standby would have st's slot.
func failoverText(st report.Status) string {
	switch {
	case st.PostgresVersion < replication.FailoverVersion:
		return fmt.Sprintf("none: PostgreSQL %d has no failover slots, so a promoted standby has no slot", st.PostgresVersion/10000)
	case !st.FailoverSlot:
		return "the slot is NOT a failover slot: a promoted standby will not have it (run makes it one)"
	case st.SynchronizedStandbySlots == "":
		return "failover slot; synchronized_standby_slots is NOT set on the primary: a promoted standby may lack the slot's last positions"
	}
	return "failover slot; synchronized_standby_slots = " + st.SynchronizedStandbySlots
}

// bytesText renders a byte count, or "unknown" for -1.
func bytesText(n int64) string {
	if n < 0 {
		return "unknown"
	}
	return replication.Slot{RetainedBytes: n}.Retained()
}

// printPaused writes the paused topics: those of the pause table, which
// `cdc-relay resume` resumes (with --publisher for a publisher beside
// Kafka), and those a team paused in its progress table, which its own
// SQL resumes.
func printPaused(w io.Writer, st report.Status) {
	type team struct{ table, publisher string }
	byTeam := map[team][]string{}
	inTable := map[string]bool{} // publisher/topic
	var teams []team
	for _, p := range st.PausedIn {
		k := team{p.Table, p.Publisher}
		if byTeam[k] == nil {
			teams = append(teams, k)
		}
		byTeam[k] = append(byTeam[k], p.Topic)
		inTable[p.Publisher+"/"+p.Topic] = true
	}
	var own []string
	for _, t := range st.PausedTopics {
		if !inTable["/"+t] {
			own = append(own, t)
		}
	}
	if len(own) > 0 {
		fmt.Fprintf(w, "  paused      topics %s (`cdc-relay resume --topic T` resumes one)\n", strings.Join(own, ", "))
	}
	var publishers []string
	ownOf := map[string][]string{}
	for _, p := range st.PublishersPaused { // the pause table's alone: a team's pause is listed below
		if ownOf[p.Publisher] == nil {
			publishers = append(publishers, p.Publisher)
		}
		ownOf[p.Publisher] = append(ownOf[p.Publisher], p.Topic)
	}
	for _, p := range publishers {
		fmt.Fprintf(w, "  paused      topics %s for publisher %s (`cdc-relay resume --topic T --publisher %s` resumes one)\n", strings.Join(ownOf[p], ", "), p, p)
	}
	for _, k := range teams {
		whose := ""
		if k.publisher != "" {
			whose = " for publisher " + k.publisher
		}
		fmt.Fprintf(w, "  paused      topics %s%s in %s (its status column; set it back to ACTIVE to resume one)\n", strings.Join(byTeam[k], ", "), whose, k.table)
	}
}
