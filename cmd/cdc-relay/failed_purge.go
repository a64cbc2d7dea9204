package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/cdc-relay/cdc-relay/status"
)

// failedPurge is `cdc-relay failed purge`: delete events from the status
// table.
var failedPurge = failedSubcommand{
	head: `Usage: cdc-relay failed purge ID... | --dead [--older-than D] [--publisher P]

Deletes events from the status table, for good: the status table holds the
only copy of an event that was never delivered.

Name the events by id (spaces or commas between ids), in any state, FAILED
included (the output says which were FAILED), or delete every DEAD event
with --dead (only those marked DEAD more than --older-than ago when given).
--dead never deletes FAILED or DELIVERED events. An id that is not in the
table is reported, and the exit status is 1, after the others are deleted.
Purging the first held event of a key releases the events of its key that
waited behind it: the output says how many, and the poller delivers them in
order.

It deletes one publisher's events: Kafka's, or with --publisher a webhook
publisher's. An id of another publisher's event is reported, and not
deleted.

With --config, the outbox row of each purged FAILED, WAITING or PAUSED
event whose table has write_back says its dead value: the event is given
up on.
`,
	flags: func(c *FailedCommand, fs *flag.FlagSet) {
		fs.BoolVar(&c.dead, "dead", false, "delete every DEAD event (only those older than --older-than when given)")
		durationVar(fs, &c.olderThan, "older-than", 0,
			"with --dead, only the events marked DEAD more than this long ago (by updated_at), such as 30d or 12h")
	},
	publisher: "delete the events of this `publisher` only: kafka, or a webhook publisher's name (the config file's publishers:); " +
		"an id of another publisher's is reported, not deleted",
	sections: []flagSection{{"Which events (ids, or --dead)", []string{"dead", "older-than", "publisher"}}},
	prepare:  (*FailedCommand).preparePurge,
}

// preparePurge checks purge's flags and ids.
func (c *FailedCommand) preparePurge(operands []string, usage func(string, ...any) error) (failedRun, error) {
	ids, err := parseIDs(operands)
	if err != nil {
		return nil, usage("%v", err)
	}
	switch {
	case len(ids) > 0 && c.dead:
		return nil, usage("give ids or --dead, not both")
	case len(ids) == 0 && !c.dead:
		return nil, usage("name the events to purge by id, or pass --dead")
	case c.olderThan > 0 && !c.dead:
		return nil, usage("--older-than narrows --dead; with ids, each named event is deleted")
	}
	opts := status.PurgeOptions{IDs: ids, Dead: c.dead, OlderThan: c.olderThan}
	return func(ctx context.Context, s *status.Store) error { return c.purge(ctx, s, opts) }, nil
}

// purge is `failed purge`: it deletes the events of s's publisher, and
// reports the ids of another's.
func (c *FailedCommand) purge(ctx context.Context, s *status.Store, opts status.PurgeOptions) error {
	var theirs error // the ids of other publishers' events
	if len(opts.IDs) > 0 {
		ids, others, err := ownIDs(ctx, s, opts.IDs)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return notDone{"purged", others}
		}
		opts.IDs, theirs = ids, others
	}
	changes, err := s.Purge(ctx, opts)
	if len(changes) > 0 {
		fmt.Fprintf(c.stdout, "purged %s%s: %s", eventCount(len(changes)), c.ofActing(), joinIDs(changes, ""))
		if failed := joinIDs(changes, status.Failed); failed != "" {
			verb := "were"
			if !strings.Contains(failed, " ") {
				verb = "was"
			}
			fmt.Fprintf(c.stdout, "; %s %s FAILED, never delivered", failed, verb)
		}
		fmt.Fprintln(c.stdout)
		printReleased(c.stdout, changes)
	}
	switch {
	case err != nil && len(opts.IDs) > 0 && errors.Is(err, status.ErrNotFound):
		return notDone{"purged", errors.Join(theirs, err)}
	case err != nil:
		return err
	case theirs != nil:
		return notDone{"purged", theirs}
	case len(changes) == 0:
		msg := fmt.Sprintf("nothing to purge: no DEAD events%s in %s", c.ofActing(), c.statusTable)
		if opts.OlderThan > 0 {
			msg = fmt.Sprintf("nothing to purge: no events%s in %s marked DEAD more than %s ago", c.ofActing(), c.statusTable, formatDuration(opts.OlderThan))
		}
		return errors.New(msg + withSpace(c.othersNote(ctx, s)))
	}
	if opts.Dead {
		if note := c.othersNote(ctx, s); note != "" {
			fmt.Fprintln(c.stderr, note)
		}
	}
	return nil
}
