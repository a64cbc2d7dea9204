package relay

import (
	"context"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
)

// inflight is one event on its way to Kafka, in one allocation: the record,
// room for its headers, and what the checkpoint needs once Kafka answers.
// The record's Context is the inflight itself (it embeds the session's
// produce context, so cancellation works as for any record), which lets one
// callback serve every record without a closure per event.
type inflight struct {
	context.Context
	rec            kgo.Record
	recHeaders     [4]kgo.RecordHeader
	ev             decoder.Event // kept for the status table
	evHeaders      [4]decoder.Header
	pgTxn          *checkpoint.Txn // the PostgreSQL transaction it came in
	tracker        *checkpoint.Tracker
	size           int
	keyorder.Place               // its place in the session's stream, and whether it goes alone (see atLeastOnce.ack)
	failed         error         // refused for good while an earlier record of its key waited alone: parked after it
	copies         *atomic.Int32 // the copies of a fanned-out event not yet acked; nil for one copy
}

// WrittenBack counts it out of flight once write-back settled its
// outcome: its row took it (or never will).
func (it *inflight) WrittenBack() { it.tracker.Done(it.pgTxn, it.size) }
