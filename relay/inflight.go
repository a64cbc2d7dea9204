package relay

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
)

// inflight is one event on its way to Kafka, in one allocation: the record,
// room for its headers, and what the checkpoint needs once Kafka answers.
// The record's Context is the inflight itself (it embeds the session's
// produce context, so cancellation works as for any record), which lets one
// callback serve every record without a closure per event.
type inflight struct {
	context.Context
	rec        kgo.Record
	recHeaders [4]kgo.RecordHeader
	ev         decoder.Event // kept for the status table
	evHeaders  [4]decoder.Header
	pgTxn      *checkpoint.Txn // the PostgreSQL transaction it came in
	tracker    *checkpoint.Tracker
	size       int
	seq        uint64        // its place in the session's stream, from 1 (order.go)
	alone      bool          // produced again in a batch of its own (see atLeastOnce.ack)
	failed     error         // refused for good while an earlier record of its key waited alone: parked after it
	copies     *atomic.Int32 // the copies of a fanned-out event not yet acked; nil for one copy
}

// WrittenBack counts it out of flight once write-back settled its
// outcome: its row took it (or never will).
func (it *inflight) WrittenBack() { it.tracker.Done(it.pgTxn, it.size) }

// fifo is an unbounded queue of events, safe for concurrent use; push
// never blocks (it runs on the producer's callback goroutines).
type fifo struct {
	mu    sync.Mutex
	items []*inflight
	wake  chan struct{} // has a token while items may be waiting
}

func (q *fifo) push(it *inflight) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *fifo) pop() *inflight {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil
	}
	it := q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	return it
}
