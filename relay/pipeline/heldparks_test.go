package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/delivery/atleastonce"
	"github.com/cdc-relay/cdc-relay/status"
)

// The batched parking of held events (relay/delivery/heldparks.go): a
// status store that parks WAITING and PAUSED rows in batches
// (delivery.HeldParker), driven batch by batch by the test.

// batchStore is fakeStore with ParkHeld, so that the stream's WAITING and
// PAUSED rows are stored in batches. Each call tells entered its rows'
// ids, then waits for a token on gate (if set); it fails with a retriable
// error if its call number (from 1) is in fail, blocks until ctx ends if
// it is in block, and else stores its rows (in fakeStore's recorded too)
// and returns nil; then it tells finished (if set).
type batchStore struct {
	*fakeStore
	entered  chan []string
	gate     chan struct{}
	finished chan struct{}
	fail     map[int]bool
	block    map[int]bool

	bmu    sync.Mutex
	calls  [][]string // the ids of each call, in call order
	stored [][]string // the ids of each stored batch, in commit order
}

var _ delivery.HeldParker = (*batchStore)(nil)

// errUnavailable is a retriable error of the status table.
var errUnavailable = errors.New("status table unavailable (test)")

func (s *batchStore) ParkHeld(ctx context.Context, held []status.Held) error {
	ids := make([]string, len(held))
	for i, h := range held {
		ids[i] = string(h.Event.ID)
	}
	s.bmu.Lock()
	s.calls = append(s.calls, ids)
	n := len(s.calls)
	s.bmu.Unlock()
	if s.finished != nil {
		defer func() { s.finished <- struct{}{} }()
	}
	if s.entered != nil {
		s.entered <- ids
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	switch {
	case s.block[n]:
		<-ctx.Done()
		return ctx.Err()
	case s.fail[n]:
		return errUnavailable
	}
	s.bmu.Lock()
	s.stored = append(s.stored, ids)
	s.bmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range held {
		state, reason := "WAITING", h.Reason
		if h.Paused {
			state, reason = "PAUSED", delivery.ErrPaused
		}
		s.recorded = append(s.recorded, state+" "+string(h.Event.ID)+": "+reason.Error())
		s.topics = append(s.topics, h.Event.Topic)
	}
	return nil
}

// enter waits for the next call to tell entered its ids, failing t after
// 5 s.
func (s *batchStore) enter(t *testing.T) []string {
	t.Helper()
	select {
	case ids := <-s.entered:
		return ids
	case <-time.After(5 * time.Second):
		t.Fatal("no batch stored for 5 s")
		return nil
	}
}

// storedBatches returns the ids of each stored batch.
func (s *batchStore) storedBatches() [][]string {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	return slices.Clone(s.stored)
}

// parkWatch is the at-least-once delivery, whose parks it counts: wait
// waits for every park begun to return, and results says what each
// returned, by event id.
type parkWatch struct {
	delivery.Delivery
	wg      sync.WaitGroup
	mu      sync.Mutex
	results map[string]bool
}

func (w *parkWatch) Park(it *delivery.Inflight, store func() bool) {
	w.wg.Go(func() {
		ok := store()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.results[string(it.Event.ID)] = ok
	})
}

// wait waits for every park begun to return, failing t after 5 s.
func (w *parkWatch) wait(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("parks still running 5 s after the session ended: they hang")
	}
}

// newBatchPipeline is newTestPipeline on store, whose held rows are
// stored in batches, with its parks watched.
func newBatchPipeline(t *testing.T, store *batchStore) (*testPipeline, *parkWatch) {
	t.Helper()
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tp := &testPipeline{prod: &fakeProducer{}, store: store.fakeStore, logs: logs, cancel: cancel}
	l := delivery.NewLedger(&delivery.Ledger{
		Log:      slog.New(slog.NewTextHandler(logs, nil)),
		Failures: store, Count: &delivery.Counters{},
		Tracker: checkpoint.NewTracker(0x100, checkpoint.Limits{}),
		FailCtx: ctx, ProduceCtx: ctx, RetryBase: time.Millisecond,
	})
	w := &parkWatch{Delivery: atleastonce.New(l, tp.prod), results: map[string]bool{}}
	tp.Ledger, tp.Pipeline = l, New(l, Options{Delivery: w})
	return tp, w
}

// heldStream applies evs[from:], each in a transaction of its own, the
// i-th ending at ends[i], and returns ends (of all of evs).
func (tp *testPipeline) heldStream(t *testing.T, evs []testEv, from int) []pglogrepl.LSN {
	t.Helper()
	ends := make([]pglogrepl.LSN, len(evs))
	for i, e := range evs {
		ends[i] = pglogrepl.LSN(0x200 + 0x100*i)
		if i >= from {
			tp.events(t, ends[i], e)
		}
	}
	return ends
}

// safeAfter is where the checkpoint may be once the events of evs (ending
// at ends) in stored are: the end of the last of the events before the
// first not stored, the start if none.
func safeAfter(evs []testEv, ends []pglogrepl.LSN, stored map[string]bool) pglogrepl.LSN {
	safe := pglogrepl.LSN(0x100)
	for i, e := range evs {
		if !stored[e.id] {
			break
		}
		safe = ends[i]
	}
	return safe
}

// inKeyOrder reports whether the ids of each key of evs appear in rows in
// the order of evs, each once, and every event's does.
func inKeyOrder(evs []testEv, rows []string) error {
	pos := map[string]int{}
	for i, id := range rows {
		if _, dup := pos[id]; dup {
			return fmt.Errorf("%s stored twice", id)
		}
		pos[id] = i
	}
	last := map[string]testEv{}
	for _, e := range evs {
		p, ok := pos[e.id]
		if !ok {
			return fmt.Errorf("%s not stored", e.id)
		}
		k := e.topic + "/" + e.key
		if prev, ok := last[k]; ok && pos[prev.id] > p {
			return fmt.Errorf("%s stored before %s, an earlier event of its key", e.id, prev.id)
		}
		last[k] = e
	}
	if len(rows) != len(evs) {
		return fmt.Errorf("%d rows stored, want %d", len(rows), len(evs))
	}
	return nil
}

// interleave returns the events of n events of each of keys k and j of
// topic, alternating, ids k0, j0, k1, ...
func interleave(n int, topic string) []testEv {
	var evs []testEv
	for i := range n {
		evs = append(evs, testEv{fmt.Sprint("k", i), topic, "k"}, testEv{fmt.Sprint("j", i), topic, "j"})
	}
	return evs
}

// TestHeldParksInBatches: the WAITING rows of held keys, and the PAUSED
// rows of a paused topic, are stored in batches (fewer statements than
// rows), each key's rows in commit order, each row once. The checkpoint
// passes an event only once the batch holding its row committed: when
// each batch is about to commit, it is exactly past the events whose rows
// are stored, never past one whose row is not. A batch that fails with a
// retriable error is tried again, the same rows, before any later batch,
// so no later row of its keys is stored before it, and nothing is lost.
func TestHeldParksInBatches(t *testing.T) {
	tests := []struct {
		name   string
		fail   map[int]bool // the calls that fail
		paused bool         // the topic is paused, else keys k and j held
	}{
		{name: "waiting behind held keys"},
		{name: "a paused topic", paused: true},
		{name: "the second batch fails once", fail: map[int]bool{2: true}},
		{name: "the first batch fails twice", fail: map[int]bool{1: true, 2: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &fakeStore{held: []status.Key{{Topic: "orders", Key: "k"}, {Topic: "orders", Key: "j"}}}
			if tt.paused {
				fs = &fakeStore{paused: []string{"orders"}}
			}
			store := &batchStore{fakeStore: fs, entered: make(chan []string), gate: make(chan struct{}),
				finished: make(chan struct{}), fail: tt.fail}
			tp, w := newBatchPipeline(t, store)
			tp.ordered(t, true)
			evs := interleave(10, "orders")
			// The first event alone, its batch held at entered while the
			// rest arrive, so that there is always a second batch.
			tp.heldStream(t, evs[:1], 0)
			first := store.enter(t)
			ends := tp.heldStream(t, evs, 1)
			if got := tp.prod.answer(nil); got != 0 {
				t.Fatalf("%d held events produced", got)
			}
			stored := map[string]bool{}
			var prev []string
			prevFailed := false
			for call := 1; len(stored) < len(evs); call++ {
				ids := first
				if call > 1 {
					ids = store.enter(t)
				}
				if prevFailed && !slices.Equal(ids, prev) {
					t.Fatalf("after batch %v failed, %v was tried: the failed one first", prev, ids)
				}
				// Every row stored so far is counted out of flight before
				// the next batch is stored, and no other.
				if got, want := tp.Tracker.Safe(), safeAfter(evs, ends, stored); got != want {
					t.Fatalf("batch %d %v about to commit: safe %s, want %s (rows stored: %d)", call, ids, got, want, len(stored))
				}
				if call == 1 {
					// Room for the other parks to queue behind the first
					// batch (their queue is not seen from here).
					time.Sleep(20 * time.Millisecond)
				}
				store.gate <- struct{}{}
				<-store.finished
				prev, prevFailed = ids, tt.fail[call]
				if !prevFailed {
					for _, id := range ids {
						stored[id] = true
					}
				}
			}
			tp.waitIdle(t)
			w.wait(t)
			if got, want := tp.Tracker.Safe(), ends[len(ends)-1]; got != want {
				t.Fatalf("safe %s once every row is stored, want %s", got, want)
			}
			var rows []string
			batches := store.storedBatches()
			for _, b := range batches {
				rows = append(rows, b...)
			}
			if err := inKeyOrder(evs, rows); err != nil {
				t.Fatalf("%v; batches %v", err, batches)
			}
			if len(batches) >= len(evs) {
				t.Fatalf("%d rows in %d batches: not batched", len(evs), len(batches))
			}
			state := "WAITING"
			if tt.paused {
				state = "PAUSED"
			}
			for _, r := range parkedAs(tp.store) {
				if !strings.HasPrefix(r, state+" ") {
					t.Fatalf("row %q, want %s", r, state)
				}
			}
			label := delivery.HeldWaiting
			if tt.paused {
				label = delivery.HeldPaused
			}
			if got := counterValue(t, tp.Metrics.EventsHeld.WithLabelValues(label)); got != float64(len(evs)) {
				t.Fatalf("held metric %v, want %d", got, len(evs))
			}
			for id, ok := range w.results {
				if !ok {
					t.Fatalf("the park of %s reported its row not stored", id)
				}
			}
			if len(tt.fail) > 0 && tp.logs.count("could not record held events in the status table; retrying") == 0 {
				t.Fatalf("the failed batch was not logged:\n%s", tp.logs.String())
			}
		})
	}
}

// TestHeldParksEndWithTheSession: the session ends (its context
// cancelled) while a batch is blocked in the status table; every park
// returns within a deadline, those of the unstored rows reporting them
// not stored, and the checkpoint passes no event whose row is not stored:
// those stay in flight, to be sent again after a restart.
func TestHeldParksEndWithTheSession(t *testing.T) {
	tests := []struct {
		name    string
		blocked int // the call blocked when the session ends
	}{
		{name: "the first batch blocked", blocked: 1},
		{name: "the second batch blocked", blocked: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &batchStore{fakeStore: &fakeStore{held: []status.Key{{Topic: "orders", Key: "k"}, {Topic: "orders", Key: "j"}}},
				entered: make(chan []string, 100), gate: make(chan struct{}), block: map[int]bool{tt.blocked: true}}
			tp, w := newBatchPipeline(t, store)
			tp.ordered(t, true)
			evs := interleave(5, "orders")
			// The first event's row is the first batch; the others are
			// read while it is being stored, so they make a second.
			tp.heldStream(t, evs[:1], 0)
			var ends []pglogrepl.LSN
			stored := map[string]bool{}
			for call := 1; ; call++ {
				var ids []string
				select {
				case ids = <-store.entered:
				case <-time.After(5 * time.Second):
					t.Fatalf("batch %d not tried within 5 s", call)
				}
				if call == 1 {
					ends = tp.heldStream(t, evs, 1)
				}
				store.gate <- struct{}{}
				if call == tt.blocked {
					break
				}
				for _, id := range ids {
					stored[id] = true
				}
			}
			tp.cancel() // the session ends while the batch is blocked
			w.wait(t)
			tp.events(t, pglogrepl.LSN(0x200+0x100*len(evs)), testEv{"late", "orders", "k"}) // a park begun after the end
			w.wait(t)
			var rows []string
			for _, b := range store.storedBatches() {
				rows = append(rows, b...)
			}
			if len(rows) != len(stored) {
				t.Fatalf("stored %v after the end, want only %d rows stored before it", rows, len(stored))
			}
			w.mu.Lock()
			for _, e := range append(evs, testEv{id: "late"}) {
				if got, ok := w.results[e.id]; !ok || got != stored[e.id] {
					t.Errorf("the park of %s returned %v (returned: %v), want %v", e.id, got, ok, stored[e.id])
				}
			}
			w.mu.Unlock()
			if got, want := tp.Tracker.Safe(), safeAfter(evs, ends, stored); got != want {
				t.Fatalf("safe %s after the end, want %s: past an event whose row is not stored", got, want)
			}
			if n, _ := tp.Tracker.InFlight(); n != int64(len(evs)+1-len(stored)) {
				t.Fatalf("%d events in flight, want the %d not stored", n, len(evs)+1-len(stored))
			}
		})
	}
}
