package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/cdc-relay/cdc-relay/status"
)

// failedShow is `cdc-relay failed show`: one event in full.
var failedShow = failedSubcommand{
	head: `Usage: cdc-relay failed show ID [--publisher P] [--json]

Prints one event of the status table in full: its state, the outbox table
it came from, the record (topic, key, headers one a line, timestamp, the
value pretty-printed when it is JSON) and the last error. With --json, one
JSON object, as in 'cdc-relay failed list --json'. The event may be any
publisher's (a publisher line names one not Kafka's), unless --publisher
names one.
`,
	flags: func(c *FailedCommand, fs *flag.FlagSet) {
		fs.BoolVar(&c.json, "json", false, "print one JSON object, every field of the event, for scripts")
	},
	publisher: "the `publisher` the event must be of: kafka, or a webhook publisher's name (the config file's publishers:); any when not given",
	every:     true,
	sections:  []flagSection{{"Which event", []string{"publisher"}}, {"Output", []string{"json"}}},
	prepare:   (*FailedCommand).prepareShow,
}

// prepareShow checks show's operand: one id.
func (c *FailedCommand) prepareShow(operands []string, usage func(string, ...any) error) (failedRun, error) {
	ids, err := parseIDs(operands)
	if err != nil {
		return nil, usage("%v", err)
	}
	if len(ids) != 1 {
		return nil, usage("want one id, got %d", len(ids))
	}
	return func(ctx context.Context, s *status.Store) error { return c.show(ctx, s, ids[0]) }, nil
}

// show is `failed show`: the row of s's publisher with id or, without
// --publisher, the row with id of whichever publisher's it is.
func (c *FailedCommand) show(ctx context.Context, s *status.Store, id int64) error {
	owners, err := status.PublishersOf(ctx, s, []int64{id})
	if err != nil {
		return err
	}
	switch p, ok := owners[id]; {
	case !ok || p == s.Publisher():
	case c.publisher == "":
		s = c.storeOf(p)
	default:
		return otherPublisherError{id: id, publisher: p}
	}
	row, err := s.Get(ctx, id)
	if err != nil {
		return withListHint(err)
	}
	if c.json {
		return writeIndentedJSON(c.stdout, row)
	}
	return writeRecord(c.stdout, row, time.Now())
}

// withListHint adds listHint to an error about an id that was not found.
func withListHint(err error) error {
	if errors.Is(err, status.ErrNotFound) {
		return fmt.Errorf("%w%s", err, listHint)
	}
	return err
}
