package delivery

import (
	"context"
	"sync/atomic"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Inflight is one event on its way to Kafka, in one allocation: the record,
// room for its headers, and what the checkpoint needs once Kafka answers.
// The record's Context is the Inflight itself (it embeds the session's
// produce context, so cancellation works as for any record), which lets one
// callback serve every record without a closure per event.
type Inflight struct {
	context.Context
	// Record is the event's Kafka record, once Fill made it.
	Record     kgo.Record
	recHeaders [4]kgo.RecordHeader
	// Event is the event, kept for the status table.
	Event     decoder.Event
	evHeaders [4]decoder.Header
	pgTxn     *checkpoint.Txn // the PostgreSQL transaction it came in
	tracker   *checkpoint.Tracker
	size      int
	// Place is its place in the session's stream (set by the pipeline),
	// and whether it goes alone (see the at-least-once delivery).
	keyorder.Place
	// Failed: refused for good while an earlier record of its key waited
	// alone; it is parked after that one.
	Failed error
	copies *atomic.Int32 // the copies of a fanned-out event not yet acked; nil for one copy
}

// inflightSize is what an Inflight counts in flight besides its event's
// bytes.
const inflightSize = int(unsafe.Sizeof(Inflight{}))

// NewInflight returns a copy of ev to topic, on its way in the PostgreSQL
// transaction pgTxn that tracker counts (the caller counts it in, with
// Size); ctx is the session's produce context. copies, shared by the
// copies of a fanned-out event, counts those not yet acked (nil for a
// single copy). It stays within the compiler's inlining budget, so that
// the pipeline pays no call per event for it.
func NewInflight(ctx context.Context, tracker *checkpoint.Tracker, pgTxn *checkpoint.Txn, ev *decoder.Event, topic string,
	copies *atomic.Int32) (it *Inflight) {
	it = &Inflight{Context: ctx, pgTxn: pgTxn, tracker: tracker, Event: *ev, copies: copies}
	it.Event.Topic, it.Event.Headers = topic, append(it.evHeaders[:0], ev.Headers...)
	it.size = it.Event.Size() + inflightSize
	return it
}

// Fill makes the event's Kafka record, whose Context is it (placed on
// its partition by sink.Place when its table's partition column placed
// it: InflightOf finds it there).
func (it *Inflight) Fill() {
	sink.Fill(&it.Record, it.recHeaders[:0], &it.Event)
	it.Record.Context = it
	if it.Event.Placed {
		sink.Place(&it.Record, it.Event.Partition)
	}
}

// InflightOf is the Inflight whose record r is (Fill), nil for another
// record.
func InflightOf(r *kgo.Record) *Inflight {
	it, _ := sink.ContextOf(r).(*Inflight)
	return it
}

// Txn is the PostgreSQL transaction the event came in.
func (it *Inflight) Txn() *checkpoint.Txn { return it.pgTxn }

// Size is what the tracker counts of it in flight, in bytes.
func (it *Inflight) Size() int { return it.size }

// WrittenBack counts it out of flight once write-back settled its
// outcome: its row took it (or never will).
func (it *Inflight) WrittenBack() { it.tracker.Done(it.pgTxn, it.size) }

// Xid names the transaction that inserted its row (writeback.Done).
func (it *Inflight) Xid() uint32 { return it.pgTxn.Xid() }
