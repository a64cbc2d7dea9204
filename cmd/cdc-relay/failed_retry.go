package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay"
	"github.com/cdc-relay/cdc-relay/status"
)

// failedRetry is `cdc-relay failed retry`: make events due again,
// perhaps to a corrected topic.
var failedRetry = failedSubcommand{
	head: `Usage: cdc-relay failed retry ID... | --all [--status FAILED|DEAD]
                              [--publisher P]
       cdc-relay failed retry ID --topic T [--allowed-topics RE]

Makes events due again: each becomes FAILED with 0 attempts and its next
attempt now, and the running relay's poller, which the change wakes,
delivers it at once ('cdc-relay run'). Fix what made the events fail first.

Name the events by id (spaces or commas between ids), or retry every FAILED
and DEAD event with --all (only those of --status when given). A DELIVERED
event is never retried: it reached Kafka. An id that is not in the table or
is DELIVERED is reported, and the exit status is 1, after the other events
are retried.

It retries one publisher's events: Kafka's, or with --publisher a webhook
publisher's, which its poller in the running relay delivers. An id of
another publisher's event is reported, and the exit status is 1, after
the others are retried.

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
topic and key parked before it. A webhook publisher's event (--publisher)
is corrected the same way: its poller sends it as an event of topic T,
in T's key order and T's pauses for that publisher (the request its
receiver gets carries no topic, and is as before).
`,
	flags: func(c *FailedCommand, fs *flag.FlagSet) {
		fs.BoolVar(&c.all, "all", false, "retry every FAILED and DEAD event (only those of --status when given)")
		fs.StringVar(&c.state, "status", "", "with --all, only the events in this `state`: FAILED or DEAD (in any case)")
		fs.StringVar(&c.state, "state", "", "the same as --status `state`")
		fs.StringVar(&c.topic, "topic", "", "deliver the one event named to this `topic` instead of the one it was parked for (kept as its original topic)")
		fs.StringVar(&c.allowedTopics, "allowed-topics", "",
			"with --topic, a Go `regexp` the whole new topic must match, as run's; empty: any topic not starting with \"_\" or \"connect-\" (the config file's allowed_topics with --config)")
	},
	publisher: "retry the events of this `publisher` only: kafka, or a webhook publisher's name (the config file's publishers:); " +
		"an id of another publisher's is reported, not retried",
	sections: []flagSection{{"Which events (ids, or --all)", []string{"all", "status", "state", "publisher"}},
		{"A new topic (one id)", []string{"topic", "allowed-topics"}}},
	prepare: (*FailedCommand).prepareRetry,
}

// prepareRetry checks retry's flags and ids.
func (c *FailedCommand) prepareRetry(operands []string, usage func(string, ...any) error) (failedRun, error) {
	ids, err := parseIDs(operands)
	if err != nil {
		return nil, usage("%v", err)
	}
	state := strings.ToUpper(strings.TrimSpace(c.state))
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
}

// retry is `failed retry`: it retries the events of s's publisher, and
// reports the ids of another's.
func (c *FailedCommand) retry(ctx context.Context, s *status.Store, opts status.RetryOptions) error {
	var theirs error // the ids of other publishers' events
	if len(opts.IDs) > 0 {
		ids, others, err := ownIDs(ctx, s, opts.IDs)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return notDone{"retried", others}
		}
		opts.IDs, theirs = ids, others
	}
	if err := c.checkSourceTopic(ctx, s, opts); err != nil {
		return err
	}
	changes, err := s.Retry(ctx, opts)
	if len(changes) > 0 && opts.Topic != "" {
		fmt.Fprintf(c.stdout, "retried 1 event%s: %d, to topic %q (its original topic is kept: 'cdc-relay failed show %d')\n", c.ofActing(), changes[0].ID, opts.Topic, changes[0].ID)
		printReleased(c.stdout, changes)
	} else if len(changes) > 0 {
		fmt.Fprintf(c.stdout, "retried %s%s: %s\n", eventCount(len(changes)), c.ofActing(), joinIDs(changes, ""))
	}
	switch {
	case err != nil && len(opts.IDs) > 0 && (errors.Is(err, status.ErrNotFound) || errors.Is(err, status.ErrDelivered) || errors.Is(err, status.ErrHeld)):
		return notDone{"retried", errors.Join(theirs, err)}
	case err != nil:
		return err
	case theirs != nil:
		return notDone{"retried", theirs}
	case len(changes) == 0:
		which := "FAILED or DEAD"
		if opts.Status != "" {
			which = opts.Status
		}
		return fmt.Errorf("nothing to retry: no %s events%s in %s%s", which, c.ofActing(), c.statusTable, withSpace(c.othersNote(ctx, s)))
	}
	if opts.All {
		if note := c.othersNote(ctx, s); note != "" {
			fmt.Fprintln(c.stderr, note)
		}
	}
	return nil
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
