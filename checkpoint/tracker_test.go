package checkpoint

import (
	"context"
	"math/rand"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
)

func TestSafeWaitsForEveryEarlierTransaction(t *testing.T) {
	tr := NewTracker(100, Limits{})
	a := tr.Begin(time.Time{})
	tr.Add(a, 10)
	tr.Commit(a, 200)
	b := tr.Begin(time.Time{})
	tr.Add(b, 10)
	tr.Commit(b, 300)
	tr.Position(400) // keepalive after both

	if got := tr.Safe(); got != 100 {
		t.Fatalf("safe %s before any ack, want the start 0/64", got)
	}
	tr.Done(b, 10) // the later transaction is acked first
	if got := tr.Safe(); got != 100 {
		t.Fatalf("safe %s: passed transaction a, whose event is in flight", got)
	}
	tr.Done(a, 10)
	if got := tr.Safe(); got != 400 {
		t.Fatalf("safe %s after all acks, want the keepalive position 0/190", got)
	}
	if ev, by := tr.InFlight(); ev != 0 || by != 0 {
		t.Fatalf("in flight %d events %d bytes after all acks", ev, by)
	}
}

func TestOpenTransactionHoldsSafe(t *testing.T) {
	tr := NewTracker(0, Limits{})
	tx := tr.Begin(time.Time{})
	tr.Add(tx, 1)
	tr.Done(tx, 1) // acked before its commit was read
	if got := tr.Safe(); got != 0 {
		t.Fatalf("safe %s while the transaction is still open", got)
	}
	tr.Commit(tx, 50)
	if got := tr.Safe(); got != 50 {
		t.Fatalf("safe %s after commit, want 0/32", got)
	}
}

func TestEmptyTransactionAndIdleKeepalive(t *testing.T) {
	tr := NewTracker(10, Limits{})
	tr.Commit(tr.Begin(time.Time{}), 20)
	if got := tr.Safe(); got != 20 {
		t.Fatalf("safe %s after an empty transaction, want 0/14", got)
	}
	tr.Position(30)
	if got := tr.Safe(); got != 30 {
		t.Fatalf("safe %s after an idle keepalive, want 0/1E", got)
	}
	tr.Position(25) // never backwards
	if got := tr.Safe(); got != 30 {
		t.Fatalf("safe %s went backwards", got)
	}
}

func TestNeverBelowStart(t *testing.T) {
	tr := NewTracker(1000, Limits{})
	tr.Commit(tr.Begin(time.Time{}), 500)
	tr.Position(600)
	if got := tr.Safe(); got != 1000 {
		t.Fatalf("safe %s, below the slot's confirmed start", got)
	}
}

// TestModel drives the tracker with a random stream (transactions with
// and without events, runs of empty transactions, keepalives, events held
// back for a while, one for most of the stream) and random ack order from many
// goroutines. After every step it checks that the safe position never
// passes the end of a transaction with an event in flight; whenever every
// released ack is processed, that the safe position is exactly the end of
// the newest fully delivered prefix, and that the queue stays within its
// bound (entries without events collapse).
func TestModel(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		tr := NewTracker(0, Limits{})
		// entry is a transaction or keepalive position, as the model sees it.
		type entry struct {
			end  pglogrepl.LSN
			n    int   // events not yet acked (counted down before Done)
			left int64 // events whose Done has not returned
		}
		var (
			mu          sync.Mutex
			entries     []*entry // every entry not known delivered, in stream order
			withEvents  []*entry // the entries among them with events, some acked
			inflight    = make(chan func(), 100000)
			released    sync.WaitGroup // acks sent to the workers, not yet processed
			wg          sync.WaitGroup
			outstanding atomic.Int64 // entries with an event whose Done has not returned
		)
		// check runs on the workers too: it reports with Errorf (Fatalf
		// must not be called off the test goroutine) and once.
		var failed atomic.Bool
		check := func() {
			mu.Lock()
			defer mu.Unlock()
			safe := tr.Safe()
			for _, e := range withEvents {
				if e.n > 0 && e.end != 0 && safe >= e.end && !failed.Swap(true) {
					t.Errorf("seed %d: safe %s reached the end %s of a transaction with %d events in flight", seed, safe, e.end, e.n)
				}
			}
		}
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ack := range inflight {
					ack()
					check()
					released.Done()
				}
			}()
		}
		release := func(a func()) {
			released.Add(1)
			inflight <- a
		}
		maxOutstanding := int64(0)
		// quiescent waits for every released ack, then checks the safe
		// position exactly and the queue's length.
		want := pglogrepl.LSN(0) // the end of the delivered prefix
		quiescent := func(step int) {
			released.Wait()
			mu.Lock()
			for len(entries) > 0 && entries[0].n == 0 {
				want = max(want, entries[0].end)
				entries = entries[1:]
			}
			withEvents = slices.DeleteFunc(withEvents, func(e *entry) bool { return e.n == 0 })
			mu.Unlock()
			if got := tr.Safe(); got != want {
				t.Fatalf("seed %d step %d: safe %s, want %s: the end of the newest delivered prefix", seed, step, got, want)
			}
			if n, _ := tr.queued(); n > max(2*int(maxOutstanding), minCompact) {
				t.Fatalf("seed %d step %d: %d entries queued with at most %d transactions in flight at once", seed, step, n, maxOutstanding)
			}
		}
		var acks []func()
		// held are acks held back until a step: the seed's first one until
		// stuckUntil, and a few others for up to 300 steps.
		held := map[int][]func(){}
		const steps, stuckUntil = 2000, 1500
		step := 0
		lsn := pglogrepl.LSN(0)
		commit := func(n int) {
			tx := tr.Begin(time.Time{})
			e := &entry{n: n, left: int64(n)}
			mu.Lock()
			entries = append(entries, e)
			if n > 0 {
				withEvents = append(withEvents, e)
				outstanding.Add(1)
			}
			mu.Unlock()
			for j := 0; j < n; j++ {
				tr.Add(tx, 1)
				ack := func() {
					mu.Lock()
					e.n--
					mu.Unlock()
					tr.Done(tx, 1)
					mu.Lock()
					e.left--
					if e.left == 0 {
						outstanding.Add(-1)
					}
					mu.Unlock()
				}
				switch {
				case len(held) == 0:
					held[stuckUntil] = append(held[stuckUntil], ack)
				case rng.Intn(30) == 0:
					at := step + 1 + rng.Intn(300)
					held[at] = append(held[at], ack)
				default:
					acks = append(acks, ack)
				}
			}
			maxOutstanding = max(maxOutstanding, outstanding.Load())
			lsn += pglogrepl.LSN(1 + rng.Intn(100))
			mu.Lock()
			e.end = lsn
			mu.Unlock()
			tr.Commit(tx, lsn)
		}
		position := func() {
			lsn += pglogrepl.LSN(1 + rng.Intn(100))
			mu.Lock()
			entries = append(entries, &entry{end: lsn})
			mu.Unlock()
			tr.Position(lsn)
		}
		for i := 0; i < steps; i++ {
			step = i
			switch r := rng.Intn(10); {
			case r < 2:
				position()
			case r == 2:
				// A run of transactions on other tables (empty, as
				// pgoutput sends them before PostgreSQL 15) and keepalives.
				for k := rng.Intn(50); k > 0; k-- {
					if rng.Intn(5) == 0 {
						position()
					} else {
						commit(0)
					}
				}
			default:
				commit(rng.Intn(4))
			}
			check()
			for _, a := range held[i] {
				release(a)
			}
			delete(held, i)
			// Release a random subset of acks, out of order.
			rng.Shuffle(len(acks), func(a, b int) { acks[a], acks[b] = acks[b], acks[a] })
			k := rng.Intn(len(acks) + 1)
			for _, a := range acks[:k] {
				release(a)
			}
			acks = acks[k:]
			if i%50 == 0 || i == stuckUntil-1 {
				quiescent(i)
			}
		}
		for _, a := range acks {
			release(a)
		}
		for _, as := range held {
			for _, a := range as {
				release(a)
			}
		}
		quiescent(steps)
		close(inflight)
		wg.Wait()
		if failed.Load() {
			t.FailNow()
		}
		// With nothing in flight the safe position is the last commit or
		// keepalive.
		if got := tr.Safe(); got != lsn {
			t.Fatalf("seed %d: safe %s after all acks, want %s", seed, got, lsn)
		}
		if n, _ := tr.queued(); n != 0 {
			t.Fatalf("seed %d: %d entries queued with nothing in flight", seed, n)
		}
	}
}

// TestStuckEventThenEmptyTransactions: one event stuck in flight, then two
// million transactions without events and keepalives (transactions on other
// tables, which pgoutput sends as Begin/Commit before PostgreSQL 15). They
// collapse into one queue entry; the queue and the heap stay small; acking
// the stuck event moves the safe position to the last one's end.
func TestStuckEventThenEmptyTransactions(t *testing.T) {
	tests := []struct {
		name string
		// events: each transaction has one event, acked after the next
		// transaction's commit (so the entries collapse only in compact).
		events bool
		txs    int
	}{
		{"empty transactions and keepalives", false, 2_000_000},
		{"transactions acked after their commit", true, 200_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)

			tr := NewTracker(0, Limits{})
			stuck := tr.Begin(time.Time{})
			tr.Add(stuck, 100)
			tr.Commit(stuck, 10)
			lsn := pglogrepl.LSN(10)
			var prev *Txn
			maxQueued, maxCap := 0, 0
			for i := 0; i < tt.txs; i++ {
				lsn += 2
				if i%1000 == 999 {
					tr.Position(lsn)
					continue
				}
				tx := tr.Begin(time.Time{})
				if tt.events {
					tr.Add(tx, 100)
				}
				tr.Commit(tx, lsn)
				if prev != nil {
					tr.Done(prev, 100)
				}
				if tt.events {
					prev = tx
				}
				if i%1000 == 0 {
					n, c := tr.queued()
					maxQueued, maxCap = max(maxQueued, n), max(maxCap, c)
				}
			}
			if prev != nil {
				tr.Done(prev, 100)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			n, c := tr.queued()
			maxQueued, maxCap = max(maxQueued, n), max(maxCap, c)
			t.Logf("queue: at most %d entries, capacity %d; heap grew by %d KiB", maxQueued, maxCap, (int64(after.HeapAlloc)-int64(before.HeapAlloc))>>10)
			if maxQueued > 2*minCompact || maxCap > 4*minCompact {
				t.Fatalf("queue reached %d entries (capacity %d) behind one stuck event", maxQueued, maxCap)
			}
			if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 1<<20 {
				t.Fatalf("heap grew by %d KiB behind one stuck event", grew>>10)
			}
			if got := tr.Safe(); got != 0 {
				t.Fatalf("safe %s passed the stuck event", got)
			}
			tr.Done(stuck, 100)
			if got := tr.Safe(); got != lsn {
				t.Fatalf("safe %s after the stuck event was acked, want the last entry's end %s", got, lsn)
			}
			if n, _ := tr.queued(); n != 0 {
				t.Fatalf("%d entries queued with nothing in flight", n)
			}
		})
	}
}

// queued returns the queue's length and capacity.
func (t *Tracker) queued() (n, capacity int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.queue) - t.head, cap(t.queue)
}

// blocks fails the test with msg unless wait still waits after 50ms.
func blocks(t *testing.T, wait func(context.Context) error, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := wait(ctx); err == nil {
		t.Fatal(msg)
	}
}

// wakes starts wait, calls ack, and fails the test with msg unless wait
// returns nil within 5s.
func wakes(t *testing.T, wait func(context.Context) error, ack func(), msg string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- wait(context.Background()) }()
	ack()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal(msg)
	}
}

func TestWaitCapacityAndIdle(t *testing.T) {
	tr := NewTracker(0, Limits{Events: 2, Bytes: 1000})
	tx := tr.Begin(time.Time{})
	tr.Add(tx, 10)
	tr.Add(tx, 10)
	blocks(t, tr.WaitCapacity, "WaitCapacity returned with the event limit reached")
	ack := func() { tr.Done(tx, 10) }
	wakes(t, tr.WaitCapacity, ack, "WaitCapacity did not wake when an event was acked")
	wakes(t, tr.WaitIdle, ack, "WaitIdle did not wake when the last event was acked")

	// At the limit, the wait lasts until a tenth is free, not one event.
	tr3 := NewTracker(0, Limits{Events: 20})
	tx3 := tr3.Begin(time.Time{})
	for i := 0; i < 20; i++ {
		tr3.Add(tx3, 1)
	}
	tr3.Done(tx3, 1) // 19 in flight: below the limit, not below 18
	blocks(t, tr3.WaitCapacity, "WaitCapacity returned one event below the limit; want a tenth below")
	tr3.Done(tx3, 1)
	tr3.Done(tx3, 1) // 17
	if err := tr3.WaitCapacity(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The byte limit alone also blocks.
	tr2 := NewTracker(0, Limits{Bytes: 100})
	tr2.Add(tr2.Begin(time.Time{}), 150)
	blocks(t, tr2.WaitCapacity, "WaitCapacity returned with the byte limit reached")
}

// TestEveryWaiterWakes: the reader waiting for capacity and a stop waiting
// for idle wait at the same time; one Done must wake both.
func TestEveryWaiterWakes(t *testing.T) {
	for i := 0; i < 200; i++ {
		tr := NewTracker(0, Limits{Events: 1})
		tx := tr.Begin(time.Time{})
		tr.Add(tx, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		done := make(chan error, 3)
		go func() { done <- tr.WaitCapacity(ctx) }()
		go func() { done <- tr.WaitIdle(ctx) }()
		go func() { done <- tr.WaitIdle(ctx) }()
		for tr.waiters.Load() < 3 { // all three are waiting
			time.Sleep(time.Millisecond)
		}
		tr.Done(tx, 1)
		for j := 0; j < 3; j++ {
			if err := <-done; err != nil {
				cancel()
				t.Fatalf("round %d: a waiter was not woken by Done: %v", i, err)
			}
		}
		cancel()
	}
}

func BenchmarkTrackEvent(b *testing.B) {
	tr := NewTracker(0, Limits{})
	b.ReportAllocs()
	tx := tr.Begin(time.Time{})
	for i := 0; i < b.N; i++ {
		if i%1000 == 0 {
			tr.Commit(tx, pglogrepl.LSN(i))
			tx = tr.Begin(time.Time{})
		}
		tr.Add(tx, 300)
		tr.Done(tx, 300)
	}
}

// BenchmarkTrackEmptyTransaction: a transaction without events (Begin and
// Commit), with nothing in flight and behind a stuck event.
func BenchmarkTrackEmptyTransaction(b *testing.B) {
	for _, stuck := range []bool{false, true} {
		b.Run(map[bool]string{false: "idle", true: "behind a stuck event"}[stuck], func(b *testing.B) {
			tr := NewTracker(0, Limits{})
			if stuck {
				tx := tr.Begin(time.Time{})
				tr.Add(tx, 1)
				tr.Commit(tx, 1)
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				tr.Commit(tr.Begin(time.Time{}), pglogrepl.LSN(i+2))
			}
		})
	}
}

// TestOldestCommit: the oldest unfinished transaction's commit time, also
// when a later one finished before it; none once everything is safe.
func TestOldestCommit(t *testing.T) {
	tr := NewTracker(0, Limits{})
	if _, ok := tr.OldestCommit(); ok {
		t.Fatal("an empty tracker has an oldest commit")
	}
	t1, t2 := time.Unix(100, 0), time.Unix(200, 0)
	a := tr.Begin(t1)
	tr.Add(a, 10)
	tr.Commit(a, 10)
	b := tr.Begin(t2)
	tr.Commit(b, 20) // no events: merged into a
	if got, ok := tr.OldestCommit(); !ok || !got.Equal(t1) {
		t.Fatalf("oldest commit %v %v, want %v", got, ok, t1)
	}
	tr.Done(a, 10)
	if got, ok := tr.OldestCommit(); ok {
		t.Fatalf("oldest commit %v after everything is safe", got)
	}
}

// TestSafePositionCommitTime: the safe position carries the commit time
// of the newest transaction at or before it, through merged entries and
// keepalive positions, and none before the tracker passed a transaction.
func TestSafePositionCommitTime(t *testing.T) {
	c1 := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	c2 := c1.Add(time.Minute)
	for _, tc := range []struct {
		name   string
		stream func(tr *Tracker)
		want   Position
	}{
		{"none read yet", func(tr *Tracker) { tr.Position(0x150) }, Position{LSN: 0x150}},
		{"a transaction's time with its end", func(tr *Tracker) {
			tx := tr.Begin(c1)
			tr.Add(tx, 1)
			tr.Commit(tx, 0x200)
			tr.Done(tx, 1)
		}, Position{LSN: 0x200, CommitTime: c1}},
		{"a keepalive keeps the time before it", func(tr *Tracker) {
			tr.Commit(tr.Begin(c1), 0x200)
			tr.Position(0x300)
		}, Position{LSN: 0x300, CommitTime: c1}},
		{"an open transaction holds both", func(tr *Tracker) {
			tr.Commit(tr.Begin(c1), 0x200)
			tr.Add(tr.Begin(c2), 1)
		}, Position{LSN: 0x200, CommitTime: c1}},
		{"an event in flight holds both", func(tr *Tracker) {
			tr.Commit(tr.Begin(c1), 0x200)
			tx := tr.Begin(c2)
			tr.Add(tx, 1)
			tr.Commit(tx, 0x300)
			tr.Position(0x400)
		}, Position{LSN: 0x200, CommitTime: c1}},
		{"merged at commit, then a keepalive merged", func(tr *Tracker) {
			tx := tr.Begin(c1)
			tr.Add(tx, 1)
			tr.Commit(tx, 0x200)
			tr.Commit(tr.Begin(c2), 0x300) // merged into tx's entry
			tr.Position(0x400)             // and this
			if n := len(tr.queue) - tr.head; n != 1 {
				t.Fatalf("%d entries, want the empty transaction and the keepalive merged into one", n)
			}
			tr.Done(tx, 1)
		}, Position{LSN: 0x400, CommitTime: c2}},
		{"merged by compaction", func(tr *Tracker) {
			a := tr.Begin(c1)
			tr.Add(a, 1)
			tr.Commit(a, 0x200)
			b := tr.Begin(c2)
			tr.Add(b, 1)
			tr.Commit(b, 0x300)
			tr.Done(b, 1) // settled behind a, after its commit
			tr.mu.Lock()
			tr.compact()
			n := len(tr.queue) - tr.head
			tr.mu.Unlock()
			if n != 1 {
				t.Fatalf("%d entries after compaction, want 1", n)
			}
			tr.Done(a, 1)
		}, Position{LSN: 0x300, CommitTime: c2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(0x100, Limits{})
			tc.stream(tr)
			if got := tr.SafePosition(); got.LSN != tc.want.LSN || !got.CommitTime.Equal(tc.want.CommitTime) {
				t.Fatalf("safe position %s committed %v, want %s committed %v", got.LSN, got.CommitTime, tc.want.LSN, tc.want.CommitTime)
			}
		})
	}
}

// TestHeldTo: a position lowered to a bound takes the bound's LSN and the
// earlier time, and an unknown time stays unknown.
func TestHeldTo(t *testing.T) {
	c1 := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	c2 := c1.Add(time.Minute)
	for _, tc := range []struct {
		name     string
		p, bound Position
		want     Position
	}{
		{"a bound ahead changes nothing", Position{0x200, c2}, Position{0x300, c1}, Position{0x200, c2}},
		{"an equal bound changes nothing", Position{0x200, c2}, Position{0x200, c1}, Position{0x200, c2}},
		{"lowered: the bound's earlier time", Position{0x300, c2}, Position{0x200, c1}, Position{0x200, c1}},
		{"lowered: the position's earlier time", Position{0x300, c1}, Position{0x200, c2}, Position{0x200, c1}},
		{"lowered to a bound of unknown time", Position{0x300, c1}, Position{0x200, time.Time{}}, Position{0x200, time.Time{}}},
		{"lowered, the position's time unknown", Position{0x300, time.Time{}}, Position{0x200, c1}, Position{0x200, time.Time{}}},
	} {
		if got := tc.p.HeldTo(tc.bound); got.LSN != tc.want.LSN || !got.CommitTime.Equal(tc.want.CommitTime) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
