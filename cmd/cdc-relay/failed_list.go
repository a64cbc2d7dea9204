package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cdc-relay/cdc-relay/status"
)

// failedList is `cdc-relay failed list`: the parked events, newest first.
var failedList = failedSubcommand{
	head: `Usage: cdc-relay failed list [--status S] [--topic T] [--publisher P]
                             [--limit N] [--json]

Lists the events in the status table, newest first: for people a table
(id, status, what it waits for, attempts, the outbox table the event came
from, topic, event id, next attempt, last error, cut to fit), with --json
one JSON array for
scripts, every field of each event. Events parked by a version of the
relay from before the status table kept the outbox table name none ("-",
or null in JSON). Every publisher's events are listed, newest first, unless
--publisher names one; a PUBLISHER column (in JSON, "publisher") names the
publisher of those not Kafka's.

In JSON, "key" is a string: the key's text, or base64 when key_encoding is
"base64". "value" is the JSON itself when the record value is JSON
(value_encoding "json"; its spacing may differ from the bytes stored), else
its text ("text") or base64 ("base64"). A NULL key or value is null, without
an encoding. Times are RFC 3339 in UTC. "waits_for" is the id of the first
held event of its topic and key, which it waits for, or 0.
`,
	flags: func(c *FailedCommand, fs *flag.FlagSet) {
		fs.StringVar(&c.state, "status", "", "only the events in this `state`: FAILED, DEAD, WAITING, PAUSED or DELIVERED (in any case); all when empty")
		fs.StringVar(&c.state, "state", "", "the same as --status `state` (the HTTP API's ?state=)")
		fs.StringVar(&c.topic, "topic", "", "only the events for this `topic`, exactly")
		fs.IntVar(&c.limit, "limit", 50, "at most `n` events, the newest; 0 lists them all")
		fs.BoolVar(&c.json, "json", false, "print one JSON array, every field of each event, for scripts")
	},
	publisher: "only the events of this `publisher`: kafka, or a webhook publisher's name (the config file's publishers:); every publisher's when not given",
	every:     true,
	sections:  []flagSection{{"Which events", []string{"status", "state", "topic", "publisher", "limit"}}, {"Output", []string{"json"}}},
	prepare:   (*FailedCommand).prepareList,
}

// prepareList checks list's flags: it takes no operands.
func (c *FailedCommand) prepareList(operands []string, usage func(string, ...any) error) (failedRun, error) {
	if len(operands) > 0 {
		return nil, usage("unexpected argument %q: list takes flags only (show ID prints one event)", operands[0])
	}
	state := strings.ToUpper(strings.TrimSpace(c.state))
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
}

// list is `failed list`.
func (c *FailedCommand) list(ctx context.Context, s *status.Store, opts status.ListOptions) error {
	limit := opts.Limit
	if limit > 0 {
		opts.Limit++ // one more, to know whether there are more
	}
	rows, err := c.listed(ctx, s, opts)
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
		_, err = fmt.Fprintf(c.stdout, "no %s in %s%s\n", c.describeList(opts), c.statusTable, c.emptyHint(ctx, s))
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

// listed is the rows of a list: --publisher's, those of s; without it,
// every publisher's, newest first, at most opts.Limit (when more than 0).
func (c *FailedCommand) listed(ctx context.Context, s *status.Store, opts status.ListOptions) ([]status.Row, error) {
	if c.publisher != "" {
		return s.List(ctx, opts)
	}
	publishers, err := status.TablePublishers(ctx, s)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(publishers, s.Publisher()) {
		// Kafka's rows are read all the same, as before publishers: a
		// table that lacks a column says so even when it is empty.
		publishers = append([]string{s.Publisher()}, publishers...)
	}
	var rows []status.Row
	for _, p := range publishers {
		theirs, err := c.storeOf(p).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		rows = append(rows, theirs...)
	}
	slices.SortFunc(rows, func(a, b status.Row) int { return cmp.Compare(b.ID, a.ID) })
	if opts.Limit > 0 && len(rows) > opts.Limit {
		rows = rows[:opts.Limit]
	}
	return rows, nil
}

// emptyHint ends the line of a list of --publisher's rows that found
// none: which publishers the table has rows of (publisherHint).
func (c *FailedCommand) emptyHint(ctx context.Context, s *status.Store) string {
	if c.publisher == "" || c.file != nil { // the file named the publisher
		return ""
	}
	return c.publisherHint(ctx, s)
}

// describeList names what a list selects: "FAILED events for topic t",
// "events of the webhook publisher partner".
func (c *FailedCommand) describeList(opts status.ListOptions) string {
	d := "events"
	if opts.Status != "" {
		d = opts.Status + " events"
	}
	if c.publisher != "" {
		d += " of " + publisherName(c.publisher)
	}
	if opts.Topic != "" {
		d += fmt.Sprintf(" for topic %q", opts.Topic)
	}
	return d
}
