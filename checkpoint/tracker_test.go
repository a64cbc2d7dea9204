package checkpoint

import (
	"context"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
)

func TestSafeWaitsForEveryEarlierTransaction(t *testing.T) {
	tr := NewTracker(100, Limits{})
	a := tr.Begin()
	tr.Add(a, 10)
	tr.Commit(a, 200)
	b := tr.Begin()
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
	tx := tr.Begin()
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
	tr.Commit(tr.Begin(), 20)
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
	tr.Commit(tr.Begin(), 500)
	tr.Position(600)
	if got := tr.Safe(); got != 1000 {
		t.Fatalf("safe %s, below the slot's confirmed start", got)
	}
}

// TestModel drives the tracker with a random stream and random ack order
// from many goroutines, and checks after every step that the safe position
// never passes the end of a transaction with an event in flight.
func TestModel(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		tr := NewTracker(0, Limits{})
		type pending struct {
			tx  *Txn
			end pglogrepl.LSN
			n   int
		}
		var (
			mu       sync.Mutex
			open     []*pending // transactions with events not yet acked, in order
			inflight = make(chan func(), 100000)
			wg       sync.WaitGroup
		)
		// check runs on the workers too: it reports with Errorf (Fatalf
		// must not be called off the test goroutine) and once.
		var failed atomic.Bool
		check := func() {
			mu.Lock()
			defer mu.Unlock()
			safe := tr.Safe()
			for _, p := range open {
				if p.n > 0 && p.end != 0 && safe >= p.end && !failed.Swap(true) {
					t.Errorf("seed %d: safe %s reached the end %s of a transaction with %d events in flight", seed, safe, p.end, p.n)
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
				}
			}()
		}
		var acks []func()
		lsn := pglogrepl.LSN(0)
		for i := 0; i < 2000; i++ {
			lsn += pglogrepl.LSN(1 + rng.Intn(100))
			if rng.Intn(4) == 0 {
				tr.Position(lsn)
				continue
			}
			tx := tr.Begin()
			p := &pending{tx: tx}
			n := rng.Intn(4)
			mu.Lock()
			p.n = n
			open = append(open, p)
			mu.Unlock()
			for j := 0; j < n; j++ {
				tr.Add(tx, 1)
				acks = append(acks, func() {
					mu.Lock()
					p.n--
					mu.Unlock()
					tr.Done(tx, 1)
				})
			}
			lsn += pglogrepl.LSN(1 + rng.Intn(100))
			mu.Lock()
			p.end = lsn
			mu.Unlock()
			tr.Commit(tx, lsn)
			check()
			// Release a random subset of acks, out of order.
			rng.Shuffle(len(acks), func(a, b int) { acks[a], acks[b] = acks[b], acks[a] })
			k := rng.Intn(len(acks) + 1)
			for _, a := range acks[:k] {
				inflight <- a
			}
			acks = acks[k:]
		}
		for _, a := range acks {
			inflight <- a
		}
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
	}
}

func TestWaitCapacityAndIdle(t *testing.T) {
	tr := NewTracker(0, Limits{Events: 2, Bytes: 1000})
	tx := tr.Begin()
	tr.Add(tx, 10)
	tr.Add(tx, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if err := tr.WaitCapacity(ctx); err == nil {
		t.Fatal("WaitCapacity returned with the event limit reached")
	}
	cancel()

	done := make(chan error, 1)
	go func() { done <- tr.WaitCapacity(context.Background()) }()
	tr.Done(tx, 10)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitCapacity did not wake when an event was acked")
	}

	go func() { done <- tr.WaitIdle(context.Background()) }()
	tr.Done(tx, 10)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitIdle did not wake when the last event was acked")
	}

	// At the limit, the wait lasts until a tenth is free, not one event.
	tr3 := NewTracker(0, Limits{Events: 20})
	tx3 := tr3.Begin()
	for i := 0; i < 20; i++ {
		tr3.Add(tx3, 1)
	}
	tr3.Done(tx3, 1) // 19 in flight: below the limit, not below 18
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	if err := tr3.WaitCapacity(ctx); err == nil {
		t.Fatal("WaitCapacity returned one event below the limit; want a tenth below")
	}
	cancel()
	tr3.Done(tx3, 1)
	tr3.Done(tx3, 1) // 17
	if err := tr3.WaitCapacity(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The byte limit alone also blocks.
	tr2 := NewTracker(0, Limits{Bytes: 100})
	tr2.Add(tr2.Begin(), 150)
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := tr2.WaitCapacity(ctx); err == nil {
		t.Fatal("WaitCapacity returned with the byte limit reached")
	}
}

// TestEveryWaiterWakes: the reader waiting for capacity and a stop waiting
// for idle wait at the same time; one Done must wake both.
func TestEveryWaiterWakes(t *testing.T) {
	for i := 0; i < 200; i++ {
		tr := NewTracker(0, Limits{Events: 1})
		tx := tr.Begin()
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
	tx := tr.Begin()
	for i := 0; i < b.N; i++ {
		if i%1000 == 0 {
			tr.Commit(tx, pglogrepl.LSN(i))
			tx = tr.Begin()
		}
		tr.Add(tx, 300)
		tr.Done(tx, 300)
	}
}
