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
	head: `Usage: cdc-relay failed show ID [--json]

Prints one event of the status table in full: its state, the outbox table
it came from, the record (topic, key, headers one a line, timestamp, the
value pretty-printed when it is JSON) and the last error. With --json, one
JSON object, as in 'cdc-relay failed list --json'.
`,
	flags: func(c *FailedCommand, fs *flag.FlagSet) {
		fs.BoolVar(&c.json, "json", false, "print one JSON object, every field of the event, for scripts")
	},
	sections: []flagSection{{"Output", []string{"json"}}},
	prepare:  (*FailedCommand).prepareShow,
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

// withListHint adds listHint to an error about an id that was not found.
func withListHint(err error) error {
	if errors.Is(err, status.ErrNotFound) {
		return fmt.Errorf("%w%s", err, listHint)
	}
	return err
}
