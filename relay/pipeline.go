package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"unsafe"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/ratelog"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/sink"
)

// pipeline handles one replication session's messages in stream order:
// transaction boundaries go to the tracker; each event is counted in flight,
// then handed to the delivery, produced, or parked in the status table when
// it can never be a Kafka record. The tracker lets the checkpoint pass an
// event once it is delivered or its status row is committed.
type pipeline struct {
	*ledger
	delivery delivery
	dec      *decoder.Decoder
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
	replay *replayWindow

	reading *checkpoint.Txn // the PostgreSQL transaction being read
	seq     uint64          // the events' sequence, in stream order
	// parkedBefore, if set, reports whether an event was parked when an
	// earlier Kafka transaction aborted (exactly-once): its row stands
	// for it, and the delivery leaves it out.
	parkedBefore func(*inflight) bool
	// unrouted logs the events that matched no route, by table.
	unrouted *ratelog.Logger
	// unmapped logs the transactional messages of prefixes no message
	// source maps, by prefix (messages.go); nonTx the non-transactional
	// messages of a mapped prefix.
	unmapped, nonTx *ratelog.Logger
}

// newPipeline returns the pipeline of l's session, which decodes with dec
// and hands its events to d.
func newPipeline(l *ledger, dec *decoder.Decoder, d delivery) *pipeline {
	return &pipeline{ledger: l, dec: dec, delivery: d, unrouted: newUnroutedLog(l.log), unmapped: newUnmappedLog(l.log),
		nonTx: newNonTransactionalLog(l.log)}
}

// handle decodes one pgoutput message and applies it.
func (p *pipeline) handle(start pglogrepl.LSN, data []byte) error {
	msg, err := p.dec.Decode(data)
	if err != nil {
		return fmt.Errorf("decode pgoutput message at %s: %w", start, err)
	}
	return p.apply(start, msg)
}

// apply acts on one decoded message.
func (p *pipeline) apply(start pglogrepl.LSN, msg decoder.Message) error {
	switch msg.Kind {
	case decoder.KindBegin:
		p.reading = p.tracker.Begin(msg.CommitTime)
		p.skipping = pglogrepl.LSN(msg.CommitLSN) < p.skipBelow
		if p.replay != nil && !p.skipping {
			p.replayDone()
		}
	case decoder.KindCommit:
		if p.reading == nil {
			return fmt.Errorf("commit at %s without a begin", start)
		}
		p.tracker.Commit(p.reading, pglogrepl.LSN(msg.EndLSN))
		p.delivery.endTxn(p.reading, pglogrepl.LSN(msg.EndLSN))
		p.reading = nil
	case decoder.KindRelation:
		if p.relation != nil {
			return p.relation(p.produceCtx, msg.Relation)
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
		p.count.read.Add(1)
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
func (p *pipeline) route(msg *decoder.Message) {
	var me *decoder.MappingError
	tsOnly := errors.As(msg.Poison, &me) && me.Timestamp
	if !msg.Routed || msg.Poison != nil && !tsOnly {
		p.produce(msg, msg.Event.Topic, nil)
		return
	}
	switch len(msg.Routes) {
	case 0:
		p.noRoute(&msg.Event)
	case 1:
		p.produce(msg, msg.Routes[0], nil)
	default:
		// One copy per route: the tracker counts each, so the
		// transaction is confirmed once every copy is acked.
		copies := new(atomic.Int32)
		copies.Store(int32(len(msg.Routes)))
		for _, topic := range msg.Routes {
			p.produce(msg, topic, copies)
		}
	}
}

// produce counts one copy of the event in flight and produces it to topic,
// or parks it when it is poison. copies, shared by the copies of a
// fanned-out event, counts those not yet acked (nil for a single copy).
func (p *pipeline) produce(msg *decoder.Message, topic string, copies *atomic.Int32) {
	it := &inflight{Context: p.produceCtx, pgTxn: p.reading, tracker: p.tracker, ev: msg.Event, copies: copies}
	it.ev.Topic = topic
	it.ev.Headers = append(it.evHeaders[:0], msg.Event.Headers...)
	it.size = it.ev.Size() + int(unsafe.Sizeof(inflight{}))
	p.seq++
	it.Seq = p.seq
	p.tracker.Add(it.pgTxn, it.size)
	if msg.Poison != nil {
		p.delivery.park(it, p.parkInOrder(it, poisonAs(p.failures, msg.Poison)))
		return
	}
	if p.held(it) {
		return
	}
	sink.Fill(&it.rec, it.recHeaders[:0], &it.ev)
	it.rec.Context = it
	p.delivery.produce(it)
}

// held parks it behind its held key or its paused topic, and reports
// whether it did; an event to be produced alone behind its key's record
// is marked so (the hold counts it already).
func (p *pipeline) held(it *inflight) bool {
	if !p.order.Holding() {
		return false
	}
	if p.parkedBefore != nil && p.parkedBefore(it) {
		p.order.MetParked(&it.ev, keyOf(it), it.Seq)
		return false
	}
	switch v, head := p.order.Check(&it.ev, it.Seq); v {
	case keyorder.Paused:
		p.delivery.park(it, p.parkInOrder(it, p.pausedAs()))
		return true
	case keyorder.Waiting:
		p.delivery.park(it, p.parkInOrder(it, p.waitingAs(it, head)))
		return true
	case keyorder.Alone:
		it.Alone = true
	}
	return false
}

// noRoute counts an event that matched none of its table's routes: it goes
// nowhere, by design, and is logged at most once a minute per table, the
// others counted.
func (p *pipeline) noRoute(ev *decoder.Event) {
	table := p.tableName(ev.Table)
	p.metrics.EventsUnrouted.WithLabelValues(table).Inc()
	if !p.unrouted.Hold(table, slog.LevelInfo) { // most are: nothing to build
		p.unrouted.Log(table, slog.LevelInfo, "event matched no route and was sent nowhere", "table", table, "id", string(ev.ID))
	}
}
