package keyorder

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/status"
)

// Holds past maxEntries: a key parked past them is held by its hash only,
// and is held as surely as a whole hold.

// spillOrder returns an Order that keeps at most two holds whole, with
// keys k0 to k(n-1) of topic orders parked in turn: k0 and k1 kept whole,
// the others spilled.
func spillOrder(t *testing.T, n int) *Order {
	t.Helper()
	o := New(true, slog.New(slog.DiscardHandler))
	o.maxEntries = 2
	for i := range n {
		o.EndPark(o.BeginPark(keyEvent(fmt.Sprint("p", i), i), uint64(i+1), false), true)
	}
	return o
}

// keyEvent is an event of topic orders, id id, with key k<i>.
func keyEvent(id string, i int) *decoder.Event {
	return &decoder.Event{ID: []byte(id), Topic: "orders", Key: []byte(fmt.Sprint("k", i))}
}

func key(i int) status.Key { return status.Key{Topic: "orders", Key: fmt.Sprint("k", i)} }

// TestSpilledKeysStayHeld: of ten keys parked with two holds kept whole,
// every one's later events wait, and another key's pass; a spilled key's
// hold is whole again once an event of it met Check.
func TestSpilledKeysStayHeld(t *testing.T) {
	o := spillOrder(t, 10)
	if o.entries > o.maxEntries || len(o.spilled) == 0 {
		t.Fatalf("%d holds kept whole, %d spilled: want at most %d whole, the others spilled", o.entries, len(o.spilled), o.maxEntries)
	}
	if held := o.HoldRows([]status.Key{key(9)}); len(held) != 0 || o.keys["orders"][key(9).Key] != nil {
		t.Fatalf("a claim of a spilled key held %v anew, want nothing: its hash holds it", held)
	}
	for i := range 10 {
		if v, _ := o.Check(keyEvent(fmt.Sprint("e", i), i), uint64(100+i)); v != Waiting {
			t.Errorf("an event of parked key k%d: %v, want Waiting", i, v)
		}
	}
	if v, _ := o.Check(keyEvent("free", 99), 200); v != Pass {
		t.Fatalf("an event of a key never parked: %v, want Pass", v)
	}
}

// TestSpilledKeyClaimedNotDelivered: a claim of a spilled key makes it a
// whole hold while it drains; when the claim does not deliver its rows
// (a topic Kafka refuses: the poller tries the keys again and again),
// the hold is spilled again at the claim's end, so that retries over
// many keys do not make them all whole again.
func TestSpilledKeyClaimedNotDelivered(t *testing.T) {
	o := spillOrder(t, 10)
	end := o.BeginDrain([]status.Key{key(8), key(9)})
	if o.keys["orders"][key(9).Key] == nil {
		t.Fatal("a claimed spilled key is not a whole hold while it drains")
	}
	end() // not delivered: no release
	if o.entries > o.maxEntries {
		t.Fatalf("%d whole holds after the claim, want at most %d", o.entries, o.maxEntries)
	}
	for _, i := range []int{8, 9} {
		if v, _ := o.Check(keyEvent(fmt.Sprint("after", i), i), 100); v != Waiting {
			t.Fatalf("an event of k%d after a claim that did not deliver it: %v, want Waiting", i, v)
		}
	}
}

// TestHoldRowOfASpilledKey: a row of a spilled key that the relay did not
// park (a corrected topic) holds nothing anew, and its undo (the change
// did not commit) leaves the key held: its hash still says it has rows.
func TestHoldRowOfASpilledKey(t *testing.T) {
	o := spillOrder(t, 10)
	undo := o.HoldRow(key(9))
	ev := keyEvent("inflight", 9)
	var p Place
	o.IntoProducer(keyEvent("other", 9), &p) // the key's flight counter is busy
	if v, _ := o.Check(ev, 100); v != Alone {
		t.Fatalf("an event of a spilled key with a record in the producer: %v, want Alone", v)
	}
	undo()
	if held, _ := o.ParkedHeld(ev); !held {
		t.Fatal("after the undo, an event waiting alone is no longer parked behind the key's held rows")
	}
}

// TestSpilledKeysReleased: the poller's delivery of a spilled key asks
// the store, and releases the key when it has no held row left, not
// while it has, nor when the key was parked and spilled again while the
// store was asked.
func TestSpilledKeysReleased(t *testing.T) {
	tests := []struct {
		name      string
		still     bool // the store still has held rows of the key
		reparked  bool // the key is parked (and spilled) again during the query
		wantEvent Verdict
	}{
		{"no row left", false, false, Pass},
		{"rows left", true, false, Waiting},
		{"parked again during the query", false, true, Waiting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := spillOrder(t, 10)
			const i = 9 // spilled
			if o.keys["orders"][key(i).Key] != nil {
				t.Fatalf("k%d is kept whole, want spilled", i)
			}
			asked := 0
			store := &fakeStore{still: map[status.Key]bool{key(i): tt.still}, stillHook: func() {
				asked++
				if tt.reparked {
					o.EndPark(o.BeginPark(keyEvent("again", i), 50, false), true)
				}
			}}
			if err := o.ReleaseDelivered(context.Background(), store, []status.Key{key(i)}); err != nil {
				t.Fatal(err)
			}
			if asked != 1 {
				t.Fatalf("the store was asked %d times, want once", asked)
			}
			if v, _ := o.Check(keyEvent("after", i), 60); v != tt.wantEvent {
				t.Fatalf("an event of the key after the delivery: %v, want %v", v, tt.wantEvent)
			}
		})
	}
}

// TestSpilledKeyDrainsInMemory: while a claim delivers a spilled key's
// rows, its new events wait in memory (Alone) as a whole hold's do, and
// go once the claim delivered its last rows.
func TestSpilledKeyDrainsInMemory(t *testing.T) {
	o := spillOrder(t, 10)
	if o.keys["orders"][key(9).Key] != nil {
		t.Fatal("k9 is kept whole, want spilled")
	}
	end := o.BeginDrain([]status.Key{key(9)})
	ev := keyEvent("new", 9)
	if v, _ := o.Check(ev, 100); v != Alone {
		t.Fatalf("an event of a spilled key being drained: %v, want Alone", v)
	}
	if err := o.ReleaseDelivered(context.Background(), &fakeStore{still: map[status.Key]bool{}}, []status.Key{key(9)}); err != nil {
		t.Fatal(err)
	}
	if end() {
		t.Fatal("the drain was carried over, want ended: the key's last rows were delivered")
	}
	if held, _ := o.ParkedHeld(ev); held {
		t.Fatal("the waiting event is parked behind the key's rows, want produced: they were delivered")
	}
	o.DoneAlone(ev)
	if v, _ := o.Check(keyEvent("later", 9), 101); v != Pass {
		t.Fatalf("an event of the key after its drain: %v, want Pass", v)
	}
}

// TestBusyKeyNotSpilled: a key with a record in the producer keeps its
// whole hold, so that the record, should it fail, is parked behind the
// key's rows rather than produced alone before them.
func TestBusyKeyNotSpilled(t *testing.T) {
	o := spillOrder(t, 3)
	ev := keyEvent("inflight", 7)
	var p Place
	o.IntoProducer(ev, &p)
	o.EndPark(o.BeginPark(keyEvent("parked", 7), 10, false), true)
	if o.keys["orders"][key(7).Key] == nil {
		t.Fatal("a key with a record in the producer was spilled")
	}
	o.HoldAlone(ev, 11) // its batch failed
	if held, _ := o.ParkedHeld(ev); !held {
		t.Fatal("a failed record of a parked key goes alone, want parked behind the key's rows")
	}
	// Once idle, it is spilled as later parks end.
	o.OutOfProducer(&p)
	o.DoneAlone(ev)
	o.EndPark(o.BeginPark(keyEvent("later", 8), 12, false), true)
	if o.keys["orders"][key(7).Key] != nil || o.entries > o.maxEntries {
		t.Fatalf("k7 still whole (%d holds whole, want at most %d) once idle", o.entries, o.maxEntries)
	}
	if v, _ := o.Check(keyEvent("next", 7), 13); v != Waiting {
		t.Fatalf("an event of k7 once spilled: %v, want Waiting", v)
	}
}

// TestRebuildSpillsPastTheLimit: the held keys read at a session's start
// past maxEntries are held by their hash; each is held.
func TestRebuildSpillsPastTheLimit(t *testing.T) {
	o := New(true, slog.New(slog.DiscardHandler))
	o.maxEntries = 2
	var held []status.Key
	for i := range 6 {
		held = append(held, key(i))
	}
	o.Rebuild(held, nil, nil)
	if o.entries != 2 || len(o.spilled) != 4 {
		t.Fatalf("%d holds whole, %d spilled: want 2 and 4", o.entries, len(o.spilled))
	}
	for i := range 6 {
		if v, _ := o.Check(keyEvent(fmt.Sprint("e", i), i), uint64(i+1)); v != Waiting {
			t.Errorf("an event of held key k%d: %v, want Waiting", i, v)
		}
	}
}

// BenchmarkHeldKeyMemory reports the heap a held key takes once parked,
// whole and spilled (a key's past maxHeldEntries): go test -run '^$'
// -bench HeldKeyMemory ./relay/keyorder/
func BenchmarkHeldKeyMemory(b *testing.B) {
	for _, maxEntries := range []int{1 << 30, 0} {
		name := map[bool]string{true: "whole", false: "spilled"}[maxEntries > 0]
		b.Run(name, func(b *testing.B) {
			const n = 100_000
			evs := make([]*decoder.Event, n)
			for i := range evs {
				evs[i] = &decoder.Event{ID: []byte(fmt.Sprintf("%036d", i)), Topic: "orders", Key: []byte(fmt.Sprintf("customer-%012d", i))}
			}
			var perKey float64
			for range b.N {
				o := New(true, slog.New(slog.DiscardHandler))
				o.maxEntries = maxEntries
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for i, ev := range evs {
					o.EndPark(o.BeginPark(ev, uint64(i+1), false), true)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perKey = float64(after.HeapAlloc-before.HeapAlloc) / n
				runtime.KeepAlive(o)
			}
			b.ReportMetric(perKey, "bytes/key")
		})
	}
}
