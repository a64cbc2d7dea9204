package checkpoint

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/jackc/pglogrepl"
)

// Txn is one transaction as the tracker sees it: open until Commit, with a
// count of its events still in flight.
type Txn struct {
	pending atomic.Int64
	end     pglogrepl.LSN // set by Commit, under Tracker.mu
	closed  bool          // under Tracker.mu
}

// Limits bounds what may be in flight at once. A zero field means no limit.
type Limits struct {
	// Events is the most events read but not yet delivered.
	Events int64
	// Bytes is the most event bytes (see decoder.Event.Size) in flight.
	Bytes int64
}

// Tracker orders transactions and computes the safe LSN. Begin, Commit and
// Position must be called by one goroutine, in stream order; Done may be
// called from any goroutine (producer callbacks). Safe and the wait methods
// are safe for concurrent use.
type Tracker struct {
	limits Limits

	mu    sync.Mutex
	queue []*Txn // transactions not yet safe, oldest first, from head
	head  int

	safe   atomic.Uint64
	events atomic.Int64
	bytes  atomic.Int64

	waiting atomic.Bool
	wake    chan struct{}
}

// NewTracker returns a tracker whose safe position starts at start, the
// slot's confirmed position: it never reports anything lower.
func NewTracker(start pglogrepl.LSN, limits Limits) *Tracker {
	t := &Tracker{limits: limits, wake: make(chan struct{}, 1)}
	t.safe.Store(uint64(start))
	return t
}

// Begin opens a transaction at the tail of the queue.
func (t *Tracker) Begin() *Txn {
	tx := &Txn{}
	t.mu.Lock()
	t.queue = append(t.queue, tx)
	t.mu.Unlock()
	return tx
}

// Add counts one event of tx, of the given size, as in flight. Call it
// before handing the event to the producer.
func (t *Tracker) Add(tx *Txn, size int) {
	tx.pending.Add(1)
	t.events.Add(1)
	t.bytes.Add(int64(size))
}

// Done marks one event of tx as delivered (acked by Kafka, or durably
// recorded as failed). size must be what Add was given.
func (t *Tracker) Done(tx *Txn, size int) {
	if tx.pending.Add(-1) == 0 {
		t.mu.Lock()
		t.advance()
		t.mu.Unlock()
	}
	// Counted down after the advance, so that once WaitIdle sees nothing in
	// flight, Safe already includes every delivered transaction.
	t.bytes.Add(-int64(size))
	t.events.Add(-1)
	if t.waiting.Load() {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// Commit closes tx: end is its Commit.TransactionEndLSN. Once its events and
// every earlier transaction's are done, the safe position reaches end.
func (t *Tracker) Commit(tx *Txn, end pglogrepl.LSN) {
	t.mu.Lock()
	tx.end = end
	tx.closed = true
	t.advance()
	t.mu.Unlock()
}

// Position records a stream position outside any transaction (a keepalive's
// server WAL end) as a transaction with no events: the safe position reaches
// it once everything read before it is done. Calling it between a Begin and
// its Commit is a bug.
func (t *Tracker) Position(lsn pglogrepl.LSN) {
	t.mu.Lock()
	if t.head == len(t.queue) {
		t.raise(lsn)
	} else {
		t.queue = append(t.queue, &Txn{end: lsn, closed: true})
	}
	t.mu.Unlock()
}

// advance pops finished transactions off the head. Called with mu held.
func (t *Tracker) advance() {
	for t.head < len(t.queue) {
		tx := t.queue[t.head]
		if !tx.closed || tx.pending.Load() != 0 {
			break
		}
		t.raise(tx.end)
		t.queue[t.head] = nil
		t.head++
	}
	if t.head == len(t.queue) {
		t.queue = t.queue[:0]
		t.head = 0
	} else if t.head > 1024 && t.head > len(t.queue)/2 {
		n := copy(t.queue, t.queue[t.head:])
		clear(t.queue[n:])
		t.queue = t.queue[:n]
		t.head = 0
	}
}

// raise moves the safe position forward, never back.
func (t *Tracker) raise(lsn pglogrepl.LSN) {
	if uint64(lsn) > t.safe.Load() {
		t.safe.Store(uint64(lsn))
	}
}

// Safe is the position PostgreSQL may be told is flushed: no event of a
// transaction ending at or before it is still in flight.
func (t *Tracker) Safe() pglogrepl.LSN { return pglogrepl.LSN(t.safe.Load()) }

// InFlight reports the events and bytes read but not yet delivered.
func (t *Tracker) InFlight() (events, bytes int64) {
	return t.events.Load(), t.bytes.Load()
}

func (t *Tracker) full() bool {
	return t.limits.Events > 0 && t.events.Load() >= t.limits.Events ||
		t.limits.Bytes > 0 && t.bytes.Load() >= t.limits.Bytes
}

// WaitCapacity blocks while the in-flight limits are reached.
func (t *Tracker) WaitCapacity(ctx context.Context) error {
	return t.waitUntil(ctx, func() bool { return !t.full() })
}

// WaitIdle blocks until no event is in flight.
func (t *Tracker) WaitIdle(ctx context.Context) error {
	return t.waitUntil(ctx, func() bool { return t.events.Load() == 0 })
}

func (t *Tracker) waitUntil(ctx context.Context, ok func() bool) error {
	if ok() {
		return nil
	}
	defer t.waiting.Store(false)
	for {
		t.waiting.Store(true)
		if ok() {
			return nil
		}
		select {
		case <-t.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
