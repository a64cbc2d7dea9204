package keyorder

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/status"
)

// The order alone: holds, releases and the rows it did not park. The
// stream's walk through it (parks, the alone queue, paused topics) is
// tested with the pipeline, in relay.

// fakeStore answers StillHeld from still.
type fakeStore struct {
	mu        sync.Mutex
	held      []status.Key        // HeldKeys' answer
	still     map[status.Key]bool // StillHeld's answer
	stillHook func()              // called as StillHeld begins
}

// HeldKeys returns held.
func (f *fakeStore) HeldKeys(context.Context) ([]status.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]status.Key(nil), f.held...), nil
}

// StillHeld returns the keys of keys in still; it calls stillHook first.
func (f *fakeStore) StillHeld(_ context.Context, keys []status.Key) ([]status.Key, error) {
	if f.stillHook != nil {
		f.stillHook()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []status.Key
	for _, k := range keys {
		if f.still[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// TestOrderReleasedByTheDelivery: the poller's Delivered releases a key
// with no held row left, unless a park of it began during the query or
// is under way.
func TestOrderReleasedByTheDelivery(t *testing.T) {
	k := status.Key{Topic: "orders", Key: "k"}
	ev := &decoder.Event{ID: []byte("x"), Topic: "orders", Key: []byte("k")}
	tests := []struct {
		name     string
		still    bool                  // the store still has held rows of k
		during   func(o *Order)        // while the store is asked
		before   func(o *Order) func() // before; returns what to do after
		released bool
	}{
		{name: "no held row left", released: true},
		{name: "a held row left", still: true},
		{name: "a park began during the query", during: func(o *Order) { o.EndPark(o.BeginPark(ev, 7, false), true) }},
		{name: "a park under way", before: func(o *Order) func() {
			t := o.BeginPark(ev, 7, false)
			return func() { o.EndPark(t, true) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{held: []status.Key{k}, still: map[status.Key]bool{k: tt.still}}
			o := New(true, slog.New(slog.DiscardHandler))
			held, _ := store.HeldKeys(context.Background())
			o.Rebuild(held, nil, nil)
			if tt.during != nil {
				store.stillHook = func() { tt.during(o) }
			}
			after := func() {}
			if tt.before != nil {
				after = tt.before(o)
			}
			if err := o.Release(context.Background(), store, []status.Key{k}); err != nil {
				t.Fatal(err)
			}
			after()
			if v, _ := o.Check(ev, 1); (v == Pass) != tt.released {
				t.Fatalf("after the release, the key's next event: %v; want released %v", v, tt.released)
			}
		})
	}
}

// TestOrderHoldRow: a row the relay did not park (a corrected topic, a
// claimed row) holds its key's next events until released; the undo of a
// change that did not commit lets them pass again, but not once the key
// was parked since, nor a key held before; a key exactly-once's redo holds
// from its parked event on stays so; keys not ordered hold nothing.
func TestOrderHoldRow(t *testing.T) {
	k := status.Key{Topic: "fixed", Key: "k"}
	ev := &decoder.Event{ID: []byte("x"), Topic: "fixed", Key: []byte("k")}
	tests := []struct {
		name    string
		byKey   bool
		before  func(o *Order) // before the hold
		between func(o *Order) // between the hold and its undo
		undo    bool
		want    Verdict // of the key's next event, at the end
	}{
		{name: "held", byKey: true, want: Waiting},
		{name: "undone", byKey: true, undo: true, want: Pass},
		{name: "undone after a park of the key", byKey: true, undo: true,
			between: func(o *Order) { o.EndPark(o.BeginPark(ev, 7, false), true) }, want: Waiting},
		{name: "undone, the key held before", byKey: true, undo: true,
			before: func(o *Order) { o.Rebuild([]status.Key{k}, nil, nil) }, want: Waiting},
		{name: "a deferred key stays deferred", byKey: true, before: func(o *Order) {
			o.Rebuild([]status.Key{k}, nil, map[status.Key]EventKey{k: {commit: 1, id: "p", topic: "fixed"}})
		}, want: Pass},
		{name: "keys not ordered", want: Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := New(tt.byKey, slog.New(slog.DiscardHandler))
			if tt.before != nil {
				tt.before(o)
			}
			undo := o.HoldRow(k)
			if tt.between != nil {
				tt.between(o)
			}
			if tt.undo {
				undo()
			}
			if v, _ := o.Check(ev, 9); v != tt.want {
				t.Fatalf("the key's next event: %v, want %v", v, tt.want)
			}
		})
	}
}

// TestOrderHoldRowsReleased: holdRows returns only the keys it held, and
// the poller's Delivered releases them once their rows are gone.
func TestOrderHoldRowsReleased(t *testing.T) {
	a, b := status.Key{Topic: "fixed", Key: "a"}, status.Key{Topic: "fixed", Key: "b"}
	o := New(true, slog.New(slog.DiscardHandler))
	o.Rebuild([]status.Key{a}, nil, nil)
	if held := o.HoldRows([]status.Key{a, b}); !slices.Equal(held, []status.Key{b}) {
		t.Fatalf("holdRows held %v, want only b (a was held)", held)
	}
	if held := o.HoldRows([]status.Key{b}); len(held) != 0 {
		t.Fatalf("holdRows held %v again", held)
	}
	evB := &decoder.Event{ID: []byte("y"), Topic: "fixed", Key: []byte("b")}
	if v, _ := o.Check(evB, 3); v != Waiting {
		t.Fatalf("b's next event: %v, want it waiting", v)
	}
	if err := o.Release(context.Background(), &fakeStore{}, []status.Key{b}); err != nil {
		t.Fatal(err)
	}
	if v, _ := o.Check(evB, 4); v != Pass {
		t.Fatalf("b's next event after its row was delivered: %v, want pass", v)
	}
}

// TestWaitQueued: a park's WaitQueued returns once its key's previous park
// is queued (true, before that one committed), or once that one ended
// without queueing: true if it committed its row, false if it gave up
// (it does not hang); the key's first park does not wait.
func TestWaitQueued(t *testing.T) {
	ev := &decoder.Event{ID: []byte("x"), Topic: "orders", Key: []byte("k")}
	tests := []struct {
		name string
		prev func(o *Order, prev *Turn) // what the previous park does
		want bool
	}{
		// It has not ended: its row is not committed yet.
		{name: "previous park queued", prev: func(_ *Order, prev *Turn) { prev.Queued() }, want: true},
		{name: "previous park queued, then gave up", prev: func(o *Order, prev *Turn) { prev.Queued(); o.EndPark(prev, false) }, want: true},
		{name: "previous park committed without queueing", prev: func(o *Order, prev *Turn) { o.EndPark(prev, true) }, want: true},
		{name: "previous park gave up without queueing", prev: func(o *Order, prev *Turn) { o.EndPark(prev, false) }, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := New(true, slog.New(slog.DiscardHandler))
			prev := o.BeginPark(ev, 1, false)
			if !prev.WaitQueued() {
				t.Fatal("the key's first park may not go on")
			}
			next := o.BeginPark(ev, 2, false)
			got := make(chan bool, 1)
			go func() { got <- next.WaitQueued() }()
			select {
			case ok := <-got:
				t.Fatalf("WaitQueued returned %v before the previous park was queued or ended", ok)
			case <-time.After(10 * time.Millisecond): // room for a wrong early return
			}
			tt.prev(o, prev)
			select {
			case ok := <-got:
				if ok != tt.want {
					t.Fatalf("WaitQueued: %v, want %v", ok, tt.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("WaitQueued still waiting 5 s after the previous park was queued or ended")
			}
			o.EndPark(next, true)
		})
	}
}

// TestParksQueueInOrder: a key's parks, started in any order, queue in
// the order they began (BeginPark), each once the one before is queued;
// another key's parks do not wait for them.
func TestParksQueueInOrder(t *testing.T) {
	o := New(true, slog.New(slog.DiscardHandler))
	const n = 20
	var turns []*Turn
	for i := range n {
		key := "k"
		if i%2 == 1 {
			key = "j"
		}
		turns = append(turns, o.BeginPark(&decoder.Event{ID: []byte(fmt.Sprint(i)), Topic: "orders", Key: []byte(key)}, uint64(i+1), false))
	}
	var mu sync.Mutex
	var queued []int
	var wg sync.WaitGroup
	for i := n - 1; i >= 0; i-- { // the last park starts first
		wg.Go(func() {
			tr := turns[i]
			if !tr.WaitQueued() {
				t.Errorf("park %d may not go on", i)
			}
			mu.Lock()
			queued = append(queued, i)
			mu.Unlock()
			tr.Queued()
			o.EndPark(tr, true)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the parks still wait 5 s after they began")
	}
	var k, j []int
	for _, i := range queued {
		if i%2 == 0 {
			k = append(k, i)
		} else {
			j = append(j, i)
		}
	}
	if !slices.IsSorted(k) || !slices.IsSorted(j) || len(k)+len(j) != n {
		t.Fatalf("queued %v: each key's parks not in the order they began", queued)
	}
}

// TestDrainWaitsInMemory: while a claim of the poller delivers a held
// key's rows (BeginDrain), the key's new events go to the alone queue,
// which may not take them until the drain ends. A claim that delivered
// the key's last held rows releases the key (Release), so they go to
// Kafka and the key returns to the stream once they are settled. One
// that delivered its rows with others left carries the drain over to
// the next claim, which takes it over if it claims the key, else ends
// it as it begins. A drain that ends with the key still held leaves the
// events to be parked behind its rows. A key not held is not drained.
func TestDrainWaitsInMemory(t *testing.T) {
	k := status.Key{Topic: "orders", Key: "k"}
	free := status.Key{Topic: "orders", Key: "free"}
	ev := func(id string) *decoder.Event {
		return &decoder.Event{ID: []byte(id), Topic: "orders", Key: []byte("k")}
	}
	// claim is one claim of k: released says what Release finds (nil: k
	// was not delivered), carried what its end must report.
	type claim struct {
		claimsK  bool
		released *bool
		carried  bool
	}
	yes, no := true, false
	tests := []struct {
		name     string
		claims   []claim
		released bool // the key is released in the end, not parked
	}{
		{"its last rows delivered", []claim{{claimsK: true, released: &yes}}, true},
		{"rows left, then the next claim delivers them", []claim{{claimsK: true, released: &no, carried: true}, {claimsK: true, released: &yes}}, true},
		{"rows left, the next claim does not claim the key", []claim{{claimsK: true, released: &no, carried: true}, {}}, false},
		{"its rows not delivered", []claim{{claimsK: true}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := New(true, slog.New(slog.DiscardHandler))
			woken := 0
			o.OnDrained(func() { woken++ })
			o.Rebuild([]status.Key{k}, nil, nil)
			var queued []*decoder.Event
			for i, c := range tt.claims {
				keys := []status.Key{free}
				if c.claimsK {
					keys = append(keys, k)
				}
				end := o.BeginDrain(keys)
				if c.claimsK {
					e := ev(fmt.Sprintf("e%d", i))
					if v, _ := o.Check(e, uint64(i+1)); v != Alone {
						t.Fatalf("claim %d: an event of the draining key: %v, want Alone", i+1, v)
					}
					queued = append(queued, e)
					if o.MayGoAlone(e) {
						t.Fatalf("claim %d: the alone queue may take an event of a key whose drain has not ended", i+1)
					}
				}
				if v, _ := o.Check(&decoder.Event{ID: []byte("f"), Topic: "orders", Key: []byte("free")}, 100); v != Pass {
					t.Fatalf("claim %d: an event of a key not held: %v, want Pass", i+1, v)
				}
				if c.released != nil {
					if err := o.ReleaseDelivered(context.Background(), &fakeStore{still: map[status.Key]bool{k: !*c.released}}, []status.Key{k}); err != nil {
						t.Fatal(err)
					}
				}
				if carried := end(); carried != c.carried {
					t.Fatalf("claim %d carried the drain over: %v, want %v", i+1, carried, c.carried)
				}
			}
			if !o.MayGoAlone(queued[0]) || woken == 0 {
				t.Fatalf("after the last claim: may go %v, woken %d times; want true, at least once", o.MayGoAlone(queued[0]), woken)
			}
			if held, _ := o.ParkedHeld(queued[0]); held == tt.released {
				t.Fatalf("the queued events are parked behind the key's rows: %v, want %v", held, !tt.released)
			}
			next := ev("next")
			if v, _ := o.Check(next, 50); v != Alone {
				t.Fatalf("an event after the queued ones: %v, want Alone, behind them", v)
			}
			for _, e := range append(queued, next) {
				o.DoneAlone(e)
			}
			want := Waiting
			if tt.released {
				want = Pass
			}
			if v, _ := o.Check(ev("last"), 60); v != want {
				t.Fatalf("once the queued events are settled: %v, want %v", v, want)
			}
		})
	}
}

// TestDrainHoldsAtMostItsCap: past drainCap events of a draining key
// waiting, the alone queue may take the earliest (to park it behind the
// key's rows), so that a slow claim holds no more of the limits.
func TestDrainHoldsAtMostItsCap(t *testing.T) {
	k := status.Key{Topic: "orders", Key: "k"}
	o := New(true, slog.New(slog.DiscardHandler))
	o.Rebuild([]status.Key{k}, nil, nil)
	end := o.BeginDrain([]status.Key{k})
	defer end()
	first := &decoder.Event{ID: []byte("0"), Topic: "orders", Key: []byte("k")}
	for i := range drainCap {
		if v, _ := o.Check(&decoder.Event{ID: []byte(fmt.Sprint(i)), Topic: "orders", Key: []byte("k")}, uint64(i+1)); v != Alone {
			t.Fatalf("event %d: %v, want Alone", i, v)
		}
		if i < drainCap-1 && o.MayGoAlone(first) {
			t.Fatalf("with %d events waiting, the alone queue may take one: want it to wait for the drain", i+1)
		}
	}
	if !o.MayGoAlone(first) {
		t.Fatalf("with %d events waiting, the alone queue may not take one: want the earliest parked", drainCap)
	}
	o.DoneAlone(first)
	if o.MayGoAlone(first) {
		t.Fatal("below the cap again, the alone queue may take one: want it to wait for the drain")
	}
}

// TestDrainHoldsAtMostItsCapBytes: past drainCapBytes of a draining key's
// events waiting, the alone queue may take them, whatever their count.
func TestDrainHoldsAtMostItsCapBytes(t *testing.T) {
	k := status.Key{Topic: "orders", Key: "k"}
	o := New(true, slog.New(slog.DiscardHandler))
	o.Rebuild([]status.Key{k}, nil, nil)
	end := o.BeginDrain([]status.Key{k})
	defer end()
	small := &decoder.Event{ID: []byte("s"), Topic: "orders", Key: []byte("k"), Value: make([]byte, 1<<20)}
	big := &decoder.Event{ID: []byte("b"), Topic: "orders", Key: []byte("k"), Value: make([]byte, drainCapBytes)}
	for i, ev := range []*decoder.Event{small, big} {
		if v, _ := o.Check(ev, uint64(i+1)); v != Alone {
			t.Fatalf("event %s: %v, want Alone", ev.ID, v)
		}
		if may := o.MayGoAlone(small); may != (i == 1) {
			t.Fatalf("after event %s: the alone queue may take the earliest: %v, want %v", ev.ID, may, i == 1)
		}
	}
	o.DoneAlone(big)
	if o.MayGoAlone(small) {
		t.Fatal("below the byte cap again, the alone queue may take one: want it to wait for the drain")
	}
}

// TestOrderHoldReload: the key of a reload row (adopted, reset) held
// before the stream holds its events, as Waiting, and no other key's,
// until the poller's Delivered finds none of its rows held, whether or
// not an event of it came meanwhile; keys not ordered hold nothing.
func TestOrderHoldReload(t *testing.T) {
	k := status.Key{Topic: "orders", Key: "k"}
	ev := &decoder.Event{ID: []byte("x"), Topic: "orders", Key: []byte("k")}
	other := &decoder.Event{ID: []byte("y"), Topic: "orders", Key: []byte("other")}
	otherTopic := &decoder.Event{ID: []byte("z"), Topic: "payments", Key: []byte("k")}
	for _, met := range []bool{false, true} {
		t.Run(fmt.Sprintf("an event of it met before the release: %v", met), func(t *testing.T) {
			store := &fakeStore{still: map[status.Key]bool{k: true}}
			o := New(true, slog.New(slog.DiscardHandler))
			o.HoldReload(k.Topic, []byte(k.Key))
			if !o.Holding() {
				t.Fatal("a reload key held, but the order says nothing is")
			}
			for _, e := range []*decoder.Event{other, otherTopic} {
				if v, _ := o.Check(e, 1); v != Pass {
					t.Fatalf("%s/%s, another key: %v, want Pass", e.Topic, e.Key, v)
				}
			}
			if met {
				if v, _ := o.Check(ev, 2); v != Waiting {
					t.Fatalf("the key's event: %v, want Waiting", v)
				}
			}
			// Delivered, with a row of the key still held: held.
			if err := o.ReleaseDelivered(context.Background(), store, []status.Key{k}); err != nil {
				t.Fatal(err)
			}
			if v, _ := o.Check(ev, 3); v != Waiting {
				t.Fatalf("the key's event with a row of it held: %v, want Waiting", v)
			}
			store.still[k] = false
			if err := o.ReleaseDelivered(context.Background(), store, []status.Key{k}); err != nil {
				t.Fatal(err)
			}
			if v, _ := o.Check(ev, 4); v != Pass || o.Holding() {
				t.Fatalf("the key's event once none of its rows is held: %v (holding %v), want Pass", v, o.Holding())
			}
		})
	}
	unordered := New(false, slog.New(slog.DiscardHandler))
	unordered.HoldReload(k.Topic, []byte(k.Key))
	if v, _ := unordered.Check(ev, 1); v != Pass {
		t.Fatalf("keys not ordered: %v, want Pass", v)
	}
}

// TestOrderByTopic: ordering by topic, a parked event, with a key or
// without, holds every later event of its topic, keyed or not, and no
// other topic's; the poller's release of the topic (any key it names)
// lets them pass again.
func TestOrderByTopic(t *testing.T) {
	o := NewByTopic(slog.New(slog.DiscardHandler))
	parked := &decoder.Event{ID: []byte("1"), Topic: "events"}
	o.EndPark(o.BeginPark(parked, 1, false), true)
	for _, tc := range []struct {
		ev   *decoder.Event
		want Verdict
	}{
		{&decoder.Event{ID: []byte("2"), Topic: "events"}, Waiting},
		{&decoder.Event{ID: []byte("3"), Topic: "events", Key: []byte("k")}, Waiting},
		{&decoder.Event{ID: []byte("4"), Topic: "other"}, Pass},
		{&decoder.Event{ID: []byte("5"), Topic: "other", Key: []byte("k")}, Pass},
	} {
		if v, _ := o.Check(tc.ev, 2); v != tc.want {
			t.Errorf("event %s of %s, key %q: %v, want %v", tc.ev.ID, tc.ev.Topic, tc.ev.Key, v, tc.want)
		}
	}
	store := &fakeStore{still: map[status.Key]bool{}}
	if err := o.Release(context.Background(), store, []status.Key{{Topic: "events", Key: "k"}}); err != nil {
		t.Fatal(err)
	}
	if v, _ := o.Check(&decoder.Event{ID: []byte("6"), Topic: "events"}, 3); v != Pass || o.Holding() {
		t.Fatalf("after the topic's release: %v (holding %v), want Pass", v, o.Holding())
	}
	// A reload row's topic, held before the stream, holds the topic.
	o.HoldReload("events", []byte("any"))
	if v, _ := o.Check(&decoder.Event{ID: []byte("7"), Topic: "events", Key: []byte("other")}, 4); v != Waiting {
		t.Fatalf("an event of a topic a reload row holds: %v, want Waiting", v)
	}
}

// TestOrderReloadKeysNotAsked: the poller's delivery of a key held only
// by a reload row's hash (a switch-over's backlog, a thousand keys a
// claim) asks the store nothing and keeps the hash; the claim does not
// make it a held key either.
func TestOrderReloadKeysNotAsked(t *testing.T) {
	k := status.Key{Topic: "orders", Key: "k"}
	asked := 0
	store := &fakeStore{still: map[status.Key]bool{}, stillHook: func() { asked++ }}
	o := New(true, slog.New(slog.DiscardHandler))
	o.HoldReload(k.Topic, []byte(k.Key))
	if held := o.HoldRows([]status.Key{k}); len(held) != 0 {
		t.Fatalf("the claim held %v anew, want nothing: the hash holds it", held)
	}
	if err := o.ReleaseDelivered(context.Background(), store, []status.Key{k}); err != nil {
		t.Fatal(err)
	}
	if asked != 0 {
		t.Fatalf("StillHeld asked %d times, want never", asked)
	}
	if v, _ := o.Check(&decoder.Event{ID: []byte("x"), Topic: "orders", Key: []byte("k")}, 1); v != Waiting {
		t.Fatalf("the key's event after its backlog's delivery: %v, want Waiting (released with that row)", v)
	}
}

// TestOrderByTopics: with a set of topics ordered by topic, an event of
// one of them is ordered by its topic (the empty key), with a key or
// without; an event of another topic by its record key, and not at all
// without one.
func TestOrderByTopics(t *testing.T) {
	o := NewByTopics(slog.New(slog.DiscardHandler), []string{"events", "audit"})
	for _, tc := range []struct {
		topic, key string
		nilKey     bool
		want       []byte // OrderKey
		norm       status.Key
	}{
		{topic: "events", nilKey: true, want: []byte{}, norm: status.Key{Topic: "events"}},
		{topic: "events", key: "k", want: []byte{}, norm: status.Key{Topic: "events"}},
		{topic: "audit", key: "k", want: []byte{}, norm: status.Key{Topic: "audit"}},
		{topic: "orders", key: "k", want: []byte("k"), norm: status.Key{Topic: "orders", Key: "k"}},
		{topic: "orders", nilKey: true, want: nil, norm: status.Key{Topic: "orders"}},
	} {
		ev := &decoder.Event{Topic: tc.topic, Key: []byte(tc.key)}
		if tc.nilKey {
			ev.Key = nil
		}
		got := o.OrderKey(ev)
		if !bytes.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("OrderKey(%s, %q) = %q, want %q", tc.topic, ev.Key, got, tc.want)
		}
		if n := o.norm(status.Key{Topic: tc.topic, Key: tc.key}); n != tc.norm {
			t.Errorf("norm(%s, %q) = %+v, want %+v", tc.topic, tc.key, n, tc.norm)
		}
	}

	o.EndPark(o.BeginPark(&decoder.Event{ID: []byte("1"), Topic: "events"}, 1, false), true)
	o.EndPark(o.BeginPark(&decoder.Event{ID: []byte("2"), Topic: "orders", Key: []byte("a")}, 2, false), true)
	for _, tc := range []struct {
		ev   *decoder.Event
		want Verdict
	}{
		{&decoder.Event{ID: []byte("3"), Topic: "events"}, Waiting},
		{&decoder.Event{ID: []byte("4"), Topic: "events", Key: []byte("z")}, Waiting},
		{&decoder.Event{ID: []byte("5"), Topic: "audit"}, Pass},
		{&decoder.Event{ID: []byte("6"), Topic: "orders", Key: []byte("a")}, Waiting},
		{&decoder.Event{ID: []byte("7"), Topic: "orders", Key: []byte("b")}, Pass},
		{&decoder.Event{ID: []byte("8"), Topic: "orders"}, Pass},
	} {
		if v, _ := o.Check(tc.ev, 3); v != tc.want {
			t.Errorf("event %s of %s, key %q: %v, want %v", tc.ev.ID, tc.ev.Topic, tc.ev.Key, v, tc.want)
		}
	}
	// The poller's delivery names the keys as the store does; both
	// released, nothing is held.
	store := &fakeStore{still: map[status.Key]bool{}}
	if err := o.Release(context.Background(), store, []status.Key{{Topic: "events", Key: "x"}, {Topic: "orders", Key: "a"}}); err != nil {
		t.Fatal(err)
	}
	if o.Holding() {
		t.Fatal("still holding after both keys' release")
	}
	// A reload row of a topic ordered by topic holds the topic; of
	// another, its key only.
	o.HoldReload("events", []byte("r"))
	o.HoldReload("orders", []byte("r"))
	for _, tc := range []struct {
		ev   *decoder.Event
		want Verdict
	}{
		{&decoder.Event{ID: []byte("9"), Topic: "events", Key: []byte("other")}, Waiting},
		{&decoder.Event{ID: []byte("10"), Topic: "orders", Key: []byte("other")}, Pass},
		{&decoder.Event{ID: []byte("11"), Topic: "orders", Key: []byte("r")}, Waiting},
	} {
		if v, _ := o.Check(tc.ev, 4); v != tc.want {
			t.Errorf("after reloads, event %s of %s, key %q: %v, want %v", tc.ev.ID, tc.ev.Topic, tc.ev.Key, v, tc.want)
		}
	}
	if NewByTopics(slog.New(slog.DiscardHandler), nil).OrderKey(&decoder.Event{Topic: "events"}) != nil {
		t.Error("NewByTopics with no topics orders an event without a key")
	}
}
