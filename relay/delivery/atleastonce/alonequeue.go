package atleastonce

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdc-relay/cdc-relay/relay/delivery"
)

// aloneQueue holds the records to produce again beside the stream (see
// Delivery.ack), and the events the stream queued behind them, in stream
// order (by Inflight.Seq), whatever order they were pushed in: a record
// that franz-go fails after the stream queued a later event of its key
// still goes first. Safe for concurrent use; push and nudge never block
// (they run on the producer's callback goroutine).
type aloneQueue struct {
	mu    sync.Mutex
	items bySeq
	n     atomic.Int32  // len(items), read without mu
	wake  chan struct{} // has a token while items may be ready
}

// aloneRound is the most records one round takes.
const aloneRound = 4096

// aloneSafety is how long take waits, with items queued, for a push or a
// nudge before it looks again all the same.
const aloneSafety = 50 * time.Millisecond

func newAloneQueue() *aloneQueue { return &aloneQueue{wake: make(chan struct{}, 1)} }

func (q *aloneQueue) push(it *delivery.Inflight) {
	q.mu.Lock()
	heap.Push(&q.items, it)
	q.n.Store(int32(len(q.items)))
	q.mu.Unlock()
	q.nudge()
}

// nudge wakes take: an item may have become ready (its key's last record
// left the producer).
func (q *aloneQueue) nudge() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// waiting reports whether items are queued.
func (q *aloneQueue) waiting() bool { return q.n.Load() > 0 }

// take returns the next round, in stream order: for each key, its
// earliest item, if ready says it may go (no earlier record of its key
// can still join the queue), and every ready item without a key; at most
// aloneRound. It waits until there is one, woken by push and nudge; nil
// once ctx ends. A key's later items stay for later rounds, so that each
// goes only once the one before it is settled.
func (q *aloneQueue) take(ctx context.Context, ready func(*delivery.Inflight) bool) []*delivery.Inflight {
	for {
		if took := q.round(ready); len(took) > 0 {
			return took
		}
		var safety <-chan time.Time
		if q.waiting() {
			safety = time.After(aloneSafety)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-q.wake:
		case <-safety:
		}
	}
}

// round takes the items of the next round out of the queue.
func (q *aloneQueue) round(ready func(*delivery.Inflight) bool) []*delivery.Inflight {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil
	}
	var took, kept []*delivery.Inflight
	seen := map[string]bool{}
	for len(q.items) > 0 {
		it := heap.Pop(&q.items).(*delivery.Inflight)
		if it.Event.Key != nil {
			k := it.Event.Topic + "\x00" + string(it.Event.Key)
			if seen[k] || len(took) >= aloneRound {
				kept = append(kept, it)
				continue
			}
			seen[k] = true // an item not ready holds its key's later ones back too
		}
		if len(took) >= aloneRound || !ready(it) {
			kept = append(kept, it)
			continue
		}
		took = append(took, it)
	}
	q.items = append(q.items, kept...) // in stream order: a heap already
	q.n.Store(int32(len(q.items)))
	return took
}

// bySeq is a min-heap of events by their place in the stream.
type bySeq []*delivery.Inflight

func (h bySeq) Len() int           { return len(h) }
func (h bySeq) Less(i, j int) bool { return h[i].Seq < h[j].Seq }
func (h bySeq) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *bySeq) Push(x any)        { *h = append(*h, x.(*delivery.Inflight)) }
func (h *bySeq) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}
