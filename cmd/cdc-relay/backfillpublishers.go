package main

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/cdc-relay/cdc-relay/backfill"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/delivery/lanes"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/webhook"
)

// backfillPublishers sets c.opts's publishers beside Kafka: each webhook
// publisher the backfilled table t sends to gets the rows of its topics,
// through lanes of its own (its receiver's settings and concurrency, as
// the relay's), and Kafka the rows of its topics. It returns what closes
// them. A table only Kafka sends is left as it is.
func (c *BackfillCommand) backfillPublishers(t outbox.Table, log *slog.Logger) (closeAll func(), err error) {
	var closers []func()
	closeAll = func() {
		for _, f := range closers {
			f()
		}
	}
	for _, p := range c.cfg.Publishers {
		if !slices.Contains(t.AllPublishers(), p.Name) {
			continue
		}
		secret, err := p.Webhook.ReadSecret()
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("publisher %s: %w", p.Name, err)
		}
		sender, err := webhook.New(p.Webhook, secret, p.RequestsAtOnce())
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("publisher %s: %w", p.Name, err)
		}
		prod := lanes.New(lanes.Webhook(sender), lanes.Config{Publisher: p.Name, Lanes: p.RequestsAtOnce(), Batch: p.Webhook.BatchSize, Log: log})
		closers = append(closers, prod.Close)
		name := p.Name
		c.opts.Publishers = append(c.opts.Publishers, backfill.Publisher{Name: name, Producer: prod, Again: takenLater,
			Sends: func(topic string) bool { return t.SendsTo(topic, name) }})
	}
	if len(c.opts.Publishers) > 0 {
		c.opts.KafkaSends = func(topic string) bool { return t.SendsTo(topic, outbox.KafkaPublisher) }
	}
	return closeAll, nil
}

// takenLater reports whether a webhook's record that got err may be taken
// later: the receiver failed, or the record was not sent behind an
// earlier one of its key that failed.
func takenLater(err error) bool {
	return !sink.Permanent(err) || errors.Is(err, delivery.ErrNotSent)
}
