package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/delivery/atleastonce"
	"github.com/cdc-relay/cdc-relay/relay/delivery/lanes"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/status"
)

// TestReceiverTextIsNotKafkasRefusal: a webhook receiver's refusal whose quoted body contains franz-go's
// TLS text must not be taken as Kafka refusing the producer (a fatal stop).
func TestReceiverTextIsNotKafkasRefusal(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	stopped := make(chan error, 1)
	tp.Stop = func(err error) { stopped <- err }
	h := &hookReceiver{answer: func([]string) lanes.Answer {
		return lanes.Answer{Err: errors.New("POST https://partner.example/hook: HTTP 400 Bad Request: plaintext connection speaking to a tls endpoint")}
	}}
	tp.withLanes(t, h, lanes.Config{Lanes: 1})
	tp.events(t, 0x200, testEv{"e0", "wallet", "k"})
	select {
	case err := <-stopped:
		t.Fatalf("a webhook's 400 stopped the relay: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if got := parkedAs(tp.store); !slices.Equal(got, []string{"FAILED e0"}) {
		t.Fatalf("parked %v, want FAILED e0", got)
	}
}

// TestPoisonWithPublishersIsParked: a poison event of a routed table, with publishers: its topic is ""
// (Routed, not routed because poison); PublishersOf maps route topics only.
// It must be parked, not dropped as unrouted.
func TestPoisonWithPublishersIsParked(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	hookStore := &fakeStore{}
	hl := tp.Ledger.ForPublisher(hookStore, keyorder.New(true, tp.Log))
	lp := lanes.New(&hookReceiver{}, lanes.Config{Publisher: "partner"})
	t.Cleanup(lp.Close)
	byTopic := map[string][]int{"wallet": {0, 1}}
	tp.Pipeline = New(tp.Ledger, Options{Delivery: atleastonce.New(tp.Ledger, tp.prod),
		Publishers:   []Publisher{{Ledger: hl, Delivery: atleastonce.New(hl, lp)}},
		PublishersOf: func(_ int, topic string) []int { return byTopic[topic] }})
	msgs := []decoder.Message{{Kind: decoder.KindBegin},
		{Kind: decoder.KindEvent, Routed: true, Routes: []string{"wallet"}, Poison: errors.New("headers column: not a JSON object"),
			Event: decoder.Event{ID: []byte("p0"), Key: []byte("k"), Value: []byte(`{}`), CommitLSN: 0x1f8,
				Headers: []decoder.Header{{Key: "id", Value: []byte("p0")}}}},
		{Kind: decoder.KindCommit, EndLSN: 0x200}}
	for _, m := range msgs {
		if err := tp.apply(0x1f0, m); err != nil {
			t.Fatal(err)
		}
	}
	tp.waitIdle(t)
	if len(parkedAs(tp.store)) == 0 && len(parkedAs(hookStore)) == 0 {
		var m dto.Metric
		tp.Metrics.EventsUnrouted.WithLabelValues("0").Write(&m)
		t.Fatalf("poison event parked nowhere (unrouted %v), yet safe is %s: lost", m.GetCounter().GetValue(), tp.Tracker.Safe())
	}
}

// TestLaneDoesNotOvertakeTheAloneQueue: a key's later record must not reach the receiver before an earlier
// one that waits in the alone queue (ErrNotSent), when the key is released
// (poller delivered its FAILED row) while the later record is still queued
// in its lane behind another key's slow request.
func TestLaneDoesNotOvertakeTheAloneQueue(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	gate, applied := make(chan struct{}), make(chan struct{})
	h := &hookReceiver{}
	h.answer = func(ids []string) lanes.Answer {
		switch {
		case slices.Contains(ids, "k1"):
			h.mu.Unlock()
			<-applied // every event is in the lane before k1 is refused
			h.mu.Lock()
			return lanes.Answer{Err: errors.New("422 Unprocessable Entity")}
		case slices.Contains(ids, "x1"):
			h.mu.Unlock()
			<-gate // the lane is busy with another key's request
			h.mu.Lock()
		}
		return lanes.Answer{}
	}
	tp.withLanes(t, h, lanes.Config{Lanes: 1})
	tp.events(t, 0x200, testEv{"k1", "wallet", "k"}, testEv{"k2", "wallet", "k"}, testEv{"x1", "wallet", "x"}, testEv{"k3", "wallet", "k"})
	close(applied)
	tp.waitParked(t, 1) // k1 FAILED; k2 ErrNotSent: waits alone behind k3 (in the lane)
	for deadline := time.Now().Add(5 * time.Second); !tp.Order.AloneHeld(&decoder.Event{Topic: "wallet", Key: []byte("k")}); {
		if time.Now().After(deadline) {
			t.Fatal("k2 never waited in the alone queue")
		}
		time.Sleep(time.Millisecond)
	}
	// The poller delivers k1's row: the key is released.
	if err := tp.Order.ReleaseDelivered(context.Background(), tp.store, []status.Key{{Topic: "wallet", Key: "k"}}); err != nil {
		t.Fatal(err)
	}
	heldAfter, _ := tp.Order.ParkedHeld(&decoder.Event{Topic: "wallet", Key: []byte("k")})
	t.Logf("parked held after the release: %v; parked then %v", heldAfter, parkedAs(tp.store))
	close(gate)
	tp.waitIdle(t)
	var gotK []string
	for _, id := range h.taken() {
		if strings.HasPrefix(id, "k") {
			gotK = append(gotK, id)
		}
	}
	var m dto.Metric
	tp.Metrics.OrderViolations.Write(&m)
	t.Logf("taken %v, parked %v", h.taken(), parkedAs(tp.store))
	if !slices.Equal(gotK, []string{"k2", "k3"}) {
		t.Fatalf("the receiver took key k as %v (order violations counted: %v), want [k2 k3]", gotK, m.GetCounter().GetValue())
	}
}

// TestPublishersWriteBack: write-back with a Kafka copy and a webhook copy: delivered once,
// after both; never when the webhook's copy is parked.
func TestPublishersWriteBack(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		tp := newTestPipeline(t, &fakeStore{})
		out := &fakeOutcomes{}
		tp.Outcomes, tp.WriteBack = out, []bool{true}
		hookStore := &fakeStore{}
		hl := tp.Ledger.ForPublisher(hookStore, keyorder.New(true, tp.Log))
		h := &hookReceiver{answer: func([]string) lanes.Answer {
			if refuse {
				return lanes.Answer{Err: errors.New("400 Bad Request")}
			}
			return lanes.Answer{}
		}}
		lp := lanes.New(h, lanes.Config{Publisher: "partner"})
		t.Cleanup(lp.Close)
		tp.Pipeline = New(tp.Ledger, Options{Delivery: atleastonce.New(tp.Ledger, tp.prod),
			Publishers:   []Publisher{{Ledger: hl, Delivery: atleastonce.New(hl, lp)}},
			PublishersOf: func(int, string) []int { return []int{0, 1} }})
		tp.events(t, 0x200, testEv{"e0", "wallet", "k"})
		deadline := time.Now().Add(5 * time.Second)
		for len(h.taken()) == 0 && len(parkedAs(hookStore)) == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		out.mu.Lock()
		early := slices.Clone(out.delivered)
		out.mu.Unlock()
		if len(early) != 0 {
			t.Fatalf("refuse %v: written back %v before Kafka's copy was acked", refuse, early)
		}
		tp.prod.answer(nil)
		tp.waitIdle(t)
		var wantOut []string
		if !refuse {
			wantOut = []string{"e0"}
		}
		if !slices.Equal(out.delivered, wantOut) {
			t.Fatalf("refuse %v: written back %v, want %v", refuse, out.delivered, wantOut)
		}
	}
}

var _ = kgo.Record{}
var _ = delivery.ErrNotSent

// twoPublishers makes tp's pipeline Kafka (tp.prod) and a webhook (h) for
// every copy, each ordered by key, and returns the webhook's store.
func (tp *testPipeline) twoPublishers(t *testing.T, h *hookReceiver) (*fakeStore, *keyorder.Order) {
	tp.ordered(t, true)
	hookStore := &fakeStore{}
	hookOrder := keyorder.New(true, tp.Log)
	hl := tp.Ledger.ForPublisher(hookStore, hookOrder)
	inflight := func(r *kgo.Record) *delivery.Inflight { return r.Context.(*delivery.Inflight) }
	lp := lanes.New(h, lanes.Config{Publisher: "partner",
		OrderKey: func(r *kgo.Record) []byte { return hookOrder.OrderKey(&inflight(r).Event) },
		Held:     func(r *kgo.Record) bool { held, _ := hookOrder.ParkedHeld(&inflight(r).Event); return held }})
	t.Cleanup(lp.Close)
	tp.Pipeline = New(tp.Ledger, Options{Delivery: atleastonce.New(tp.Ledger, tp.prod),
		Publishers:   []Publisher{{Ledger: hl, Delivery: atleastonce.New(hl, lp)}},
		PublishersOf: func(int, string) []int { return []int{0, 1} }})
	return hookStore, hookOrder
}

// TestKafkasHoldLeavesTheWebhookAlone: Kafka holds key k (its copy of e0 refused for good): Kafka's later
// copies of k are WAITING in Kafka's rows; the webhook's copies of k are
// delivered, none parked anywhere for the webhook.
func TestKafkasHoldLeavesTheWebhookAlone(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	h := &hookReceiver{}
	hookStore, _ := tp.twoPublishers(t, h)
	tp.events(t, 0x200, testEv{"e0", "wallet", "k"})
	tp.prod.answer(refusedForGood)
	tp.waitParked(t, 1)
	time.Sleep(20 * time.Millisecond)
	tp.events(t, 0x300, testEv{"e1", "wallet", "k"})
	tp.waitIdle(t)
	if got := parkedAs(tp.store); !slices.Equal(got, []string{"FAILED e0", "WAITING e1"}) {
		t.Fatalf("Kafka's rows %v", got)
	}
	if got := parkedAs(hookStore); len(got) != 0 {
		t.Fatalf("the webhook's rows %v, want none", got)
	}
	if got := h.taken(); !slices.Equal(got, []string{"e0", "e1"}) {
		t.Fatalf("the webhook took %v", got)
	}
}

// TestPoisonParkedPerPublisher: a poison event with two publishers is parked DEAD once in each
// publisher's rows.
func TestPoisonParkedPerPublisher(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	hookStore, _ := tp.twoPublishers(t, &hookReceiver{})
	tp.tx(t, 0x200, errors.New("headers column: not a JSON object"), "p0")
	tp.waitIdle(t)
	if got, hook := parkedAs(tp.store), parkedAs(hookStore); !slices.Equal(got, []string{"DEAD p0"}) || !slices.Equal(hook, []string{"DEAD p0"}) {
		t.Fatalf("Kafka's rows %v, the webhook's %v; want DEAD p0 in each", got, hook)
	}
}
