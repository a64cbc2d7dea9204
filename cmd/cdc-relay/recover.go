package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/cdc-relay/cdc-relay/recovery"
	"github.com/cdc-relay/cdc-relay/relay"
)

// RecoverCommand is `cdc-relay recover`: publish again the outbox rows of
// a stretch of WAL the relay never read.
type RecoverCommand struct {
	stdout, stderr io.Writer

	relayFlags
	since string
	opts  recovery.Options
	// run are run's own flags (--metrics-addr, --delivery, …): recover
	// accepts them, set on the command line or in the environment, so that
	// the flags of a run serve recover as they are. It uses only the log's
	// (--log-level, --log-format), and does nothing with the others.
	run runFlags
}

const recoverUsage = `Usage: cdc-relay recover [flags]

Repairs what "cdc-relay run" refuses to start on: a replication slot that was
dropped, or re-created or advanced by another consumer, so that the relay
never read part of the WAL, and outbox rows committed then may be missing
from Kafka.

recover takes the slot (no relay may run on it meanwhile), creates it again if
it is missing, publishes again every outbox row whose timestamp column is at
or after the commit time of the last transaction before the relay's
checkpoint (less --margin, for transactions that wrote their rows long before
they committed), and moves the checkpoint to the slot's position. The next
"cdc-relay run" resumes from there. A checkpoint saved when the slot was
created, or by an earlier version, has no commit time: recover starts from
when it was saved instead, and says so.

A timestamp column without a time zone ("timestamp", not "timestamptz") holds
the wall time of whichever time zone the writing session used, which the relay
cannot know: recover widens its window by 12 hours for it, so that it finds
the rows written in any zone from UTC-12 to UTC+14, and publishes more rows
twice.

With --recreate-slot, recover drops the slot and creates it again, then goes
on as for a dropped slot: for a slot that cannot decode the WAL after the
relay's checkpoint (a publication dropped and created again, or renamed and
renamed back: pgoutput reads it as of the WAL it decodes), as "run" says.

With --since and no gap, recover publishes again the rows written since
then and changes nothing else: for rows the stream never published (the
outbox table had left the publication) or parked without their record (a
required column was missing), as the relay's error says.

Rows already in Kafka, and rows committed after the slot's position, arrive
twice: consumers deduplicate on the "id" header, as for any restart. Rows
already deleted from the outbox table (by --retention) cannot be published
again. Use --dry-run first to see how many rows it would publish, and how
many events it would park for each webhook publisher.

Pass it the same flags as "cdc-relay run": the mapping decides each row's
topic, key, value and headers, as for the stream. It accepts every flag of
run; those not listed below have no effect here.

Example:

  export CDC_RELAY_POSTGRES_URL=postgres://relay:secret@db:5432/app
  cdc-relay recover --dry-run --kafka-brokers kafka-1:9092
  cdc-relay recover --kafka-brokers kafka-1:9092
`

// recoverSections orders recover's flags in its usage.
var recoverSections = []flagSection{
	{"What to publish again", []string{"dry-run", "margin", "since", "recreate-slot"}},
	{"Configuration file (optional)", []string{"config"}},
	{"Connections (required: PostgreSQL and Kafka)", []string{"postgres-url", "postgres-url-file", "kafka-brokers", "replication-timeout"}},
	{"Slot and tables", []string{"slot", "publication", "table", "status-table", "checkpoint-table"}},
	{"From row to Kafka record", []string{
		"topic-template", "topic-column", "key-column", "payload-column", "id-column",
		"header-columns", "headers-column", "timestamp-column", "timestamp-unit", "allowed-topics"}},
	{"Kafka producer", producerFlagNames},
	{"Kafka security", kafkaSecurityFlagNames},
}

func (c *RecoverCommand) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("recover", flag.ContinueOnError)
	c.relayFlags.register(fs)
	c.run.register(fs)
	fs.BoolVar(&c.opts.DryRun, "dry-run", false, "count the rows it would publish again, and the events it would park for each webhook publisher, and change nothing")
	c.opts.Margin = 10 * time.Minute
	durationVar(fs, &c.opts.Margin, "margin", c.opts.Margin,
		"also publish rows written this long before the checkpoint's commit time, for transactions that committed long after they wrote them")
	fs.BoolVar(&c.opts.RecreateSlot, "recreate-slot", false,
		"drop the slot and create it again, then publish again as for a lost slot: for a slot that cannot decode past a publication dropped and created again (the relay's error says when)")
	fs.StringVar(&c.since, "since", "", "publish rows whose timestamp column is at or after this `time` (RFC 3339, such as 2026-11-23T08:00:00Z) instead")
	// What to publish is chosen on the command line, never by a variable
	// left set in a shell.
	onlyOnCommandLine(fs, "dry-run", "margin", "since", "recreate-slot")
	return fs
}

// Usage writes recover's help.
func (c *RecoverCommand) Usage(w io.Writer) {
	printUsage(w, listedOnly(c.flags(), recoverSections), recoverUsage, recoverSections)
}

// listedOnly returns a flag set with only the flags sections name: recover
// accepts every flag of run, so that one command line serves both, but
// lists only those it uses.
func listedOnly(fs *flag.FlagSet, sections []flagSection) *flag.FlagSet {
	out := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	for _, s := range sections {
		for _, name := range s.names {
			if f := fs.Lookup(name); f != nil {
				out.Var(f.Value, f.Name, f.Usage)
			}
		}
	}
	return out
}

// Run parses args and recovers.
func (c *RecoverCommand) Run(ctx context.Context, args []string) error {
	fs := c.flags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := c.finish(fs); err != nil {
		return err
	}
	var err error
	if c.opts.Since, err = parseTimeFlag("since", c.since); err != nil {
		return err
	}
	log, err := newLogger(c.stderr, c.run.logLevel, c.run.logFormat)
	if err != nil {
		return err
	}
	c.cfg.Logger = log
	c.kafkaSecurity.logSettings(log)
	sayMessagesNotRecovered(c.stderr, c.cfg)
	res, err := relay.Recover(ctx, c.cfg, c.opts)
	err = c.kafkaSecurity.explain(err)
	if errors.Is(err, recovery.ErrNothingToRecover) {
		fmt.Fprintf(c.stdout, "%s: slot %q is at %s, the relay's checkpoint at %s\n", err, c.cfg.Slot, res.Gap.SlotLSN, res.Gap.Checkpoint.LSN)
		return nil
	}
	if err != nil {
		return err
	}
	if res.NoGap {
		verb := "published again"
		if c.opts.DryRun {
			verb = "would be published again"
		}
		fmt.Fprintf(c.stdout, "the relay read every transaction of slot %q; %d outbox row(s) written since %s %s",
			c.cfg.Slot, res.Rows, res.Since.UTC().Format(time.RFC3339), verb)
		if !c.opts.DryRun {
			fmt.Fprintf(c.stdout, " (%d published, %d parked in the status table)", res.Published, res.Parked)
		}
		fmt.Fprintln(c.stdout)
		c.printAdopted(res)
		return nil
	}
	gap := fmt.Sprintf("%s to %s", res.Gap.Checkpoint.LSN, res.Gap.SlotLSN)
	switch {
	case c.opts.RecreateSlot && c.opts.DryRun:
		gap = fmt.Sprintf("%s to now (the slot would be dropped and created again)", res.Gap.Checkpoint.LSN)
	case res.Gap.Dropped && c.opts.DryRun:
		gap = fmt.Sprintf("%s to now (the slot was dropped)", res.Gap.Checkpoint.LSN)
	}
	if c.opts.DryRun {
		fmt.Fprintf(c.stdout, "dry run: the relay never read the WAL from %s; %d outbox row(s) written since %s (%s) would be published again\n",
			gap, res.Rows, res.Since.UTC().Format(time.RFC3339), res.From)
		c.printAdopted(res)
		return nil
	}
	fmt.Fprintf(c.stdout, "recovered the WAL from %s: %d outbox row(s) written since %s (%s), %d published again, %d parked in the status table\n",
		gap, res.Rows, res.Since.UTC().Format(time.RFC3339), res.From, res.Published, res.Parked)
	c.printAdopted(res)
	fmt.Fprintf(c.stdout, "the checkpoint is at %s: start \"cdc-relay run\" to resume\n", res.Resume)
	return nil
}

// printAdopted says, for each webhook publisher, how many of the rows'
// events recover parked for it, or would park in a dry run: recover
// publishes to Kafka itself, and a relay's poller sends the webhooks'
// copies.
func (c *RecoverCommand) printAdopted(res recovery.Result) {
	for _, p := range slices.Sorted(maps.Keys(res.Adopted)) {
		if c.opts.DryRun {
			fmt.Fprintf(c.stdout, "%d event(s) would be parked for publisher %s, for its poller to send once \"cdc-relay run\" runs\n", res.Adopted[p], p)
			continue
		}
		fmt.Fprintf(c.stdout, "%d event(s) parked for publisher %s: its poller sends them once \"cdc-relay run\" runs (`cdc-relay failed list --publisher %s` lists them)\n",
			res.Adopted[p], p, p)
	}
}
