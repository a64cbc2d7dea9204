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

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/delivery/atleastonce"
	"github.com/cdc-relay/cdc-relay/relay/delivery/lanes"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
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
// sending with h, ordered by key, as a webhook publisher's engine is.
func (tp *testPipeline) withLanes(t *testing.T, h lanes.Sender, c lanes.Config) {
	t.Helper()
	o := tp.ordered(t, true)
	inflight := func(r *kgo.Record) *delivery.Inflight { return r.Context.(*delivery.Inflight) }
	c.Publisher = "partner"
	c.OrderKey = func(r *kgo.Record) []byte { return o.OrderKey(&inflight(r).Event) }
	c.Held = func(r *kgo.Record) bool {
		held, _ := o.ParkedHeld(&inflight(r).Event)
		return held || o.AloneHeld(&inflight(r).Event)
	}
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
			// A request is refused whole: with batches, k2's batch mates
			// (as many as the lane had queued) are refused with it. Key k
			// is then: delivered up to the refused request, its records
			// FAILED, every later one WAITING, none sent.
			parked := parkedAs(tp.store)
			first := -1
			var wantParked []string
			for _, p := range parked {
				if strings.HasPrefix(p, "FAILED k") && first < 0 {
					fmt.Sscanf(p, "FAILED k%d", &first)
				}
			}
			last := first
			for _, p := range parked {
				var n int
				if _, err := fmt.Sscanf(p, "FAILED k%d", &n); err == nil {
					last = n
				}
			}
			if first < 0 || first > 2 || last < 2 || last-first >= batch {
				t.Fatalf("parked %v: want k2's request FAILED, of %d records at most", parked, batch)
			}
			for n := first; n < 8; n++ {
				state := "WAITING"
				if n <= last {
					state = "FAILED"
				}
				wantParked = append(wantParked, fmt.Sprintf("%s k%d", state, n))
			}
			if !slices.Equal(parked, wantParked) {
				t.Fatalf("parked %v\nwant   %v", parked, wantParked)
			}
			var gotK, gotO []string
			for _, id := range h.taken() {
				if strings.HasPrefix(id, "k") {
					gotK = append(gotK, id)
				} else {
					gotO = append(gotO, id)
				}
			}
			var wantK []string
			for n := range first {
				wantK = append(wantK, fmt.Sprint("k", n))
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

// TestPublishersEachGetTheirCopy: an event routed to Kafka and a webhook
// goes to both; the webhook's refusal parks its copy in the webhook's
// rows and holds the key for the webhook only: Kafka takes every event,
// its store and its key order untouched; the position passes the events
// once both copies are settled.
func TestPublishersEachGetTheirCopy(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	kafkaOrder := tp.ordered(t, true)
	hookStore := &fakeStore{}
	hookOrder := keyorder.New(true, tp.Log)
	hl := tp.Ledger.ForPublisher(hookStore, hookOrder)
	h := &hookReceiver{answer: func(ids []string) lanes.Answer {
		if slices.Contains(ids, "e1") {
			return lanes.Answer{Err: errors.New("400 Bad Request")}
		}
		return lanes.Answer{}
	}}
	inflight := func(r *kgo.Record) *delivery.Inflight { return r.Context.(*delivery.Inflight) }
	lp := lanes.New(h, lanes.Config{Publisher: "partner",
		OrderKey: func(r *kgo.Record) []byte { return hookOrder.OrderKey(&inflight(r).Event) },
		Held:     func(r *kgo.Record) bool { held, _ := hookOrder.ParkedHeld(&inflight(r).Event); return held }})
	t.Cleanup(lp.Close)
	tp.Pipeline = New(tp.Ledger, Options{Delivery: atleastonce.New(tp.Ledger, tp.prod),
		Publishers: []Publisher{{Ledger: hl, Delivery: atleastonce.New(hl, lp)}},
		PublishersOf: func(_ int, topic string) []int {
			if topic == "wallet" {
				return []int{0, 1}
			}
			return []int{0}
		}})
	tp.events(t, 0x200, testEv{"e0", "wallet", "k"}, testEv{"e1", "wallet", "k"})
	tp.events(t, 0x300, testEv{"e2", "wallet", "k"}, testEv{"x0", "other", "k"})
	// The webhook parks e1 and e2 while Kafka has not answered yet.
	if got := tp.waitParked(t, 0); len(got) != 0 {
		t.Fatalf("Kafka's store parked %v", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(parkedAs(hookStore)) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := tp.Tracker.Safe(); got != 0x100 {
		t.Fatalf("safe %s before Kafka answered, want the start: the Kafka copies are in flight", got)
	}
	if got := tp.prod.answerBy(func(string) error { return nil }); !slices.Equal(got, []string{"e0", "e1", "e2", "x0"}) {
		t.Fatalf("Kafka took %v, want every event", got)
	}
	tp.waitIdle(t)
	if got := parkedAs(hookStore); !slices.Equal(got, []string{"FAILED e1", "WAITING e2"}) {
		t.Fatalf("the webhook's store parked %v, want FAILED e1, WAITING e2", got)
	}
	if got := parkedAs(tp.store); len(got) != 0 {
		t.Fatalf("Kafka's store parked %v, want nothing", got)
	}
	if got := h.taken(); !slices.Equal(got, []string{"e0"}) {
		t.Fatalf("the webhook took %v, want e0 only", got)
	}
	if held, _ := kafkaOrder.ParkedHeld(&decoder.Event{Topic: "wallet", Key: []byte("k")}); held {
		t.Fatal("the webhook's refusal holds Kafka's key")
	}
	if got := tp.Tracker.Safe(); got != 0x300 {
		t.Fatalf("safe %s, want 0/300", got)
	}
}
