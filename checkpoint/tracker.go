package checkpoint

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
)

// Txn is one transaction as the tracker sees it: open until Commit, with a
// count of its events still in flight.
type Txn struct {
	pending atomic.Int64
	commit  time.Time     // when it committed, set by Begin
	end     pglogrepl.LSN // set by Commit, under Tracker.mu
	// endCommit is the commit time of the newest transaction merged into
	// this entry, the one whose end is end (keepalive positions keep it).
	// Under Tracker.mu.
	endCommit time.Time
	closed    bool // under Tracker.mu
	xid       uint32
}

// CommitTime is when the transaction committed, as given to Begin.
func (tx *Txn) CommitTime() time.Time { return tx.commit }

// SetXid records the transaction's id (decoder.Message.Xid). The reader
// calls it after Begin, before it hands on any event of the transaction.
func (tx *Txn) SetXid(xid uint32) { tx.xid = xid }

// Xid is the transaction's id, as given to SetXid; 0 if unknown (and for
// a nil Txn). It names
// the transaction that inserted the rows an outcome is written to, for
// the write-back writer (writeback.Done).
func (tx *Txn) Xid() uint32 {
	if tx == nil {
		return 0
	}
	return tx.xid
}

// Limits bounds what may be in flight at once. A zero field means no limit.
type Limits struct {
	// Events is the most events read but not yet delivered.
	Events int64
	// Bytes is the most event bytes (see decoder.Event.Size) in flight.
	Bytes int64
}

// Tracker orders transactions and computes the safe LSN. Begin, Add, Commit
// and Position must be called by one goroutine, in stream order; Done may be
// called from any goroutine (producer callbacks). Safe, InFlight, Full and
// the wait methods are safe for concurrent use, and any number of
// goroutines may wait at once.
type Tracker struct {
	limits Limits

	mu sync.Mutex
	// queue holds the transactions not yet safe, oldest first, from head.
	// A transaction or keepalive position that becomes safe exactly when
	// the entry before it does is merged into that entry, so the queue is
	// bounded by the events in flight, not by the transactions read.
	queue     []*Txn
	head      int
	compactAt int // the queue length at which push compacts it next

	safe       atomic.Uint64 // written under mu
	safeCommit time.Time     // under mu: safe's commit time (see SafePosition)
	events     atomic.Int64
	bytes      atomic.Int64

	// Waiters: changed is closed (and cleared) when the counts go down
	// while anyone waits, waking every waiter at once.
	waiters atomic.Int32
	waitMu  sync.Mutex
	changed chan struct{} // under waitMu
}

// NewTracker returns a tracker whose safe position starts at start, the
// slot's confirmed position: it never reports anything lower.
func NewTracker(start pglogrepl.LSN, limits Limits) *Tracker {
	t := &Tracker{limits: limits}
	t.safe.Store(uint64(start))
	return t
}

// Begin opens a transaction at the tail of the queue; commit is when it
// committed (pgoutput's Begin says so), for OldestCommit.
func (t *Tracker) Begin(commit time.Time) *Txn {
	tx := &Txn{commit: commit}
	t.mu.Lock()
	t.push(tx)
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
	if t.waiters.Load() > 0 {
		t.waitMu.Lock()
		if t.changed != nil {
			close(t.changed)
			t.changed = nil
		}
		t.waitMu.Unlock()
	}
}

// Hold keeps tx from becoming safe until a matching Release, without
// counting anything in flight: for a transaction whose events Kafka has
// acked but not yet committed (exactly-once delivery), so that the reader
// may go on while the position waits. Call it before the first Done of tx
// could run, on the goroutine that calls Add.
func (t *Tracker) Hold(tx *Txn) { tx.pending.Add(1) }

// Release undoes one Hold of tx; once its events are done too, the safe
// position may pass it. It may be called from any goroutine.
func (t *Tracker) Release(tx *Txn) {
	if tx.pending.Add(-1) == 0 {
		t.mu.Lock()
		t.advance()
		t.mu.Unlock()
	}
}

// Commit closes tx: end is its Commit.TransactionEndLSN. Once its events and
// every earlier transaction's are done, the safe position reaches end.
func (t *Tracker) Commit(tx *Txn, end pglogrepl.LSN) {
	t.mu.Lock()
	tx.end, tx.endCommit = end, tx.commit
	tx.closed = true
	t.advance()
	if n := len(t.queue); n-t.head >= 2 && settled(tx) {
		// Nothing in flight, but behind a transaction with events in
		// flight: tx becomes safe exactly when the one before it does, so
		// that entry takes tx's end instead of the queue taking an entry.
		t.queue[n-2].merge(tx)
		t.queue[n-1] = nil
		t.queue = t.queue[:n-1]
	}
	t.mu.Unlock()
}

// Position records a stream position outside any transaction (a keepalive's
// server WAL end) as a transaction with no events: the safe position reaches
// it once everything read before it is done. Calling it between a Begin and
// its Commit is a bug. The position keeps the commit time of the last
// transaction before it (see SafePosition): a keepalive says nothing of
// when the transactions after it commit, and the older time is safe.
func (t *Tracker) Position(lsn pglogrepl.LSN) {
	t.mu.Lock()
	if n := len(t.queue); t.head == n {
		t.raise(lsn, time.Time{})
	} else {
		// The last transaction is closed (no Begin is open), and the
		// position becomes safe exactly when it does: no entry of its own.
		tail := t.queue[n-1]
		tail.end = max(tail.end, lsn)
	}
	t.mu.Unlock()
}

// merge makes tx, settled behind the entry, part of it: the entry takes
// tx's end with its commit time. Called with Tracker.mu held.
func (e *Txn) merge(tx *Txn) {
	if tx.end > e.end {
		e.end, e.endCommit = tx.end, tx.endCommit
	}
}

// settled reports whether tx is closed with no event in flight: it becomes
// safe exactly when the transaction before it does, and that stays so (Add
// is not called after Commit). Called with mu held.
func settled(tx *Txn) bool { return tx.closed && tx.pending.Load() == 0 }

// push appends tx to the queue, compacting the queue first when it has
// doubled since the last compaction: O(1) per transaction. Called with mu
// held.
func (t *Tracker) push(tx *Txn) {
	if len(t.queue)-t.head >= max(t.compactAt, minCompact) {
		t.compact()
		t.compactAt = 2 * (len(t.queue) - t.head)
	}
	t.queue = append(t.queue, tx)
}

// minCompact is the shortest queue that compact runs on.
const minCompact = 64

// compact merges each settled transaction behind another one into it (see
// Commit). Settled entries are left behind when events are acknowledged
// after their transaction's commit, while an earlier event is still in
// flight. Afterwards every entry has an event in flight or is open, so the
// queue holds at most one entry per event in flight, and between
// compactions at most twice that (or minCompact). Called with mu held.
func (t *Tracker) compact() {
	q := t.queue[t.head:]
	n := 0
	for _, tx := range q {
		if n > 0 && settled(tx) {
			q[n-1].merge(tx)
			continue
		}
		q[n] = tx
		n++
	}
	clear(q[n:])
	t.queue = t.queue[:t.head+n]
}

// advance pops finished transactions off the head. Called with mu held.
func (t *Tracker) advance() {
	for t.head < len(t.queue) {
		tx := t.queue[t.head]
		if !tx.closed || tx.pending.Load() != 0 {
			break
		}
		t.raise(tx.end, tx.endCommit)
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

// raise moves the safe position forward, never back, with the commit time
// of the newest transaction at or before it; a zero commit (a keepalive
// position) keeps the last one. Called with mu held.
func (t *Tracker) raise(lsn pglogrepl.LSN, commit time.Time) {
	if uint64(lsn) > t.safe.Load() {
		t.safe.Store(uint64(lsn))
		if !commit.IsZero() {
			t.safeCommit = commit
		}
	}
}

// Safe is the position PostgreSQL may be told is flushed: no event of a
// transaction ending at or before it is still in flight.
func (t *Tracker) Safe() pglogrepl.LSN { return pglogrepl.LSN(t.safe.Load()) }

// SafePosition is Safe with the commit time of the newest transaction at
// or before it that the tracker read (in a merged entry, the newest of
// those merged; a keepalive position keeps the time of the transaction
// before it). It is zero until the safe position passes a transaction:
// the start position's time is not the tracker's to know. Transactions
// after the position committed at or after that time, up to the sub-second
// disorder Position describes.
func (t *Tracker) SafePosition() Position {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Position{LSN: t.Safe(), CommitTime: t.safeCommit}
}

// OldestCommit returns the commit time of the oldest transaction that is
// not yet safe (read, with events in flight or still being read), and
// false when there is none. Transactions that finish behind an unfinished
// one are merged into it, so the oldest is never lost.
func (t *Tracker) OldestCommit() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.head == len(t.queue) {
		return time.Time{}, false
	}
	return t.queue[t.head].commit, true
}

// InFlight reports the events and bytes read but not yet delivered.
func (t *Tracker) InFlight() (events, bytes int64) {
	return t.events.Load(), t.bytes.Load()
}

// Full reports whether an in-flight limit is reached: the reader should
// wait (see WaitCapacity) before reading more.
func (t *Tracker) Full() bool {
	return t.limits.Events > 0 && t.events.Load() >= t.limits.Events ||
		t.limits.Bytes > 0 && t.bytes.Load() >= t.limits.Bytes
}

// WaitCapacity blocks while the in-flight limits are reached, and then
// until what is in flight is a tenth below each limit: a reader at the
// limit resumes for a run of events, not for one event per acknowledgement
// (each wait has a cost: a timer, a wake-up).
func (t *Tracker) WaitCapacity(ctx context.Context) error {
	return t.waitUntil(ctx, func() bool {
		return (t.limits.Events <= 0 || t.events.Load() < lowWater(t.limits.Events)) &&
			(t.limits.Bytes <= 0 || t.bytes.Load() < lowWater(t.limits.Bytes))
	})
}

// lowWater is where a reader waiting at limit resumes: a tenth below it
// (the limit itself for limits under ten).
func lowWater(limit int64) int64 { return limit - limit/10 }

// WaitIdle blocks until no event is in flight.
func (t *Tracker) WaitIdle(ctx context.Context) error {
	return t.waitUntil(ctx, func() bool { return t.events.Load() == 0 })
}

// waitUntil blocks until ok holds or ctx is done. ok must depend only on
// what Done changes. A Done that lands after ok was checked closes the
// channel taken before the check, so no wake-up is lost: the waiter is
// counted before it checks, and Done counts down before it looks for
// waiters.
func (t *Tracker) waitUntil(ctx context.Context, ok func() bool) error {
	if ok() {
		return nil
	}
	t.waiters.Add(1)
	defer t.waiters.Add(-1)
	for {
		t.waitMu.Lock()
		if t.changed == nil {
			t.changed = make(chan struct{})
		}
		changed := t.changed
		t.waitMu.Unlock()
		if ok() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
