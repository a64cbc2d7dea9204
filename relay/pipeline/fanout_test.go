package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// fakeOutcomes records what write-back is told, and settles each outcome
// at once, as if its row were written, unless hold is set: then the
// outcomes wait in dones until the test settles them.
type fakeOutcomes struct {
	mu        sync.Mutex
	hold      bool
	dones     []writeback.Done
	delivered []string
}

func (f *fakeOutcomes) Delivered(table int, id []byte, done writeback.Done) {
	f.mu.Lock()
	f.delivered = append(f.delivered, string(id))
	f.mu.Unlock()
	f.settle(done)
}

func (f *fakeOutcomes) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.dones)
}

func (f *fakeOutcomes) settle(done writeback.Done) {
	f.mu.Lock()
	if f.hold {
		f.dones = append(f.dones, done)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	done.WrittenBack()
}

// written settles the outcomes held, as the writer does once their rows
// are written.
func (f *fakeOutcomes) written() {
	f.mu.Lock()
	dones := f.dones
	f.dones = nil
	f.mu.Unlock()
	for _, d := range dones {
		d.WrittenBack()
	}
}

// routed applies one transaction of routed events, one per routes entry.
func (tp *testPipeline) routed(t *testing.T, end uint64, routes ...[]string) {
	t.Helper()
	msgs := []decoder.Message{{Kind: decoder.KindBegin}}
	for i, rs := range routes {
		id := string(rune('a' + i))
		msgs = append(msgs, decoder.Message{Kind: decoder.KindEvent, Routed: true, Routes: rs, Event: decoder.Event{
			ID: []byte(id), Value: []byte(`{}`), CommitLSN: end - 8, Headers: []decoder.Header{{Key: "id", Value: []byte(id)}},
		}})
	}
	msgs = append(msgs, decoder.Message{Kind: decoder.KindCommit, EndLSN: end})
	for _, m := range msgs {
		if err := tp.apply(0, m); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPipelineFansOutAndConfirmsAfterEveryCopy: an event matching two
// routes is produced once to each topic, and its transaction is confirmed
// only when both copies are acked; an event matching none is counted, not
// produced, and holds nothing back.
func TestPipelineFansOutAndConfirmsAfterEveryCopy(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	out := &fakeOutcomes{}
	tp.Outcomes, tp.WriteBack = out, []bool{true}
	tp.routed(t, 0x200, []string{"wallet-events", "payment-events"}, nil)

	tp.prod.mu.Lock()
	recs := slices.Clone(tp.prod.pending)
	tp.prod.mu.Unlock()
	var topics []string
	for _, r := range recs {
		topics = append(topics, r.Topic)
	}
	sort.Strings(topics)
	if !slices.Equal(topics, []string{"payment-events", "wallet-events"}) {
		t.Fatalf("produced to %q, want each route's topic once", topics)
	}
	// Ack the first copy only: not confirmed, not written back.
	tp.prod.mu.Lock()
	first, done := tp.prod.pending[0], tp.prod.done
	tp.prod.pending = tp.prod.pending[1:]
	tp.prod.mu.Unlock()
	done(first, nil)
	if got := tp.Tracker.Safe(); got != 0x100 {
		t.Fatalf("safe %s with one copy of two acked, want 0/100", got)
	}
	if len(out.delivered) != 0 {
		t.Fatalf("written back %q before every copy was acked", out.delivered)
	}
	tp.prod.answer(nil)
	if got := tp.Tracker.Safe(); got != 0x200 {
		t.Fatalf("safe %s after both copies, want 0/200", got)
	}
	if !slices.Equal(out.delivered, []string{"a"}) {
		t.Fatalf("written back delivered %q, want [a] once", out.delivered)
	}
	var m dto.Metric
	if err := tp.Metrics.EventsUnrouted.WithLabelValues("0").Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
		got := m.GetCounter().GetValue()
		t.Fatalf("unrouted %v, want 1", got)
	}
	if got := tp.Count.Read.Load(); got != 2 {
		t.Fatalf("read %d, want 2", got)
	}
}

// TestPipelineFanOutCopyParked: one copy delivered, the other parked: the
// event is parked (the status table writes its row back as failed), never
// written back as delivered.
func TestPipelineFanOutCopyParked(t *testing.T) {
	store := &fakeStore{}
	tp := newTestPipeline(t, store)
	out := &fakeOutcomes{}
	tp.Outcomes, tp.WriteBack = out, []bool{true}
	tp.routed(t, 0x200, []string{"wallet-events", "payment-events"})
	tp.prod.mu.Lock()
	recs, done := tp.prod.pending, tp.prod.done
	tp.prod.pending = nil
	tp.prod.mu.Unlock()
	done(recs[0], kerr.InvalidTopicException)
	done(recs[1], nil)
	tp.waitIdle(t)
	store.mu.Lock()
	parked := slices.Clone(store.recorded)
	store.mu.Unlock()
	if len(out.delivered) != 0 || len(parked) != 1 || !strings.HasPrefix(parked[0], "FAILED a:") {
		t.Fatalf("written back delivered %q, parked %q; want a parked only", out.delivered, parked)
	}
}

// TestPipelineConfirmsOnlyWrittenBack: an event of a table that writes
// back stays in flight, and its transaction unconfirmed, after Kafka
// acked it, until its row says delivered; so a crash meanwhile sends it
// again instead of losing its outcome. (A parked event's row is written
// with its status row, before the park returns.)
func TestPipelineConfirmsOnlyWrittenBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		routes [][]string
	}{
		{name: "delivered", routes: [][]string{{"wallet-events"}}},
		{name: "fanned out", routes: [][]string{{"wallet-events", "payment-events"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTestPipeline(t, &fakeStore{})
			out := &fakeOutcomes{hold: true}
			tp.Outcomes, tp.WriteBack = out, []bool{true}
			tp.routed(t, 0x200, tc.routes...)
			tp.prod.answer(nil)
			deadline := time.Now().Add(10 * time.Second)
			for {
				out.mu.Lock()
				n := len(out.dones)
				out.mu.Unlock()
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("write-back was not told the outcome")
				}
				time.Sleep(time.Millisecond)
			}
			if got := tp.Tracker.Safe(); got != 0x100 {
				t.Fatalf("safe %s before the row was written, want 0/100", got)
			}
			if events, _ := tp.Tracker.InFlight(); events != 1 {
				t.Fatalf("%d events in flight while the row waits, want 1", events)
			}
			out.written()
			if got := tp.Tracker.Safe(); got != 0x200 {
				t.Fatalf("safe %s once the row was written, want 0/200", got)
			}
		})
	}
}

// TestPipelineParksARoutedRowLackingItsTimestampOncePerRoute: a routed
// table's row whole but for its timestamp is parked FAILED once for each
// route, with that route's topic, so that the poller can send every copy;
// one matching no route goes nowhere, as a whole row would.
func TestPipelineParksARoutedRowLackingItsTimestampOncePerRoute(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	poison := fmt.Errorf("%w; parked FAILED", &decoder.MappingError{Timestamp: true, Err: errors.New("timestamp column has type text")})
	msgs := []decoder.Message{{Kind: decoder.KindBegin}}
	for i, rs := range [][]string{{"wallet-events", "payment-events"}, nil} {
		id := string(rune('a' + i))
		msgs = append(msgs, decoder.Message{Kind: decoder.KindEvent, Routed: true, Routes: rs, Poison: poison, Event: decoder.Event{
			ID: []byte(id), Value: []byte(`{}`), CommitLSN: 0x200 - 8, Headers: []decoder.Header{{Key: "id", Value: []byte(id)}},
		}})
	}
	msgs = append(msgs, decoder.Message{Kind: decoder.KindCommit, EndLSN: 0x200})
	for _, m := range msgs {
		if err := tp.apply(0, m); err != nil {
			t.Fatal(err)
		}
	}
	tp.waitIdle(t)
	tp.store.mu.Lock()
	topics, rows := slices.Clone(tp.store.topics), slices.Clone(tp.store.recorded)
	tp.store.mu.Unlock()
	sort.Strings(topics)
	if !slices.Equal(topics, []string{"payment-events", "wallet-events"}) {
		t.Fatalf("parked to topics %q (rows %q), want one FAILED row per route", topics, rows)
	}
	for _, r := range rows {
		if !strings.HasPrefix(r, "FAILED a: ") {
			t.Fatalf("parked %q, want FAILED rows of event a", rows)
		}
	}
	if got := tp.Tracker.Safe(); got != 0x200 {
		t.Fatalf("safe %s, want 0/200 once every copy is parked", got)
	}
}
