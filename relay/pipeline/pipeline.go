package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/ratelog"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
)

// Options is what a session hands its pipeline besides the ledger.
type Options struct {
	// Decoder decodes the stream's pgoutput messages.
	Decoder *decoder.Decoder
	// Delivery is where each copy of an event goes: produced, or parked
	// beside the stream.
	Delivery delivery.Delivery
	// Relation, if set, judges each Relation message for an outbox table
	// (a new OID, columns that do not fit); an error ends the stream.
	Relation func(context.Context, decoder.Relation) error
	// SkipBelow, in exactly-once delivery, is the position the checkpoint
	// topic holds: transactions that end at or before it are in Kafka
	// already, and are skipped.
	SkipBelow pglogrepl.LSN
	// Replay, if set (exactly-once with write-back), is the window read
	// again below SkipBelow: its events are told to write-back again.
	Replay *ReplayWindow
	// ParkedBefore, if set, reports whether an event was parked when an
	// earlier Kafka transaction aborted (exactly-once): its row stands for
	// it, and the delivery leaves it out.
	ParkedBefore func(*delivery.Inflight) bool
	// Publishers are the session's publishers beside Kafka, which is the
	// pipeline's own ledger and Delivery (publisher 0): Publishers[i] is
	// publisher i+1.
	Publishers []Publisher
	// PublishersOf, if set, returns the publishers a copy of an event of
	// table (decoder.Event.Table) to topic goes to, as indexes (0: Kafka,
	// i: Publishers[i-1]), each once; nil or empty: none. Unset, every
	// copy goes to Kafka alone.
	PublishersOf func(table int, topic string) []int
}

// Publisher is one publisher's engine beside Kafka's: the ledger that
// settles and parks its copies (its status rows, its key order; the
// tracker, counters and write-back are the session's) and its delivery.
type Publisher struct {
	Ledger   *delivery.Ledger
	Delivery delivery.Delivery
}

// Pipeline handles one replication session's messages in stream order:
// transaction boundaries go to the tracker; each event is counted in
// flight, then handed to the delivery, produced, or parked in the status
// table when it can never be a Kafka record. The tracker lets the
// checkpoint pass an event once it is delivered or its status row is
// committed. Only the stream's goroutine calls it.
type Pipeline struct {
	l *delivery.Ledger
	// kafka is Kafka's engine (l and Options.Delivery), and pubs every
	// publisher's, Kafka's first; publishersOf, if set, says which a copy
	// goes to.
	kafka        Publisher
	pubs         []*Publisher
	publishersOf func(table int, topic string) []int
	dec          *decoder.Decoder
	// relation, if set, judges each Relation message for an outbox
	// table (a new OID, columns that do not fit); an error ends the stream.
	relation func(context.Context, decoder.Relation) error

	// skipBelow, in exactly-once delivery, is the position the checkpoint
	// topic holds: transactions that end at or before it are in Kafka
	// already, and are skipped (skipping says the one being read is).
	skipBelow pglogrepl.LSN
	skipping  bool
	// replay, if set (exactly-once with write-back), tells write-back of
	// the skipped events again: the restart may have come before their
	// rows were written (replay.go). Nil once the stream passed skipBelow.
	replay *ReplayWindow

	reading *checkpoint.Txn // the PostgreSQL transaction being read
	seq     uint64          // the events' sequence, in stream order
	// parkedBefore, if set, reports whether an event was parked when an
	// earlier Kafka transaction aborted (exactly-once): its row stands
	// for it, and the delivery leaves it out.
	parkedBefore func(*delivery.Inflight) bool
	// unrouted logs the events that matched no route, by table.
	unrouted *ratelog.Logger
	// unmapped logs the transactional messages of prefixes no message
	// source maps, by prefix (messages.go); nonTx the non-transactional
	// messages of a mapped prefix.
	unmapped, nonTx *ratelog.Logger
}

// New returns the pipeline of l's session, which decodes with o.Decoder
// and hands its events to o.Delivery.
func New(l *delivery.Ledger, o Options) *Pipeline {
	p := &Pipeline{l: l, dec: o.Decoder, relation: o.Relation, skipBelow: o.SkipBelow, replay: o.Replay,
		parkedBefore: o.ParkedBefore, unrouted: newUnroutedLog(l.Log), unmapped: newUnmappedLog(l.Log), nonTx: newNonTransactionalLog(l.Log)}
	p.kafka = Publisher{Ledger: l, Delivery: o.Delivery}
	p.pubs = []*Publisher{&p.kafka}
	for i := range o.Publishers {
		p.pubs = append(p.pubs, &o.Publishers[i])
	}
	if len(o.Publishers) > 0 {
		p.publishersOf = o.PublishersOf
	}
	return p
}

// Handle decodes one pgoutput message, which starts at start, and applies
// it; an error ends the stream.
func (p *Pipeline) Handle(start pglogrepl.LSN, data []byte) error {
	msg, err := p.dec.Decode(data)
	if err != nil {
		return fmt.Errorf("decode pgoutput message at %s: %w", start, err)
	}
	return p.apply(start, msg)
}

// Commit makes what the delivery produced visible to consumers, once the
// stream stopped between transactions, and returns why it could not.
// Every publisher's delivery commits, Kafka's first.
func (p *Pipeline) Commit(ctx context.Context) error {
	for _, pub := range p.pubs {
		if err := pub.Delivery.Commit(ctx); err != nil {
			return err
		}
	}
	return nil
}

// apply acts on one decoded message.
func (p *Pipeline) apply(start pglogrepl.LSN, msg decoder.Message) error {
	switch msg.Kind {
	case decoder.KindBegin:
		p.reading = p.l.Tracker.Begin(msg.CommitTime)
		p.reading.SetXid(msg.Xid)
		p.skipping = pglogrepl.LSN(msg.CommitLSN) < p.skipBelow
		if p.replay != nil && !p.skipping {
			p.replayDone()
		}
	case decoder.KindCommit:
		if p.reading == nil {
			return fmt.Errorf("commit at %s without a begin", start)
		}
		p.l.Tracker.Commit(p.reading, pglogrepl.LSN(msg.EndLSN))
		for _, pub := range p.pubs {
			pub.Delivery.EndTxn(p.reading, pglogrepl.LSN(msg.EndLSN))
		}
		p.reading = nil
	case decoder.KindRelation:
		if p.relation != nil {
			return p.relation(p.l.ProduceCtx, msg.Relation)
		}
	case decoder.KindEvent:
		if p.reading == nil {
			return fmt.Errorf("insert at %s outside a transaction", start)
		}
		if p.skipping {
			// In Kafka already, committed by an earlier session.
			if p.replay != nil {
				p.replayed(&msg)
			}
			return nil
		}
		p.l.Count.Read.Add(1)
		p.route(&msg)
	case decoder.KindUnmappedMessage:
		if !p.skipping {
			p.ignoreUnmapped(msg.Prefix)
		}
	case decoder.KindNonTransactionalMessage:
		p.ignoreNonTransactional(msg.Prefix)
	}
	return nil
}

// route produces one copy of the event for each topic it goes to. A
// routed row whole but for its timestamp is routed too, so that each
// route's copy is parked FAILED with its topic for the poller to send.
func (p *Pipeline) route(msg *decoder.Message) {
	var me *decoder.MappingError
	tsOnly := errors.As(msg.Poison, &me) && me.Timestamp
	single := !msg.Routed || msg.Poison != nil && !tsOnly
	if p.publishersOf != nil {
		p.routeToPublishers(msg, single)
		return
	}
	if single {
		p.produce(msg, msg.Event.Topic, nil, &p.kafka)
		return
	}
	switch len(msg.Routes) {
	case 0:
		p.noRoute(&msg.Event)
	case 1:
		p.produce(msg, msg.Routes[0], nil, &p.kafka)
	default:
		// One copy per route: the tracker counts each, so the
		// transaction is confirmed once every copy is acked.
		copies := new(atomic.Int32)
		copies.Store(int32(len(msg.Routes)))
		for _, topic := range msg.Routes {
			p.produce(msg, topic, copies, &p.kafka)
		}
	}
}

// routeToPublishers produces one copy of the event for each topic it goes
// to (its own alone if single) and each of that topic's publishers.
func (p *Pipeline) routeToPublishers(msg *decoder.Message, single bool) {
	topics := msg.Routes
	if single {
		topics = []string{msg.Event.Topic}
	}
	n := 0
	for _, topic := range topics {
		n += len(p.publishersOf(msg.Event.Table, topic))
	}
	if n == 0 && msg.Poison != nil {
		// A row that cannot become its record is never dropped: parked
		// for Kafka when no publisher is known for its topic.
		p.produce(msg, msg.Event.Topic, nil, &p.kafka)
		return
	}
	if n == 0 {
		p.noRoute(&msg.Event)
		return
	}
	var copies *atomic.Int32
	if n > 1 {
		copies = new(atomic.Int32)
		copies.Store(int32(n))
	}
	for _, topic := range topics {
		for _, i := range p.publishersOf(msg.Event.Table, topic) {
			p.produce(msg, topic, copies, p.pubs[i])
		}
	}
}

// produce counts one copy of the event in flight and produces it to topic,
// or parks it when it is poison. copies, shared by the copies of a
// fanned-out event, counts those not yet acked (nil for a single copy).
func (p *Pipeline) produce(msg *decoder.Message, topic string, copies *atomic.Int32, pub *Publisher) {
	l := pub.Ledger
	it := delivery.NewInflight(l.ProduceCtx, l.Tracker, p.reading, &msg.Event, topic, copies)
	p.seq++
	it.Seq = p.seq
	l.Tracker.Add(it.Txn(), it.Size())
	if msg.Poison != nil {
		p.poison(it, msg.Poison, pub)
		return
	}
	if p.held(it, pub) {
		return
	}
	it.Fill()
	pub.Delivery.Produce(it)
}

// poison parks it, an event that cannot become its record (err), as
// such: at once, unless earlier events of its key wait in at-least-once's
// alone queue (Check's Alone: records produced again, or events waiting
// for the poller's drain of the key's held rows) or are still in its
// producer, where they may yet fail and be parked (MayGoAlone, as for a
// record the producer refuses); then it waits in the alone queue, behind
// them, to be parked once they are settled, so that its row comes after
// theirs. (Exactly-once delivery has neither: its poison is parked at
// once.)
func (p *Pipeline) poison(it *delivery.Inflight, err error, pub *Publisher) {
	l := pub.Ledger
	if l.Order.OrdersKeys() && l.Order.OrderKey(&it.Event) != nil {
		v := keyorder.Pass
		if l.Order.Holding() {
			v, _ = l.Order.Check(&it.Event, it.Seq)
		}
		switch {
		case v == keyorder.Alone: // Check counted it in the key's hold
		case !l.Order.MayGoAlone(&it.Event):
			l.Order.HoldAlone(&it.Event, it.Seq)
		default:
			pub.Delivery.Park(it, l.ParkInOrder(it, l.PoisonAs(err)))
			return
		}
		it.Alone, it.Failed = true, delivery.Poisoned(err)
		pub.Delivery.Produce(it)
		return
	}
	pub.Delivery.Park(it, l.ParkInOrder(it, l.PoisonAs(err)))
}

// held parks it behind its held key or its paused topic, and reports
// whether it did; an event to be produced alone behind its key's record
// is marked so (the hold counts it already).
func (p *Pipeline) held(it *delivery.Inflight, pub *Publisher) bool {
	l := pub.Ledger
	if !l.Order.Holding() {
		return false
	}
	if p.parkedBefore != nil && p.parkedBefore(it) {
		l.Order.MetParked(&it.Event, keyorder.KeyOf(&it.Event), it.Seq)
		return false
	}
	switch v, head := l.Order.Check(&it.Event, it.Seq); v {
	case keyorder.Paused:
		pub.Delivery.Park(it, l.ParkInOrder(it, l.PausedAs()))
		return true
	case keyorder.Waiting:
		pub.Delivery.Park(it, l.ParkInOrder(it, l.WaitingAs(it, head)))
		return true
	case keyorder.Alone:
		it.Alone = true
	}
	return false
}

// newUnroutedLog returns the log of events that matched no route, by
// table: the first at once, with its id, then at most one line per table
// per minute with how many more there were. The pipeline counts those
// with Hold, so that an event that goes nowhere costs no log line built.
func newUnroutedLog(log *slog.Logger) *ratelog.Logger {
	return ratelog.New(log, ratelog.Config{Every: time.Minute, Summary: "more events matched no route and were sent nowhere",
		KeyAttr: "table", CountAttr: "events"})
}

// noRoute counts an event that matched none of its table's routes: it goes
// nowhere, by design, and is logged at most once a minute per table, the
// others counted.
func (p *Pipeline) noRoute(ev *decoder.Event) {
	table := p.l.TableName(ev.Table)
	p.l.Metrics.EventsUnrouted.WithLabelValues(table).Inc()
	if !p.unrouted.Hold(table, slog.LevelInfo) { // most are: nothing to build
		p.unrouted.Log(table, slog.LevelInfo, "event matched no route and was sent nowhere", "table", table, "id", string(ev.ID))
	}
}
