package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdc-relay/cdc-relay/status"
)

// failedSkip is `cdc-relay failed skip`: give up on events.
var failedSkip = failedSubcommand{
	head: `Usage: cdc-relay failed skip ID... [--publisher P]

Gives up on FAILED or DEAD events: each becomes DEAD, marked skipped (its
last error says "skipped by an operator"), and stays in the status table
until purged. The events of its key that waited behind it (WAITING) are
released: the relay's poller delivers them in order. The output says how
many each skip released. An id that is not in the table, or not FAILED or
DEAD, is reported, and the exit status is 1, after the others are skipped.

It skips one publisher's events: Kafka's, or with --publisher a webhook
publisher's. An id of another publisher's event is reported, and not
skipped.

With --config, the outbox row of each skipped event whose table has
write_back says its dead value.
`,
	publisher: "skip the events of this `publisher` only: kafka, or a webhook publisher's name (the config file's publishers:); " +
		"an id of another publisher's is reported, not skipped",
	sections: []flagSection{{"Which events (ids)", []string{"publisher"}}},
	prepare:  (*FailedCommand).prepareSkip,
}

// prepareSkip checks skip's ids.
func (c *FailedCommand) prepareSkip(operands []string, usage func(string, ...any) error) (failedRun, error) {
	ids, err := parseIDs(operands)
	if err != nil {
		return nil, usage("%v", err)
	}
	if len(ids) == 0 {
		return nil, usage("name the events to skip by id")
	}
	opts := status.SkipOptions{IDs: ids}
	return func(ctx context.Context, s *status.Store) error { return c.skip(ctx, s, opts) }, nil
}

// skip is `failed skip`: it skips the events of s's publisher, and
// reports the ids of another's.
func (c *FailedCommand) skip(ctx context.Context, s *status.Store, opts status.SkipOptions) error {
	ids, theirs, err := ownIDs(ctx, s, opts.IDs)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return notDone{"skipped", theirs}
	}
	opts.IDs = ids
	changes, err := s.Skip(ctx, opts)
	if len(changes) > 0 {
		fmt.Fprintf(c.stdout, "skipped %s%s: %s (now DEAD, skipped; 'cdc-relay failed purge' deletes them)\n",
			eventCount(len(changes)), c.ofActing(), joinIDs(changes, ""))
		printReleased(c.stdout, changes)
	}
	if err != nil || theirs != nil {
		return notDone{"skipped", errors.Join(theirs, err)}
	}
	return nil
}
