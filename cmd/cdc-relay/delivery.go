package main

import (
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay"
	"github.com/cdc-relay/cdc-relay/sink"
)

// deliveryFlags choose between at-least-once and exactly-once delivery
// (run's --delivery and the flags of exactly-once).
type deliveryFlags struct {
	delivery string
	eo       relay.ExactlyOnce
}

const (
	atLeastOnce = "at-least-once"
	exactlyOnce = "exactly-once"
)

// deliveryFlagNames are the flags register adds, for run's usage.
var deliveryFlagNames = []string{"delivery", "transactional-id", "transaction-interval", "transaction-max-events", "transaction-timeout", "checkpoint-topic"}

func (d *deliveryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.delivery, "delivery", atLeastOnce,
		"delivery `mode`: at-least-once (a crash may send some events twice: consumers deduplicate by the \"id\" header), or exactly-once "+
			"(Kafka transactions: a consumer with isolation.level=read_committed sees each event once, about one Kafka commit later)")
	fs.StringVar(&d.eo.TransactionalID, "transactional-id", "",
		"exactly-once: the producer's transactional `id`; a relay started later with the same id fences this one at the broker (default cdc-relay.<slot>)")
	durationVar(fs, &d.eo.Interval, "transaction-interval", 10*time.Millisecond,
		"exactly-once: the least time from the start of one Kafka commit to the next; a transaction commits as soon as the one before it returned "+
			"and this much time has passed (0: at once), so consumers see an event about one commit after it; a longer interval makes fewer, larger transactions")
	fs.IntVar(&d.eo.MaxEvents, "transaction-max-events", 10000,
		"exactly-once: commit sooner, after the PostgreSQL transaction that brings a Kafka transaction to `n` records (a PostgreSQL transaction is never split)")
	durationVar(fs, &d.eo.TransactionTimeout, "transaction-timeout", sink.DefaultTransactionTimeout,
		"exactly-once: how long the broker lets a Kafka transaction stay open before it aborts it (at most the broker's transaction.max.timeout.ms); "+
			"a PostgreSQL transaction must be produced within it, and a broker outage longer than it costs a new session")
	fs.StringVar(&d.eo.CheckpointTopic, "checkpoint-topic", sink.DefaultCheckpointTopic,
		"exactly-once: the compacted `topic` that holds each slot's position, committed with its records; created on the first run")
}

// finish sets cfg's delivery from the flags fs parsed.
func (d *deliveryFlags) finish(fs *flag.FlagSet, cfg *relay.Config) error {
	switch d.delivery {
	case atLeastOnce:
		var set string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "delivery" && slices.Contains(deliveryFlagNames, f.Name) {
				set = f.Name
			}
		})
		if set != "" && setInEnvironment(fs, set) {
			return usageError{fmt.Sprintf("%s is set in the environment, and --%s applies to --delivery exactly-once only: unset %s", envName(set), set, envName(set))}
		}
		if set != "" {
			return usageError{fmt.Sprintf("--%s applies to --delivery exactly-once only", set)}
		}
		return nil
	case exactlyOnce:
	default:
		return usageError{fmt.Sprintf("--delivery %q: want %s or %s", d.delivery, atLeastOnce, exactlyOnce)}
	}
	switch {
	case d.eo.Interval < 0:
		return usageError{"--transaction-interval must be 0s or more (the default is 10ms)"}
	case d.eo.MaxEvents < 1:
		return usageError{"--transaction-max-events must be at least 1"}
	case d.eo.TransactionTimeout < time.Second || d.eo.TransactionTimeout < 2*d.eo.Interval:
		return usageError{"--transaction-timeout must be at least 1s and twice --transaction-interval"}
	}
	if err := decoder.ValidTopic(d.eo.CheckpointTopic); err != nil {
		return usageError{"--checkpoint-topic: " + err.Error()}
	}
	d.eo.Enabled = true
	cfg.ExactlyOnce = d.eo
	return nil
}
