package main

// The publisher of `cdc-relay failed` and `pause|resume --topic`: each
// parked event, and each topic's pause, is one publisher's, Kafka's
// (status.KafkaPublisher) or a webhook publisher's of the config file.
// list and show read every publisher's rows unless --publisher names one;
// retry, skip, purge, pause and resume act on one publisher's, Kafka's
// unless --publisher names another, and say whose an id is that is not.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/internal/suggest"
	"github.com/cdc-relay/cdc-relay/status"
)

// registerPublisher registers --publisher in fs, described by usage
// (which names its value `publisher`): with every, the flag narrows a
// read of every publisher's rows (list, show; empty by default), else it
// names the one publisher a command acts on (kafka by default).
func registerPublisher(fs *flag.FlagSet, publisher *string, every bool, usage string) {
	def := status.KafkaPublisher
	if every {
		def = ""
	}
	fs.StringVar(publisher, "publisher", def, usage)
}

// checkPublisherName checks a --publisher given on the command line: a
// name status.ValidPublisher takes and, with the config file f (read
// from path), kafka or a publisher the file defines. The error says
// which names the file has, the nearest first.
func checkPublisherName(name string, f *config.File, path string) error {
	var known []string
	if f != nil {
		known = append(known, status.KafkaPublisher)
		for _, p := range f.Publishers {
			known = append(known, p.Name)
		}
	}
	if name == "" {
		return errors.New("--publisher is empty: name a publisher (kafka, or a webhook publisher's name), or leave the flag out")
	}
	err := status.ValidPublisher(name)
	if err == nil && (f == nil || slices.Contains(known, name)) {
		return nil
	}
	msg := fmt.Sprintf("--publisher: %v", err)
	if err == nil {
		msg = fmt.Sprintf("--publisher %q: %s defines no such publisher", name, path)
	}
	switch s := suggest.Closest(strings.ToLower(name), known); {
	case s != "":
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	case f != nil:
		msg += fmt.Sprintf(" (its publishers: %s)", strings.Join(known, ", "))
	}
	if err == nil {
		msg += "; name one of its publishers, or leave --config out for a publisher the file no longer defines"
	}
	return errors.New(msg)
}

// publisherName names a publisher in a sentence: "Kafka", or "the webhook
// publisher partner" (webhooks are the one kind beside Kafka).
func publisherName(publisher string) string {
	if publisher == status.KafkaPublisher {
		return "Kafka"
	}
	return "the webhook publisher " + publisher
}

// otherPublisherError says that an id a command was given is a row of
// another publisher than the one it acts on, and what to give instead.
type otherPublisherError struct {
	id        int64
	publisher string // the row's
}

func (e otherPublisherError) Error() string {
	if e.publisher == status.KafkaPublisher {
		return fmt.Sprintf("id %d is Kafka's: leave --publisher out (or give --publisher kafka)", e.id)
	}
	return fmt.Sprintf("id %d is %s's: add --publisher %s", e.id, publisherName(e.publisher), e.publisher)
}

// ownIDs splits ids into those the store s may act on (its publisher's
// rows, and the ids not in the table, which s reports) and the others,
// each an otherPublisherError, joined in theirs (nil when none is).
func ownIDs(ctx context.Context, s *status.Store, ids []int64) (mine []int64, theirs, err error) {
	owners, err := status.PublishersOf(ctx, s, ids)
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, id := range ids {
		if p, ok := owners[id]; ok && p != s.Publisher() {
			errs = append(errs, otherPublisherError{id: id, publisher: p})
			continue
		}
		mine = append(mine, id)
	}
	return mine, errors.Join(errs...), nil
}

// isOtherPublisher reports whether err is, or joins, an
// otherPublisherError.
func isOtherPublisher(err error) bool {
	var o otherPublisherError
	return errors.As(err, &o)
}

// acting is the publisher whose store c runs its subcommand on: its
// --publisher, else Kafka's (list and show without --publisher read
// every publisher's rows, through each one's store: storeOf).
func (c *FailedCommand) acting() string {
	if c.publisher == "" {
		return status.KafkaPublisher
	}
	return c.publisher
}

// ofActing is " of the webhook publisher partner" when c acts on another
// publisher than Kafka, for its output; "" for Kafka's, whose output is
// as before publishers.
func (c *FailedCommand) ofActing() string {
	if c.acting() == status.KafkaPublisher {
		return ""
	}
	return " of " + publisherName(c.acting())
}

// othersNote says, after retry --all or purge --dead, that it acted on
// s's publisher's events only when the table holds other publishers'
// rows too, and how to act on theirs; "" when it holds none.
func (c *FailedCommand) othersNote(ctx context.Context, s *status.Store) string {
	names, err := status.TablePublishers(ctx, s)
	if err != nil {
		return ""
	}
	names = slices.DeleteFunc(names, func(p string) bool { return p == s.Publisher() })
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("(%s's events only; %s holds events of %s too: --publisher NAME acts on theirs)",
		publisherName(s.Publisher()), c.statusTable, strings.Join(names, ", "))
}

// publisherHint says, when a list of --publisher's rows found none, which
// publishers the table has rows of, the nearest name first; "" when it
// has rows of that one.
func (c *FailedCommand) publisherHint(ctx context.Context, s *status.Store) string {
	names, err := status.TablePublishers(ctx, s)
	if err != nil || len(names) == 0 || slices.Contains(names, c.publisher) {
		return ""
	}
	if near := suggest.Closest(c.publisher, names); near != "" {
		return fmt.Sprintf(" (did you mean --publisher %s?)", near)
	}
	return fmt.Sprintf(" (it holds events of %s)", strings.Join(names, ", "))
}

// withSpace is " "+s, or "" for an empty s.
func withSpace(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}
