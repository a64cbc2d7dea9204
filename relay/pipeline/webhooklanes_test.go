package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/relay/delivery/lanes"
)

// slowReceiver takes every request after delay.
type slowReceiver struct {
	hookReceiver
	delay time.Duration
}

func (s *slowReceiver) Send(ctx context.Context, recs []*kgo.Record) lanes.Answer {
	time.Sleep(s.delay)
	return s.hookReceiver.Send(ctx, recs)
}

// TestWebhookSlowParksInKeyOrder: a receiver slower than the load has
// records parked "slow" at their lane's head while later records of the
// key are queued in the same lane: per key, the receiver takes a prefix,
// then one FAILED (slow) and every later one WAITING, in stream order.
func TestWebhookSlowParksInKeyOrder(t *testing.T) {
	for _, batch := range []int{1, 3} {
		t.Run(fmt.Sprint("batch ", batch), func(t *testing.T) {
			tp := newTestPipeline(t, &fakeStore{})
			h := &slowReceiver{delay: 3 * time.Millisecond}
			tp.withLanes(t, h, lanes.Config{Lanes: 2, Batch: batch, MaxWait: 10 * time.Millisecond})
			const keys, per = 4, 50
			lsn := uint64(0x200)
			for n := 0; n < per; n += 5 {
				var evs []testEv
				for i := n; i < n+5; i++ {
					for k := range keys {
						evs = append(evs, testEv{fmt.Sprintf("k%d-%d", k, i), "wallet", fmt.Sprint("k", k)})
					}
				}
				tp.events(t, pglogrepl.LSN(lsn), evs...)
				lsn += 0x100
			}
			tp.waitIdle(t)
			parked := parkedAs(tp.store)
			taken := h.taken()
			slow := 0
			for k := range keys {
				var got []string
				for _, id := range taken {
					if strings.HasPrefix(id, fmt.Sprintf("k%d-", k)) {
						got = append(got, "TAKEN "+id)
					}
				}
				for _, p := range parked {
					if strings.Contains(p, fmt.Sprintf(" k%d-", k)) {
						got = append(got, p)
					}
				}
				var want []string
				state := "TAKEN"
				for i := range per {
					id := fmt.Sprintf("k%d-%d", k, i)
					if i < len(got) && got[i] != state+" "+id {
						switch state {
						case "TAKEN":
							state = "FAILED"
						case "FAILED":
							state = "WAITING"
						}
					}
					want = append(want, state+" "+id)
					if state == "FAILED" {
						slow++
						state = "WAITING"
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("key k%d:\ngot  %v\nwant %v", k, got, want)
				}
			}
			t.Logf("%d taken, %d parked, %d keys parked slow", len(taken), len(parked), slow)
		})
	}
}

// TestWebhookBlockedReceiverHoldsNotTheStream: as the relay sets it up, a
// webhook's lanes may queue half the in-flight limit (MaxQueued). A
// receiver that takes 2 s a request (within the webhook's 10 s default
// timeout) keeps every lane in a request; the events that come meanwhile
// are parked once past MaxQueued or MaxWait (the lanes' reaper), so the
// session's limit is not reached and the stream (Kafka with it) goes on.
func TestWebhookBlockedReceiverHoldsNotTheStream(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	tp.Ledger.Tracker = checkpoint.NewTracker(0x100, checkpoint.Limits{Events: 100})
	h := &slowReceiver{delay: 2 * time.Second}
	tp.withLanes(t, h, lanes.Config{Lanes: 2, MaxQueued: 50, MaxWait: 100 * time.Millisecond})
	var evs []testEv
	for i := range 100 {
		evs = append(evs, testEv{fmt.Sprint("e", i), "wallet", fmt.Sprint("k", i)})
	}
	tp.events(t, 0x200, evs[:2]...) // both lanes in a request now
	time.Sleep(50 * time.Millisecond)
	tp.events(t, 0x300, evs[2:]...)
	time.Sleep(300 * time.Millisecond) // past MaxWait
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := tp.Tracker.WaitCapacity(ctx)
	n, _ := tp.Tracker.InFlight()
	t.Logf("in flight %d of 100; parked %d; WaitCapacity: %v after %s", n, len(parkedAs(tp.store)), err, time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Errorf("the stream waits on the webhook's full lanes (in flight %d, MaxQueued 50): Kafka's events wait too", n)
	}
}
