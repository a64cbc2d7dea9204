package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/delivery/atleastonce"
	"github.com/cdc-relay/cdc-relay/relay/delivery/lanes"
)

// A publisher's lanes as at-least-once delivery's producer, with the
// fake status store: a webhook's refusals and outages park its events in
// key order, and the position passes each once it is delivered or parked.

// hookReceiver answers each request with answer, and keeps what it took.
type hookReceiver struct {
	mu     sync.Mutex
	took   []string // ids, in the order taken
	answer func(ids []string) lanes.Answer
}

func (h *hookReceiver) Send(_ context.Context, recs []*kgo.Record) lanes.Answer {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = header(r, "id")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var a lanes.Answer
	if h.answer != nil {
		a = h.answer(ids)
	}
	if a.Err == nil {
		h.took = append(h.took, ids...)
	}
	return a
}

func (h *hookReceiver) taken() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.took)
}

// withLanes makes tp's delivery at-least-once over a publisher's lanes
// sending to h, ordered by key, as a webhook publisher's engine is.
func (tp *testPipeline) withLanes(t *testing.T, h *hookReceiver, c lanes.Config) {
	t.Helper()
	o := tp.ordered(t, true)
	inflight := func(r *kgo.Record) *delivery.Inflight { return r.Context.(*delivery.Inflight) }
	c.Publisher = "partner"
	c.OrderKey = func(r *kgo.Record) []byte { return o.OrderKey(&inflight(r).Event) }
	c.Held = func(r *kgo.Record) bool { held, _ := o.ParkedHeld(&inflight(r).Event); return held }
	c.Backoff = func(int, time.Duration) time.Duration { return time.Millisecond }
	c.Log = tp.Log
	p := lanes.New(h, c)
	t.Cleanup(p.Close)
	tp.Pipeline = New(tp.Ledger, Options{Delivery: atleastonce.New(tp.Ledger, p)})
}

// waitParked waits until the store recorded n rows.
func (tp *testPipeline) waitParked(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		parked := parkedAs(tp.store)
		if len(parked) >= n || time.Now().After(deadline) {
			return parked
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLanesHoldAKeyBehindARefusal: the receiver refuses one event (a
// 4xx): it is parked FAILED, its key's later events WAITING behind it,
// none of them sent; the other keys' events are delivered in order; the
// position passes all.
func TestLanesHoldAKeyBehindARefusal(t *testing.T) {
	for _, batch := range []int{1, 3} {
		t.Run(fmt.Sprint("batch ", batch), func(t *testing.T) {
			tp := newTestPipeline(t, &fakeStore{})
			gate := make(chan struct{})
			h := &hookReceiver{answer: func(ids []string) lanes.Answer {
				if slices.Contains(ids, "k2") {
					<-gate // k's later events reach the lane before k2's refusal
					return lanes.Answer{Err: errors.New("422 Unprocessable Entity")}
				}
				return lanes.Answer{}
			}}
			tp.withLanes(t, h, lanes.Config{Lanes: 4, Batch: batch})
			k := keyed(8, "k", "wallet", "k")
			others := keyed(20, "o", "wallet", "other")
			tp.events(t, 0x200, append(append([]testEv(nil), k[:4]...), others[:10]...)...)
			tp.events(t, 0x300, append(append([]testEv(nil), k[4:]...), others[10:]...)...)
			close(gate)
			tp.waitIdle(t)
			var wantParked []string
			for _, e := range k {
				switch {
				case e.id == "k2" || batch == 3 && e.id == "k0" || batch == 3 && e.id == "k1":
					// A batch refused is refused whole: k0 and k1 went in k2's request.
					wantParked = append(wantParked, "FAILED "+e.id)
				case e.id > "k2":
					wantParked = append(wantParked, "WAITING "+e.id)
				}
			}
			if got := parkedAs(tp.store); !slices.Equal(got, wantParked) {
				t.Fatalf("parked %v\nwant   %v", got, wantParked)
			}
			var gotK, gotO []string
			for _, id := range h.taken() {
				if strings.HasPrefix(id, "k") {
					gotK = append(gotK, id)
				} else {
					gotO = append(gotO, id)
				}
			}
			wantK := []string{"k0", "k1"}
			if batch == 3 {
				wantK = nil
			}
			if !slices.Equal(gotK, wantK) {
				t.Fatalf("the receiver took %v of key k, want %v", gotK, wantK)
			}
			if want := want("", others...); len(gotO) != len(want) {
				t.Fatalf("the receiver took %d of the other key, want %d", len(gotO), len(want))
			}
			for i, id := range gotO {
				if id != others[i].id {
					t.Fatalf("the other key's events taken as %v: out of order", gotO)
				}
			}
			if got := tp.Tracker.Safe(); got != 0x300 {
				t.Fatalf("safe %s, want 0/300", got)
			}
		})
	}
}

// TestLanesOutageParksWithoutWaiting: a receiver that keeps failing holds
// the stream for RetryFor at most: its events are parked, each key's
// first FAILED and the rest WAITING behind it, in stream order; nothing
// is lost, and the position passes them all.
func TestLanesOutageParksWithoutWaiting(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	h := &hookReceiver{answer: func([]string) lanes.Answer {
		return lanes.Answer{Err: errors.New("503 Service Unavailable"), Retry: true}
	}}
	tp.withLanes(t, h, lanes.Config{Lanes: 4, RetryFor: 20 * time.Millisecond, ProbeEvery: time.Hour})
	var evs []testEv
	for n := range 60 {
		evs = append(evs, testEv{fmt.Sprint("e", n), "wallet", fmt.Sprint("k", n%6)})
	}
	tp.events(t, 0x200, evs[:30]...)
	tp.events(t, 0x300, evs[30:]...)
	tp.waitIdle(t)
	parked := tp.waitParked(t, 60)
	if len(parked) != 60 || len(h.taken()) != 0 {
		t.Fatalf("parked %d, delivered %d; want all 60 parked", len(parked), len(h.taken()))
	}
	// Per key: the first FAILED, the rest WAITING, in stream order.
	for k := range 6 {
		var got []string
		for _, p := range parked {
			state, id, _ := strings.Cut(p, " ")
			var n int
			fmt.Sscanf(id, "e%d", &n)
			if n%6 == k {
				got = append(got, state+" "+id)
			}
		}
		for i, p := range got {
			wantState := "WAITING"
			if i == 0 {
				wantState = "FAILED"
			}
			if p != fmt.Sprintf("%s e%d", wantState, k+6*i) {
				t.Fatalf("key k%d parked as %v", k, got)
			}
		}
	}
	if got := tp.Tracker.Safe(); got != 0x300 {
		t.Fatalf("safe %s, want 0/300", got)
	}
	if n := strings.Count(tp.logs.String(), "the webhook receiver is failing"); n != 1 {
		t.Fatalf("outage logged %d times, want once", n)
	}
}
