package relay

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/tick"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/poller"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/delivery/atleastonce"
	"github.com/cdc-relay/cdc-relay/relay/delivery/lanes"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/relay/pipeline"
	"github.com/cdc-relay/cdc-relay/status"
	"github.com/cdc-relay/cdc-relay/webhook"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// This file is the relay's publishers beside Kafka (DESIGN.md's
// "Publishers"): each webhook publisher is an engine of its own, its
// status rows and pauses (a status store of its own), its key order, its
// at-least-once delivery over its lanes, its poller, sharing the
// session's tracker, so that the position passes an event once every copy
// of every publisher is delivered or parked.

// Publisher is a publisher beside Kafka: a webhook receiver that tables
// and routes name (outbox.Table.Publishers, RoutePublishers).
type Publisher struct {
	// Name is the name tables and routes give it; never
	// outbox.KafkaPublisher.
	Name string
	// Webhook is its receiver's settings, valid (webhook.Config.Validate).
	Webhook webhook.Config
	// Lanes is how many of its requests may be under way at once (8).
	Lanes int
}

// checkPublishers checks c's publishers: named once each, valid, and
// every publisher a table or route names is Kafka or one of them. Webhooks
// are at least once: exactly-once delivery refuses them.
func (c Config) checkPublishers() error {
	seen := map[string]bool{outbox.KafkaPublisher: true}
	for _, p := range c.Publishers {
		if err := status.ValidPublisher(p.Name); err != nil || p.Name == outbox.KafkaPublisher {
			return fmt.Errorf("publisher %q: not a publisher's name: lower-case letters, digits, _ and -, starting with a letter, and not kafka", p.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("publisher %q is defined twice", p.Name)
		}
		seen[p.Name] = true
		if err := p.Webhook.Validate(); err != nil {
			return fmt.Errorf("publisher %s: %w", p.Name, err)
		}
	}
	for _, t := range c.Tables {
		for _, name := range t.AllPublishers() {
			if !seen[name] {
				return fmt.Errorf("table %s routes events to publisher %q, which is not defined: define it under publishers:, or route to kafka", t.Name(), name)
			}
			if name != outbox.KafkaPublisher && c.ExactlyOnce.Enabled {
				return fmt.Errorf("table %s routes events to the webhook publisher %q, and webhooks are at-least-once only: "+
					"use at-least-once delivery (leave --delivery out), or route the table to kafka alone", t.Name(), name)
			}
		}
	}
	return nil
}

// publishersOf returns the pipeline's PublishersOf for c's tables, nil
// when no table routes to a publisher beside Kafka: for each table, the
// indexes (0 Kafka, i c.Publishers[i-1]) of the publishers of each of its
// topics (a routed table's: the union of the routes that name it; any
// other's: the table's own). Message sources go to Kafka alone.
func (c Config) publishersOf() func(table int, topic string) []int {
	if len(c.Publishers) == 0 {
		return nil
	}
	index := map[string]int{outbox.KafkaPublisher: 0}
	for i, p := range c.Publishers {
		index[p.Name] = i + 1
	}
	indexes := func(names []string) []int {
		out := make([]int, 0, len(names))
		for _, n := range names {
			if i, ok := index[n]; ok && !slices.Contains(out, i) {
				out = append(out, i)
			}
		}
		return out
	}
	kafkaOnly := []int{0}
	byTable := make([]func(topic string) []int, len(c.Tables))
	for ti, t := range c.Tables {
		if len(t.Mapping.Routes) == 0 {
			all := indexes(t.AllPublishers())
			byTable[ti] = func(string) []int { return all }
			continue
		}
		byTopic := map[string][]int{}
		for ri, r := range t.Mapping.Routes {
			for _, i := range indexes(t.RoutePublishersOf(ri)) {
				if !slices.Contains(byTopic[r.Topic], i) {
					byTopic[r.Topic] = append(byTopic[r.Topic], i)
				}
			}
		}
		all := indexes(t.AllPublishers())
		byTable[ti] = func(topic string) []int {
			if pubs, ok := byTopic[topic]; ok {
				return pubs
			}
			return all // a poison row's, whose topic no route gave
		}
	}
	return func(table int, topic string) []int {
		if table < len(byTable) {
			return byTable[table](topic)
		}
		return kafkaOnly
	}
}

// publisherEngine is what outlives a session of a publisher beside Kafka:
// its receiver's sender, its status store, and its metrics, which each
// session's lanes feed.
type publisherEngine struct {
	Publisher
	sender  *webhook.Sender
	store   *status.Store
	metrics *metrics.WebhookPublisher
}

// startPublishers makes each publisher's sender and status store, for the
// relay's life: a secret or a TLS file that cannot be read is fatal.
func (rn *runner) startPublishers(opts []status.Option) error {
	for _, p := range rn.cfg.Publishers {
		secret, err := p.Webhook.ReadSecret()
		if err != nil {
			return fatal.Error{Err: fmt.Errorf("publisher %s: %w", p.Name, err)}
		}
		sender, err := webhook.New(p.Webhook, secret, p.RequestsAtOnce())
		if err != nil {
			return fatal.Error{Err: fmt.Errorf("publisher %s: %w", p.Name, err)}
		}
		store := status.NewStore(rn.pool, rn.cfg.StatusSchema, rn.cfg.StatusTable,
			append(slices.Clone(opts), pausedByProgress(rn.progress, p.Name), status.Publisher(p.Name))...)
		rn.publishers = append(rn.publishers, &publisherEngine{Publisher: p, sender: sender, store: store, metrics: rn.metrics.Webhook(p.Name)})
	}
	return nil
}

// RequestsAtOnce is how many of p's requests may be under way at once:
// p.Lanes, or its default.
func (p Publisher) RequestsAtOnce() int {
	if p.Lanes > 0 {
		return p.Lanes
	}
	return 8
}

// publisherSession is one publisher's engine in a session.
type publisherSession struct {
	*publisherEngine
	order    *keyorder.Order
	ledger   *delivery.Ledger
	producer *lanes.Producer
}

// startPublisherSessions makes, for each publisher beside Kafka, its key
// order (rebuilt from its rows), its ledger beside l, and its delivery
// over its lanes, which feed its metrics and close when the session ends;
// it returns them as the pipeline's Publishers.
func (s *session) startPublisherSessions(ctx context.Context, l *delivery.Ledger) ([]pipeline.Publisher, error) {
	var out []pipeline.Publisher
	for _, e := range s.publishers {
		o, err := s.publisherOrder(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("publisher %s: %w", e.Name, err)
		}
		ps := &publisherSession{publisherEngine: e, order: o, ledger: l.ForPublisher(e.store, o)}
		queued, queuedBytes := s.cfg.webhookQueue(len(s.publishers))
		ps.producer = lanes.New(lanes.Webhook(e.sender), lanes.Config{
			Publisher: e.Name, Lanes: e.RequestsAtOnce(), Batch: e.Webhook.BatchSize, Log: s.log, Observer: e.metrics,
			MaxQueued: queued, MaxQueuedBytes: queuedBytes,
			OrderKey: func(r *kgo.Record) []byte { return o.OrderKey(eventOf(r)) },
			Held:     heldBy(o),
		})
		s.onEnd(func() {
			s.cancelProduce()
			ps.producer.Close()
		})
		s.pubSessions = append(s.pubSessions, ps)
		out = append(out, pipeline.Publisher{Ledger: ps.ledger, Delivery: atleastonce.New(ps.ledger, ps.producer)})
	}
	return out, nil
}

// webhookQueue is how many records, and bytes, each of n webhook
// publishers' lanes may hold waiting (lanes.Config.MaxQueued,
// MaxQueuedBytes): together, half the in-flight limits, so that a slow
// receiver's backlog is parked before it holds Kafka's deliveries behind
// the limits.
func (c Config) webhookQueue(n int) (events int, bytes int64) {
	share := int64(2 * max(n, 1))
	return int(max(1, c.Limits.Events/share)), max(1, c.Limits.Bytes/share)
}

// publisherOrder is e's key order for a session, as rebuildOrder makes
// Kafka's: the keys with held rows, those of its reload rows (adopted at
// the switch-over for e, each held until e's poller delivers it) and the
// paused topics, of e's rows only.
func (s *session) publisherOrder(ctx context.Context, e *publisherEngine) (*keyorder.Order, error) {
	o := keyorder.New(s.cfg.Ordering != OrderingNone, s.log)
	switch topics := s.cfg.topicOrdered(); {
	case s.cfg.Ordering == OrderingTopic:
		o = keyorder.NewByTopic(s.log)
	case len(topics) > 0:
		o = keyorder.NewByTopics(s.log, topics)
	}
	o.SetDrainCap(0, 0) // its drains go at the receiver's pace: behind one, its events are parked
	paused, err := e.store.PausedTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the paused topics: %w", err)
	}
	if err := o.RebuildFrom(func(f func(status.Key)) error { return e.store.EachHeldKey(ctx, f) }, paused, nil); err != nil {
		return nil, fmt.Errorf("read the keys whose events wait behind a parked one: %w", err)
	}
	if o.OrdersKeys() {
		reloads := 0
		if err := e.store.ReloadKeys(ctx, func(topic string, key []byte) { reloads++; o.HoldReload(topic, key) }); err != nil {
			return nil, err
		}
		if reloads > 0 {
			s.startLog().Info("holding the events of keys behind events adopted or reset, until they are sent", "publisher", e.Name, "events", reloads)
		}
	}
	return o, nil
}

// startPublisherPollers starts each publisher's poller beside the stream,
// and the refresh of its paused topics, until ctx ends.
func (s *session) startPublisherPollers(ctx context.Context, side *sync.WaitGroup) {
	for _, ps := range s.pubSessions {
		wake := make(chan struct{}, 1)
		side.Go(func() { poller.New(ps.store, ps.producer, s.publisherPollerConfig(ctx, ps, wake)).Run(ctx) })
		side.Go(func() {
			tick.Every(ctx, s.cfg.StatusInterval, func(ctx context.Context) bool {
				if topics, err := ps.store.PausedTopics(ctx); err == nil {
					ps.order.SetPaused(topics)
				} else if ctx.Err() == nil {
					s.sayRetried(ctx, "could not read a publisher's paused topics; trying again", err, "publisher", ps.Name)
				}
				return true
			})
		})
	}
}

// publisherPollerConfig is ps's poller's configuration: Kafka's, with
// ps's store, key order and lanes.
func (s *session) publisherPollerConfig(ctx context.Context, ps *publisherSession, wake chan struct{}) poller.Config {
	pc := s.cfg.Poller
	pc.Wake = wake
	if pc.Logger == nil {
		pc.Logger = s.log
	}
	pc.Logger = pc.Logger.With("publisher", ps.Name)
	if pc.MaxBytes == 0 {
		pc.MaxBytes = s.cfg.claimBytes()
	}
	pc.Hold = s.pause.WaitResumed
	pc.Load = s.loader.LoadMany
	pc.ByTopic, pc.TopicOrdered = s.cfg.Ordering == OrderingTopic, s.cfg.topicOrdered()
	pc.PausedTopics = ps.store.PausedTopics
	pc.NextDue = ps.store.NextDue
	pc.Claimed = func(keys []status.Key) func() {
		ps.order.HoldRows(keys)
		end := ps.order.BeginDrain(keys)
		return func() {
			if end() {
				wakeOnce(wake) // a drain carried over to the next claim
			}
		}
	}
	pc.Delivered = func(keys []status.Key) {
		if err := ps.order.ReleaseDelivered(ctx, ps.store, keys); err != nil && ctx.Err() == nil {
			s.sayRetried(ctx, "could not release the keys of delivered events; their next events wait behind them", err, "publisher", ps.Name)
		}
	}
	pc.CheckRecord = ps.producer.Refuses
	pc.CheckTopic, _ = s.cfg.SourceTopicCheck()
	pc.Sends = s.cfg.sendsOf(ps.Name)
	pc.DeadLetterTopic = ""
	return pc
}

// sendsOf is the poller's Sends of publisher (poller.Config.Sends): whether
// it sends the events of an outbox table (by the status table's
// source_table) to topic, as the table's routes say; nil when Kafka is
// the only publisher. A source that is not one of the tables (a message
// source, which only Kafka's rows hold; a table no longer relayed) is
// sent: its rows are never settled unsent.
func (c Config) sendsOf(publisher string) func(source, topic string) bool {
	if len(c.Publishers) == 0 {
		return nil
	}
	byName := make(map[string]outbox.Table, len(c.Tables))
	for _, t := range c.Tables {
		byName[t.Name()] = t
	}
	return func(source, topic string) bool {
		t, ok := byName[source]
		if !ok {
			return true // a message source (Kafka's alone), or a table no longer relayed: not settled unsent
		}
		return t.SendsTo(topic, publisher)
	}
}

// publisherStoreOptions are the status-store options of a publisher
// beside Kafka: Kafka's (the source tables, write-back through rows, the
// pause table, the order), without a team's progress table's pauses,
// which are the publisher's own (startPublishers adds them). A table
// that writes back and sends to several publishers has its rows say what
// every publisher's copy allows (status.SharedWriteBack), in every
// publisher's store alike.
func publisherStoreOptions(cfg Config, rows *writeback.Rows) []status.Option {
	opts := []status.Option{status.SourceTables(cfg.SourceNames()...), status.WriteBack(rows), status.SharedWriteBack(outbox.SharedWriteBack(cfg.Tables)...),
		status.Pauses(cfg.CheckpointSchema, migrations.PauseTable, cfg.Slot), status.ClaimBytes(cfg.claimBytes())}
	switch cfg.Ordering {
	case OrderingNone:
		opts = append(opts, status.Unordered())
	case OrderingTopic:
		opts = append(opts, status.ByTopic())
	default:
		opts = append(opts, status.ByTopics(cfg.topicOrdered()...))
	}
	return opts
}

// heldBy is a publisher's lanes' Held: whether r's key is held behind a
// parked event, or behind an earlier event waiting to be sent again alone
// (at-least-once's alone queue), which r must not overtake.
func heldBy(o *keyorder.Order) func(r *kgo.Record) bool {
	return func(r *kgo.Record) bool {
		ev := eventOf(r)
		held, _ := o.ParkedHeld(ev)
		return held || o.AloneHeld(ev)
	}
}

// eventOf is the event of r: the stream's (its Inflight), or, for a
// record of the poller, one of its topic and key.
func eventOf(r *kgo.Record) *decoder.Event {
	if it := delivery.InflightOf(r); it != nil {
		return &it.Event
	}
	return &decoder.Event{Topic: r.Topic, Key: r.Key}
}
