package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/delivery/atleastonce"
	"github.com/cdc-relay/cdc-relay/relay/delivery/exactlyonce"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/status"
)

// Ordered parking: the stream holds a key behind its parked event, with the
// fakes at the producer and the status store.

// testEv is an event of a test transaction: its id, and its topic and key
// (no key if empty).
type testEv struct{ id, topic, key string }

// keyed returns n events of topic and key, with ids prefix0, prefix1, ...
func keyed(n int, prefix, topic, key string) []testEv {
	evs := make([]testEv, n)
	for i := range evs {
		evs[i] = testEv{fmt.Sprint(prefix, i), topic, key}
	}
	return evs
}

// ordered makes tp hold keys (byKey) and paused topics, rebuilt from its
// store as a session's start does.
func (tp *testPipeline) ordered(t *testing.T, byKey bool) *keyorder.Order {
	t.Helper()
	o := keyorder.New(byKey, tp.Log)
	held, _ := tp.store.HeldKeys(context.Background())
	paused, _ := tp.store.PausedTopics(context.Background())
	o.Rebuild(held, paused, nil)
	tp.Order = o
	return o
}

// events applies one transaction of evs ending at end.
func (tp *testPipeline) events(t *testing.T, end pglogrepl.LSN, evs ...testEv) {
	t.Helper()
	msgs := []decoder.Message{{Kind: decoder.KindBegin}}
	for _, e := range evs {
		ev := decoder.Event{ID: []byte(e.id), Topic: e.topic, Value: []byte(`{}`), CommitLSN: uint64(end) - 8,
			Headers: []decoder.Header{{Key: "id", Value: []byte(e.id)}}}
		if e.key != "" {
			ev.Key = []byte(e.key)
		}
		msgs = append(msgs, decoder.Message{Kind: decoder.KindEvent, Event: ev})
	}
	msgs = append(msgs, decoder.Message{Kind: decoder.KindCommit, EndLSN: uint64(end)})
	for _, m := range msgs {
		if err := tp.apply(end-16, m); err != nil {
			t.Fatal(err)
		}
	}
}

// answerBy calls back every pending record, in produce order, with what
// errFor says of its id.
func (f *fakeProducer) answerBy(errFor func(id string) error) []string {
	f.mu.Lock()
	recs, done := f.pending, f.done
	f.pending = nil
	f.mu.Unlock()
	var ids []string
	for _, r := range recs {
		id := header(r, "id")
		ids = append(ids, id)
		done(r, errFor(id))
	}
	return ids
}

// parkedAs returns the states and ids the store recorded, in order, such
// as "FAILED f".
func parkedAs(store *fakeStore) []string {
	var out []string
	for _, r := range store.ids() {
		state, rest, _ := strings.Cut(r, " ")
		id, _, _ := strings.Cut(rest, ":")
		out = append(out, state+" "+id)
	}
	return out
}

func want(state string, evs ...testEv) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = state + " " + e.id
	}
	return out
}

// refused is a permanent refusal of a record, not of its batch.
var refusedForGood = kerr.TopicAuthorizationFailed

// TestOrderHoldsAKeyBehindAFailedRecord: a key's record fails for good;
// the key's 10 later events are parked WAITING behind it, in stream order
// even when the first insert is slow, and the other keys' 100 events and
// keyless ones are produced. With ordering none, all are produced, as
// before.
func TestOrderHoldsAKeyBehindAFailedRecord(t *testing.T) {
	tests := []struct {
		name       string
		byKey      bool
		firstDelay time.Duration
	}{
		{"key", true, 0},
		{"key, slow first insert", true, 50 * time.Millisecond},
		{"none", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := newTestPipeline(t, &fakeStore{firstDelay: tt.firstDelay})
			tp.ordered(t, tt.byKey)
			tp.events(t, 0x200, testEv{"f", "orders", "k"})
			tp.prod.answerBy(func(string) error { return refusedForGood })
			later := keyed(10, "k", "orders", "k")
			others := append(keyed(100, "o", "orders", "other"), testEv{"n", "orders", ""})
			tp.events(t, 0x300, append(append([]testEv(nil), later[:5]...), others[:50]...)...)
			tp.events(t, 0x400, append(append([]testEv(nil), later[5:]...), others[50:]...)...)
			produced := tp.prod.answerBy(func(string) error { return nil })
			tp.waitIdle(t)
			parked := parkedAs(tp.store)
			if !tt.byKey {
				if len(produced) != 111 || len(parked) != 1 {
					t.Fatalf("none: produced %d, parked %q; want 111 produced and f parked", len(produced), parked)
				}
				return
			}
			if got, w := strings.Join(parked, ","), strings.Join(append([]string{"FAILED f"}, want("WAITING", later...)...), ","); got != w {
				t.Fatalf("parked %s\nwant   %s", got, w)
			}
			if len(produced) != 101 || tp.Count.Events.Load() != 101 {
				t.Fatalf("produced %d (%d acked), want the 100 of the other key and the keyless one", len(produced), tp.Count.Events.Load())
			}
			if got := counterValue(t, tp.Metrics.EventsHeld.WithLabelValues(delivery.HeldWaiting)); got != 10 {
				t.Fatalf("held metric %v, want 10", got)
			}
			if !strings.Contains(tp.store.ids()[1], "waits for event f of its key") {
				t.Fatalf("reason %q, want it to name f", tp.store.ids()[1])
			}
			if got := tp.Tracker.Safe(); got != 0x400 {
				t.Fatalf("safe %s, want 0/400", got)
			}
		})
	}
}

// TestOrderQueuesBehindARecordProducedAlone: a record refused with its
// batch holds its key while it waits to be produced alone; the stream's
// later events of the key go alone behind it, the others to the producer.
// If it fails alone too, they are parked WAITING behind it.
func TestOrderQueuesBehindARecordProducedAlone(t *testing.T) {
	tests := []struct {
		name     string
		aloneErr error
		laterErr error // the answer of e, a's key's record produced before a failed
		// beside is what is produced again, alone or together, in
		// order; with prefix, a part of it from its start: the alone
		// queue may take a's round before e, b or c are queued, and then
		// parks them (a failed) rather than produce them.
		beside string
		prefix bool
		parked string
	}{
		{"delivered alone", nil, kerr.InvalidRecord, "a,e,b,c", false, ""},
		{"fails again", refusedForGood, kerr.InvalidRecord, "a,e,b,c", true, "FAILED a,WAITING e,WAITING b,WAITING c"},
		{"a later record refused for good", nil, refusedForGood, "a", false, "FAILED e,WAITING b,WAITING c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := newTestPipeline(t, &fakeStore{})
			tp.ordered(t, true)
			tp.prod.aloneGate = make(chan struct{})
			tp.prod.aloneByID = map[string]error{"a": tt.aloneErr}
			tp.events(t, 0x200, testEv{"a", "orders", "k"}, testEv{"e", "orders", "k"})
			tp.prod.answerBy(func(id string) error {
				if id == "e" {
					return tt.laterErr
				}
				return kerr.InvalidRecord // maybe the batch's fault
			})
			tp.events(t, 0x300, testEv{"b", "orders", "k"}, testEv{"d", "orders", "other"}, testEv{"c", "orders", "k"})
			if got := strings.Join(tp.prod.answerBy(func(string) error { return nil }), ","); got != "d" {
				t.Fatalf("the producer got %s, want only d: b and c wait behind a", got)
			}
			close(tp.prod.aloneGate)
			tp.waitIdle(t)
			tp.prod.mu.Lock()
			beside := strings.Join(tp.prod.beside, ",")
			tp.prod.mu.Unlock()
			if beside != tt.beside && !(tt.prefix && beside != "" && strings.HasPrefix(tt.beside+",", beside+",")) {
				t.Fatalf("produced again %s, want %s", beside, tt.beside)
			}
			if got := strings.Join(parkedAs(tp.store), ","); got != tt.parked {
				t.Fatalf("parked %s, want %q", got, tt.parked)
			}
			// The hold is undone just after the last record is counted
			// out of flight (doneAlone follows the tracker's Done), so
			// wait for it, with a deadline.
			for deadline := time.Now().Add(5 * time.Second); tt.parked == "" && tp.Order.Holding(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the key is still held 5 s after its records were delivered")
				}
			}
		})
	}
}

// TestOrderAloneRoundTakesAKeysRecords: a record refused with its batch
// and the stream's later events of its key, queued behind it, go again
// together, in stream order, in one round (one ProduceGroup), not one
// round each; another key's record goes in the same round.
func TestOrderAloneRoundTakesAKeysRecords(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	tp.ordered(t, true)
	tp.prod.aloneGate = make(chan struct{})
	// z's round holds the alone queue at the gate while the records of
	// the next round are queued.
	tp.events(t, 0x100, testEv{"z", "orders", "z"})
	tp.prod.answer(kerr.InvalidRecord) // maybe the batch's fault
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		tp.prod.mu.Lock()
		at := tp.prod.atGate
		tp.prod.mu.Unlock()
		if at > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("z was not produced again within 5 s")
		}
	}
	tp.events(t, 0x200, testEv{"a", "orders", "k"}, testEv{"x", "orders", "other"})
	tp.prod.answer(kerr.InvalidRecord)
	tp.events(t, 0x300, testEv{"b", "orders", "k"}, testEv{"c", "orders", "k"}, testEv{"d", "orders", "k"})
	if got := tp.prod.answerBy(func(string) error { return nil }); len(got) != 0 {
		t.Fatalf("the producer got %v, want nothing: b, c and d wait behind a", got)
	}
	close(tp.prod.aloneGate)
	tp.waitIdle(t)
	tp.prod.mu.Lock()
	defer tp.prod.mu.Unlock()
	if got := strings.Join(tp.prod.groupIDs, " "); got != "a,x,b,c,d" && got != "x,a,b,c,d" && got != "a,b,c,d,x" {
		t.Fatalf("produced together %q after z alone, want one group of a,b,c,d in order and x", tp.prod.groupIDs)
	}
	if got := strings.Join(parkedAs(tp.store), ","); got != "" {
		t.Fatalf("parked %s, want nothing", got)
	}
}

// TestOrderAloneRoundDefersARecordTheProducerRefuses: among a key's
// records that go again together, one the producer would refuse before
// sending it (too large) is not sent with them, since the records behind
// it would go on without it: it and those behind it wait for the next
// round, then it is parked FAILED and they WAITING behind it.
func TestOrderAloneRoundDefersARecordTheProducerRefuses(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	tp.ordered(t, true)
	tp.prod.refuses = map[string]error{"b": kerr.MessageTooLarge}
	tp.prod.aloneGate = make(chan struct{})
	tp.events(t, 0x200, testEv{"a", "orders", "k"})
	tp.prod.answer(kerr.InvalidRecord) // maybe the batch's fault
	tp.events(t, 0x300, testEv{"b", "orders", "k"}, testEv{"c", "orders", "k"})
	close(tp.prod.aloneGate)
	tp.waitIdle(t)
	tp.prod.mu.Lock()
	beside := strings.Join(tp.prod.beside, ",")
	tp.prod.mu.Unlock()
	if beside != "a" {
		t.Fatalf("produced again %s, want only a: b is refused before it is sent, c waits behind it", beside)
	}
	if got := strings.Join(parkedAs(tp.store), ","); got != "FAILED b,WAITING c" {
		t.Fatalf("parked %s, want FAILED b, WAITING c", got)
	}
}

// TestOrderRebuiltAtStart: a key with held rows before the session is
// held from its first event; other keys and keyless events flow.
func TestOrderRebuiltAtStart(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{held: []status.Key{{Topic: "orders", Key: "k"}}})
	tp.ordered(t, true)
	tp.events(t, 0x200, testEv{"a", "orders", "k"}, testEv{"b", "orders", "other"}, testEv{"c", "orders", ""},
		testEv{"d", "payments", "k"}, testEv{"e", "orders", "k"})
	if got := strings.Join(tp.prod.answerBy(func(string) error { return nil }), ","); got != "b,c,d" {
		t.Fatalf("produced %s, want b,c,d", got)
	}
	tp.waitIdle(t)
	if got := strings.Join(parkedAs(tp.store), ","); got != "WAITING a,WAITING e" {
		t.Fatalf("parked %s, want WAITING a,WAITING e", got)
	}
	if r := tp.store.ids()[0]; !strings.Contains(r, "waits for an earlier held event of its key") {
		t.Fatalf("reason %q", r)
	}
}

// TestOrderPausedTopic: a paused topic's events are parked PAUSED, keyed
// or not, and their keys held; the rest flows. Resumed, the topic's new
// events flow, except those of keys with paused events, which wait.
func TestOrderPausedTopic(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{paused: []string{"orders"}})
	o := tp.ordered(t, true)
	tp.events(t, 0x200, testEv{"a", "orders", "k"}, testEv{"b", "payments", "k"}, testEv{"c", "orders", ""})
	if got := strings.Join(tp.prod.answerBy(func(string) error { return nil }), ","); got != "b" {
		t.Fatalf("produced %s while orders is paused, want b", got)
	}
	tp.waitIdle(t)
	o.ResumeTopic("orders")
	tp.events(t, 0x300, testEv{"d", "orders", "z"}, testEv{"e", "orders", "k"}, testEv{"f", "orders", ""})
	if got := strings.Join(tp.prod.answerBy(func(string) error { return nil }), ","); got != "d,f" {
		t.Fatalf("produced %s after the resume, want d,f", got)
	}
	tp.waitIdle(t)
	parked := parkedAs(tp.store)
	slices.Sort(parked) // the keyless c is in no key's order
	if got := strings.Join(parked, ","); got != "PAUSED a,PAUSED c,WAITING e" {
		t.Fatalf("parked %s, want PAUSED a,PAUSED c,WAITING e", got)
	}
	if got := counterValue(t, tp.Metrics.EventsHeld.WithLabelValues(delivery.HeldPaused)); got != 2 {
		t.Fatalf("held paused %v, want 2", got)
	}
	if tp.Count.Failed.Load() != 0 {
		t.Fatalf("%d counted as failed, want none: held events did not fail", tp.Count.Failed.Load())
	}
}

// TestOrderViolationIsCounted: a record acked after an earlier record of
// its key failed for good breaks the key's order; it is counted and
// logged.
func TestOrderViolationIsCounted(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	tp.ordered(t, true)
	tp.events(t, 0x200, testEv{"a", "orders", "k"}, testEv{"b", "orders", "k"})
	tp.prod.answerBy(func(id string) error {
		if id == "a" {
			return refusedForGood
		}
		return nil
	})
	tp.waitIdle(t)
	if got := counterValue(t, tp.Metrics.OrderViolations); got != 1 {
		t.Fatalf("violations %v, want 1", got)
	}
	if tp.logs.count("overtook an earlier parked event of its key") != 1 {
		t.Fatalf("log:\n%s", tp.logs.String())
	}
}

// counterValue reads a counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// ackingProducer acks every record at once.
type ackingProducer struct{}

func (ackingProducer) Produce(_ context.Context, r *kgo.Record, done func(*kgo.Record, error)) {
	done(r, nil)
}

func (ackingProducer) ProduceAlone(context.Context, *kgo.Record) error { return nil }
func (ackingProducer) BatchMaxBytes() int                              { return sink.DefaultBatchMaxBytes }
func (ackingProducer) Refuses(*kgo.Record) error                       { return nil }
func (ackingProducer) SizeRefused(string)                              {}
func (ackingProducer) ProduceGroup(_ context.Context, recs []*kgo.Record) []error {
	return make([]error, len(recs))
}

// BenchmarkOrderCheck: the stream's cost per event of ordering by key,
// with nothing held (one atomic load) and with other keys held (a map
// lookup), against ordering none.
func BenchmarkOrderCheck(b *testing.B) {
	for _, bc := range []struct {
		name string
		held []status.Key
		none bool
	}{
		{name: "none", none: true},
		{name: "key, nothing held"},
		{name: "key, other keys held", held: []status.Key{{Topic: "orders", Key: "x"}, {Topic: "payments", Key: "k"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l := delivery.NewLedger(&delivery.Ledger{Log: slog.New(slog.DiscardHandler), Failures: &fakeStore{}, Count: &delivery.Counters{},
				Tracker: checkpoint.NewTracker(0x100, checkpoint.Limits{}), FailCtx: ctx, ProduceCtx: ctx})
			if !bc.none {
				l.Order = keyorder.New(true, l.Log)
				l.Order.Rebuild(bc.held, nil, nil)
			}
			p := New(l, Options{Delivery: atleastonce.New(l, ackingProducer{})})
			msg := decoder.Message{Kind: decoder.KindEvent, Event: decoder.Event{ID: []byte("1"), Topic: "orders", Key: []byte("k"), Value: []byte(`{}`)}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%1000 == 0 {
					if p.reading != nil {
						l.Tracker.Commit(p.reading, pglogrepl.LSN(0x200+i))
					}
					p.reading = l.Tracker.Begin(time.Time{})
				}
				p.route(&msg)
			}
		})
	}
}

// answerFirst calls back the first pending record only, with err, and
// returns its id.
func (f *fakeProducer) answerFirst(err error) string {
	f.mu.Lock()
	r, done := f.pending[0], f.done
	f.pending = f.pending[1:]
	f.mu.Unlock()
	done(r, err)
	return header(r, "id")
}

// TestOrderAloneQueueKeepsStreamOrder: a fails with its batch while e, a
// later record of its key, is still in the producer; the stream's b of the
// key then waits behind them, and e, failing after b was queued, still
// goes before b: the key's records go alone, or are parked, in stream
// order, whatever order the producer answered in.
func TestOrderAloneQueueKeepsStreamOrder(t *testing.T) {
	for _, tt := range []struct {
		name     string
		aloneErr error  // a's answer alone
		beside   string // produced again, alone or together, in order
		parked   string
	}{
		{"delivered alone", nil, "a,e,b", ""},
		{"fails again", refusedForGood, "a,e,b", "FAILED a,WAITING e,WAITING b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tp := newTestPipeline(t, &fakeStore{})
			tp.ordered(t, true)
			tp.prod.aloneByID = map[string]error{"a": tt.aloneErr}
			tp.prod.aloneGate = make(chan struct{})
			tp.events(t, 0x200, testEv{"a", "orders", "k"}, testEv{"e", "orders", "k"})
			if id := tp.prod.answerFirst(kerr.InvalidRecord); id != "a" { // maybe the batch's fault
				t.Fatalf("answered %s first, want a", id)
			}
			tp.events(t, 0x300, testEv{"b", "orders", "k"})
			close(tp.prod.aloneGate)
			// Room for a wrong b to go alone while e is in the producer (a
			// right one waits for e's outcome, which no condition shows).
			time.Sleep(20 * time.Millisecond)
			if got := strings.Join(tp.prod.answerBy(func(string) error { return kerr.InvalidRecord }), ","); got != "e" {
				t.Fatalf("the producer held %s, want only e: b waits behind a", got)
			}
			tp.waitIdle(t)
			tp.prod.mu.Lock()
			beside := strings.Join(tp.prod.beside, ",")
			tp.prod.mu.Unlock()
			if beside != tt.beside {
				t.Fatalf("produced again %s, want %s", beside, tt.beside)
			}
			if got := strings.Join(parkedAs(tp.store), ","); got != tt.parked {
				t.Fatalf("parked %s, want %q", got, tt.parked)
			}
		})
	}
}

// TestOrderPausedTopicWaitsForTheProducer: a key's record is still in the
// producer when its topic is paused; the key's next event waits for it,
// and is parked after the record's refusal, so the status table's order
// (the order a resume delivers in) is commit order.
func TestOrderPausedTopicWaitsForTheProducer(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	o := tp.ordered(t, true)
	tp.events(t, 0x200, testEv{"e1", "orders", "k"}) // in the producer, unanswered
	o.PauseTopic("orders")
	tp.events(t, 0x300, testEv{"e2", "orders", "k"})
	tp.prod.answerBy(func(string) error { return refusedForGood })
	tp.waitIdle(t)
	got := strings.Join(parkedAs(tp.store), ",")
	if got != "FAILED e1,PAUSED e2" {
		t.Fatalf("parked %s; want FAILED e1,PAUSED e2 (e1 first in the key's order)", got)
	}
}

// TestOrderPausedTopicWithOrderingNone: with --ordering none too, a
// paused topic's events of one key are parked one after the other, the
// first insert slowed, so a resume delivers them in commit order.
func TestOrderPausedTopicWithOrderingNone(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{paused: []string{"orders"}, firstDelay: 20e6})
	tp.ordered(t, false)
	tp.events(t, 0x200, keyed(5, "k", "orders", "k")...)
	tp.waitIdle(t)
	got := strings.Join(parkedAs(tp.store), ",")
	if got != "PAUSED k0,PAUSED k1,PAUSED k2,PAUSED k3,PAUSED k4" {
		t.Fatalf("parked %s; want commit order", got)
	}
}

// newRefusingBroker is newBroker whose broker refuses, for good, every
// produced batch that holds a record whose value is value: with
// TOPIC_AUTHORIZATION_FAILED, a refusal of the records themselves that the
// relay cannot know before producing them.
func newRefusingBroker(t *testing.T, value []byte) []string {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	kc.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		hit := false
		for _, rt := range pr.Topics {
			respT := kmsg.NewProduceResponseTopic()
			respT.Topic, respT.TopicID = rt.Topic, rt.TopicID
			for _, p := range rt.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.BaseOffset, rp.ErrorCode = p.Partition, -1, kerr.RequestTimedOut.Code
				if batchHolds(p.Records, value) {
					rp.ErrorCode, hit = kerr.TopicAuthorizationFailed.Code, true
				}
				respT.Partitions = append(respT.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, respT)
		}
		return resp, nil, hit
	})
	return kc.ListenAddrs()
}

// batchHolds reports whether the uncompressed record batches in b hold a
// record whose value is value.
func batchHolds(b, value []byte) bool {
	for len(b) >= 12 {
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(b); err != nil {
			return false
		}
		recs := batch.Records
		for range batch.NumRecords {
			l, n := binary.Varint(recs)
			if n <= 0 || l < 0 || n+int(l) > len(recs) {
				break
			}
			var r kmsg.Record
			if r.ReadFrom(recs[:n+int(l)]) == nil && bytes.Equal(r.Value, value) {
				return true
			}
			recs = recs[n+int(l):]
		}
		b = b[12+int(batch.Length):]
	}
	return false
}

// TestExactlyOnceParksBesideABreak: two records of key k fail for their
// own fault in one Kafka transaction; the committer parks them one by one
// while it holds the batcher's lock. After the first park holds k, the
// stream parks a later event of k: its park must not wait for that lock
// once it took its turn, or the committer's second park, behind that
// turn, never ends. (The later event's row then precedes the second
// refused record's: DESIGN.md's exactly-once gap.)
func TestExactlyOnceParksBesideABreak(t *testing.T) {
	big := []byte("refused")
	brokers := newRefusingBroker(t, big)
	store := &fakeStore{firstDelay: 300 * time.Millisecond, called: make(chan struct{}, 1)}
	state := &exactlyonce.State{}
	s := newEOSession(t, brokers, store, state, 100)
	s.orderedEO(t, state)
	s.pgTxn(t, 0x200, []string{"big1", "big2"}, big, big)
	errc := make(chan error, 1)
	go func() { errc <- s.txn.Commit(context.Background()) }()
	o := s.Ledger.Order
	k := &decoder.Event{Topic: "orders", Key: []byte("k")}
	for held := false; !held; {
		held, _ = o.ParkedHeld(k)
		time.Sleep(time.Millisecond)
	} // big1's park began (its insert sleeps 300ms); k is held
	streamed := make(chan struct{})
	go func() { defer close(streamed); s.pgTxn(t, 0x300, []string{"e"}) }()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the commit of a transaction with refused records succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("commit still blocked after 10s: deadlock; parked %v", parkedAs(store))
	}
	<-streamed
	if got := strings.Join(parkedAs(store), ","); !strings.Contains(got, "FAILED big1") || !strings.Contains(got, "FAILED big2") || !strings.Contains(got, "WAITING e") {
		t.Fatalf("parked %s, want big1 and big2 FAILED and e WAITING", got)
	}
}

// TestOrderPoisonWaitsBehindADrain: while the poller drains a held key
// (BeginDrain), its event e1 waits in the alone queue; a later poison
// event e2 of the key (only its timestamp is missing: parked FAILED for
// the poller) waits behind e1 rather than being parked at once, so that
// when the drain ends with the key still held, e1's row comes first.
// Found by review: e2 was parked ahead of e1 every time.
func TestOrderPoisonWaitsBehindADrain(t *testing.T) {
	k := status.Key{Topic: "orders", Key: "k"}
	store := &fakeStore{held: []status.Key{k}}
	tp := newTestPipeline(t, store)
	o := tp.ordered(t, true)
	end := o.BeginDrain([]status.Key{k})
	tp.tx(t, 0x200, nil, "e1")
	tp.tx(t, 0x300, &decoder.MappingError{Timestamp: true, Err: errors.New("timestamp column has type text")}, "e2")
	if got := parkedAs(store); len(got) != 0 {
		t.Fatalf("parked %v during the drain, want nothing: e1 waits for it, and e2 behind e1", got)
	}
	store.mu.Lock()
	store.still = map[status.Key]bool{k: true}
	store.mu.Unlock()
	if err := o.ReleaseDelivered(context.Background(), store, []status.Key{k}); err != nil {
		t.Fatal(err)
	}
	if !end() {
		t.Fatal("the claim delivered the key's rows, with rows left: want its drain carried over to the next claim")
	}
	o.BeginDrain(nil)() // the next claim, which does not claim the key, ends its drain
	tp.waitIdle(t)
	if got := strings.Join(parkedAs(store), ","); got != "WAITING e1,FAILED e2" {
		t.Fatalf("parked %s, want WAITING e1,FAILED e2: in the key's order", got)
	}
}

// TestOrderPoisonWaitsForItsKeyInTheProducer: a poison event e2 (only its
// timestamp missing: parked FAILED) of a key whose earlier event e1 is
// still in the producer waits for it: e1 refused for good is parked
// first. Found by review: e2 was parked at once, ahead of e1.
func TestOrderPoisonWaitsForItsKeyInTheProducer(t *testing.T) {
	store := &fakeStore{}
	tp := newTestPipeline(t, store)
	tp.ordered(t, true)
	tp.tx(t, 0x200, nil, "e1")
	tp.tx(t, 0x300, &decoder.MappingError{Timestamp: true, Err: errors.New("timestamp column has type text")}, "e2")
	if got := parkedAs(store); len(got) != 0 {
		t.Fatalf("parked %v while e1 is in the producer, want nothing", got)
	}
	tp.prod.answerBy(func(string) error { return refusedForGood })
	tp.waitIdle(t)
	if got := strings.Join(parkedAs(store), ","); got != "FAILED e1,FAILED e2" {
		t.Fatalf("parked %s, want FAILED e1,FAILED e2: in the key's order", got)
	}
}

// TestOrderViolationOfPlacedEvents: events a table's partition column
// placed (decoder.Event.Placed): b acked after a of its key was refused
// is counted when both were placed on one partition, and not when b was
// placed on another (Kafka keeps no order between partitions).
func TestOrderViolationOfPlacedEvents(t *testing.T) {
	for _, c := range []struct {
		name       string
		aOn, bOn   int32
		violations float64
	}{{"one partition", 2, 2, 1}, {"two partitions", 2, 3, 0}} {
		t.Run(c.name, func(t *testing.T) {
			tp := newTestPipeline(t, &fakeStore{})
			tp.ordered(t, true)
			const end = 0x200
			msgs := []decoder.Message{{Kind: decoder.KindBegin}}
			for _, e := range []struct {
				id string
				on int32
			}{{"a", c.aOn}, {"b", c.bOn}} {
				ev := decoder.Event{ID: []byte(e.id), Topic: "orders", Key: []byte("k"), Value: []byte(`{}`), CommitLSN: end - 8,
					Headers: []decoder.Header{{Key: "id", Value: []byte(e.id)}}, Placed: true, Partition: e.on}
				msgs = append(msgs, decoder.Message{Kind: decoder.KindEvent, Event: ev})
			}
			msgs = append(msgs, decoder.Message{Kind: decoder.KindCommit, EndLSN: end})
			for _, m := range msgs {
				if err := tp.apply(end-16, m); err != nil {
					t.Fatal(err)
				}
			}
			tp.prod.answerBy(func(id string) error {
				if id == "a" {
					return refusedForGood
				}
				return nil
			})
			tp.waitIdle(t)
			if got := counterValue(t, tp.Metrics.OrderViolations); got != c.violations {
				t.Fatalf("violations %v, want %v", got, c.violations)
			}
		})
	}
}
