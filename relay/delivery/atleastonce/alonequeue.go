package atleastonce

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/cdc-relay/cdc-relay/relay/delivery"
)

// aloneQueue holds the records to produce again one at a time (see
// Delivery.ack), and the events the stream queued behind them, in
// stream order (by Inflight.Seq), whatever order they were pushed in: a
// record that franz-go fails after the stream queued a later event of its
// key still goes first. Safe for concurrent use; push never blocks (it
// runs on the producer's callback goroutine).
type aloneQueue struct {
	mu    sync.Mutex
	items bySeq
	wake  chan struct{} // has a token while items may be waiting
}

func newAloneQueue() *aloneQueue { return &aloneQueue{wake: make(chan struct{}, 1)} }

func (q *aloneQueue) push(it *delivery.Inflight) {
	q.mu.Lock()
	heap.Push(&q.items, it)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next returns the earliest item once ready says it may go (no earlier
// record of its key can still join the queue), waiting meanwhile; nil once
// ctx ends. An earlier item pushed while it waits goes first.
func (q *aloneQueue) next(ctx context.Context, ready func(*delivery.Inflight) bool) *delivery.Inflight {
	for {
		q.mu.Lock()
		var first *delivery.Inflight
		if len(q.items) > 0 {
			first = q.items[0]
		}
		q.mu.Unlock()
		var retry <-chan time.Time
		if first != nil {
			if ready(first) && q.popIf(first) {
				return first
			}
			retry = time.After(time.Millisecond) // its key's records are still in franz-go
		}
		select {
		case <-ctx.Done():
			return nil
		case <-q.wake:
		case <-retry:
		}
	}
}

// popIf pops it if it is still the earliest item.
func (q *aloneQueue) popIf(it *delivery.Inflight) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 || q.items[0] != it {
		return false
	}
	heap.Pop(&q.items)
	return true
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
