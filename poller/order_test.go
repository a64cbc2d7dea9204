package poller

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/status"
)

// partitionProducer records each ProduceWait call's values and answers
// each record by its value (answer; missing: delivered). With failBehind,
// it refuses a record behind a refused one of its key with the same
// error, as franz-go fails the records buffered behind a refused batch in
// its partition.
type partitionProducer struct {
	answer     map[string]error
	failBehind bool
	calls      [][]string
}

func (f *partitionProducer) ProduceWait(_ context.Context, recs []*kgo.Record) []error {
	var call []string
	out := make([]error, len(recs))
	refused := map[string]error{} // by topic and key
	for i, r := range recs {
		call = append(call, string(r.Value))
		k := r.Topic + "/" + string(r.Key)
		out[i] = f.answer[string(r.Value)]
		if err := refused[k]; f.failBehind && err != nil && r.Key != nil {
			out[i] = err
		}
		if out[i] != nil && sinkRefusal(out[i]) {
			refused[k] = out[i]
		}
	}
	f.calls = append(f.calls, call)
	return out
}

// sinkRefusal is true of a broker's refusal (not a lost answer).
func sinkRefusal(err error) bool { return !errors.Is(err, context.DeadlineExceeded) }

// failingStore's Claim fails after deliver, as a failed commit does.
type failingStore struct{ fakeStore }

func (f *failingStore) Claim(ctx context.Context, limit int, deliver func(context.Context, []status.Row) []status.Outcome) (int, error) {
	n, _ := f.fakeStore.Claim(ctx, limit, deliver)
	return n, errors.New("commit failed")
}

// errTooLarge is a refusal known before producing (Config.CheckRecord).
var errTooLarge = errors.New("record larger than the topic's max.message.bytes")

// TestDeliverInOrder: a claim's rows are produced at once, in id order; a
// key's first row not delivered is its head: FAILED (or DEAD) when
// refused, no outcome when its answer is unknown, and its key's later
// rows get no outcome unless Kafka took them nevertheless: then they are
// DELIVERED (never sent again), and counted and logged as an order
// violation when the head was refused. A record Config.CheckRecord
// refuses is not produced, nor are its key's later rows. Delivered hears
// of each delivered key once, after the claim, and not when the claim
// failed.
func TestDeliverInOrder(t *testing.T) {
	t.Parallel()
	row := func(id int64, topic, key, value string) status.Row {
		r := status.Row{ID: id, EventID: value, Topic: topic, Value: []byte(value)}
		if key != "" {
			r.Key = []byte(key)
		}
		return r
	}
	rows := []status.Row{
		row(1, "orders", "a", "a1"), row(2, "orders", "b", "b1"), row(3, "orders", "a", "a2"), row(4, "orders", "", "n1"),
		row(5, "orders", "b", "b2"), row(6, "orders", "a", "a3"), row(7, "orders", "b", "b3"), row(8, "payments", "b", "p1"),
		row(9, "orders", "", "n2"),
	}
	all := []string{"a1", "b1", "a2", "n1", "b2", "a3", "b3", "p1", "n2"}
	// placed: key a's rows placed by a partition column, a1 on one
	// partition, a2 and a3 on another.
	placed := slices.Clone(rows)
	for i, p := range map[int]int32{0: 1, 2: 2, 5: 2} {
		placed[i].Placed, placed[i].Partition = true, p
	}
	allKeys := []status.Key{{Topic: "orders", Key: "a"}, {Topic: "orders", Key: "b"}, {Topic: "payments", Key: "b"}}
	tests := []struct {
		name        string
		store       Store
		prod        *partitionProducer
		checkRecord func(*kgo.Record) error
		maxAttempts int
		wantCalls   [][]string
		wantKeys    []status.Key // nil: Delivered not called
		delivered   []int64
		failed      []int64
		dead        []int64
		noOutcomes  []int64
		violations  float64
	}{
		{
			name: "all delivered: one produce", store: &fakeStore{rows: rows}, prod: &partitionProducer{},
			wantCalls: [][]string{all}, wantKeys: allKeys, delivered: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9},
		},
		{
			name:  "the head refused, the rest behind it failed with it",
			store: &fakeStore{rows: rows}, prod: &partitionProducer{answer: map[string]error{"b2": kerr.MessageTooLarge}, failBehind: true},
			wantCalls: [][]string{all}, wantKeys: allKeys,
			delivered: []int64{1, 2, 3, 4, 6, 8, 9}, failed: []int64{5}, noOutcomes: []int64{7},
		},
		{
			name:  "the head refused, a later row acked: delivered, an order violation",
			store: &fakeStore{rows: rows}, prod: &partitionProducer{answer: map[string]error{"b2": kerr.MessageTooLarge}},
			wantCalls: [][]string{all}, wantKeys: allKeys,
			delivered: []int64{1, 2, 3, 4, 6, 7, 8, 9}, failed: []int64{5}, violations: 1,
		},
		{
			name:  "the head's answer unknown, a later row acked: delivered, no violation",
			store: &fakeStore{rows: rows}, prod: &partitionProducer{answer: map[string]error{"b2": context.DeadlineExceeded}},
			wantCalls: [][]string{all}, wantKeys: allKeys,
			delivered: []int64{1, 2, 3, 4, 6, 7, 8, 9}, noOutcomes: []int64{5},
		},
		{
			name:  "the head's answer unknown, the rest too: no outcome",
			store: &fakeStore{rows: rows}, prod: &partitionProducer{answer: map[string]error{"b2": context.DeadlineExceeded, "b3": context.DeadlineExceeded}},
			wantCalls: [][]string{all}, wantKeys: allKeys,
			delivered: []int64{1, 2, 3, 4, 6, 8, 9}, noOutcomes: []int64{5, 7},
		},
		{
			name:  "a record refused before producing: neither it nor its key's later rows produced",
			store: &fakeStore{rows: rows}, prod: &partitionProducer{}, checkRecord: refuseValue("b2"),
			wantCalls: [][]string{{"a1", "b1", "a2", "n1", "a3", "p1", "n2"}}, wantKeys: allKeys,
			delivered: []int64{1, 2, 3, 4, 6, 8, 9}, failed: []int64{5}, noOutcomes: []int64{7},
		},
		{
			name:  "a record refused before producing at its last attempt: dead",
			store: &fakeStore{rows: rows}, prod: &partitionProducer{}, checkRecord: refuseValue("b1"), maxAttempts: 1,
			wantCalls: [][]string{{"a1", "a2", "n1", "a3", "p1", "n2"}},
			wantKeys:  []status.Key{{Topic: "orders", Key: "a"}, {Topic: "payments", Key: "b"}},
			delivered: []int64{1, 3, 4, 6, 8, 9}, dead: []int64{2}, noOutcomes: []int64{5, 7},
		},
		{
			name:  "a key's rows placed on two partitions: those on the second wait for the next claim",
			store: &fakeStore{rows: placed}, prod: &partitionProducer{},
			wantCalls: [][]string{{"a1", "b1", "n1", "b2", "b3", "p1", "n2"}}, wantKeys: allKeys,
			delivered: []int64{1, 2, 4, 5, 7, 8, 9}, noOutcomes: []int64{3, 6},
		},
		{
			name:  "the claim fails: nobody hears of it",
			store: &failingStore{fakeStore{rows: rows}}, prod: &partitionProducer{answer: map[string]error{"b2": kerr.MessageTooLarge}},
			wantCalls: [][]string{all},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var keys []status.Key
			calls := 0
			var logs bytes.Buffer
			cfg := DefaultConfig()
			cfg.Metrics = metrics.New(buildinfo.Info{}, func() metrics.Snapshot { return metrics.Snapshot{} })
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			cfg.CheckRecord = tt.checkRecord
			if tt.maxAttempts > 0 {
				cfg.MaxAttempts = tt.maxAttempts
			}
			cfg.Delivered = func(k []status.Key) { keys = k; calls++ }
			_, _ = New(tt.store, tt.prod, cfg).RunOnce(context.Background())
			if !slices.EqualFunc(tt.prod.calls, tt.wantCalls, slices.Equal) {
				t.Fatalf("produce calls %v, want %v", tt.prod.calls, tt.wantCalls)
			}
			if tt.wantKeys == nil {
				if calls != 0 {
					t.Fatalf("Delivered called with %v after a failed claim", keys)
				}
				return
			}
			if calls != 1 || !slices.Equal(keys, tt.wantKeys) {
				t.Fatalf("Delivered called %d times with %v, want once with %v", calls, keys, tt.wantKeys)
			}
			checkOutcomes(t, tt.store.(*fakeStore).outcomes, tt.delivered, tt.failed, tt.dead, tt.noOutcomes)
			if got := counterValue(t, cfg.Metrics.OrderViolations); got != tt.violations {
				t.Errorf("order violations %v, want %v", got, tt.violations)
			}
			if said := strings.Contains(logs.String(), "level=ERROR") && strings.Contains(logs.String(), "overtook"); said != (tt.violations > 0) {
				t.Errorf("logged a violation at error level: %v, want %v; log:\n%s", said, tt.violations > 0, logs.String())
			}
		})
	}
}

// refuseValue is a Config.CheckRecord that refuses the record of value.
func refuseValue(value string) func(*kgo.Record) error {
	return func(r *kgo.Record) error {
		if string(r.Value) == value {
			return errTooLarge
		}
		return nil
	}
}

// checkOutcomes checks the outcome of each row named.
func checkOutcomes(t *testing.T, outcomes []status.Outcome, delivered, failed, dead, none []int64) {
	t.Helper()
	got := map[int64]status.Outcome{}
	for _, o := range outcomes {
		got[o.ID] = o
	}
	for _, id := range delivered {
		if !got[id].Delivered {
			t.Errorf("row %d: %+v, want delivered", id, got[id])
		}
	}
	for _, id := range failed {
		if o, ok := got[id]; !ok || o.Delivered || o.Dead || o.RetryIn == 0 || o.Err == nil {
			t.Errorf("row %d: %+v, want failed, due again", id, o)
		}
	}
	for _, id := range dead {
		if o, ok := got[id]; !ok || !o.Dead || o.Err == nil {
			t.Errorf("row %d: %+v, want dead", id, o)
		}
	}
	for _, id := range none {
		if o, ok := got[id]; ok {
			t.Errorf("row %d: %+v, want no outcome: its key's earlier row was not delivered", id, o)
		}
	}
	if want := len(delivered) + len(failed) + len(dead); len(outcomes) != want {
		t.Errorf("%d outcomes, want %d: %+v", len(outcomes), want, outcomes)
	}
}

// counterValue reads c.
func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestClaimedBeforeProduce: Claimed hears of the key of each ordered row
// of a claim once, before any row is produced, even of a key whose row is
// then refused; rows without a key have none, and a reload row's is the
// key its status row holds.
func TestClaimedBeforeProduce(t *testing.T) {
	t.Parallel()
	rows := []status.Row{
		{ID: 1, Topic: "fixed", Key: []byte("a"), Value: []byte("a1")}, {ID: 2, Topic: "fixed", Value: []byte("n1")},
		{ID: 3, Topic: "fixed", Key: []byte("a"), Value: []byte("a2")}, {ID: 4, Topic: "fixed", Key: []byte("b"), Value: []byte("b1")},
		{ID: 5, Topic: "fixed", Key: []byte("r"), Value: []byte("r1"), Reload: true},
	}
	prod := &partitionProducer{answer: map[string]error{"b1": kerr.MessageTooLarge}}
	var claimed []status.Key
	producedBefore := -1
	cfg := DefaultConfig()
	cfg.Load = each(func(_ context.Context, row status.Row) (status.Row, error) { return row, nil })
	cfg.Claimed = func(k []status.Key) func() {
		claimed, producedBefore = append(claimed, k...), len(prod.calls)
		return nil
	}
	if _, err := New(&fakeStore{rows: rows}, prod, cfg).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []status.Key{{Topic: "fixed", Key: "a"}, {Topic: "fixed", Key: "b"}, {Topic: "fixed", Key: "r"}}
	if !slices.Equal(claimed, want) || producedBefore != 0 {
		t.Fatalf("Claimed heard %v after %d produce calls; want %v before any", claimed, producedBefore, want)
	}
}

// noRowsStore claims nothing, and, as status.Store, does not call deliver
// then.
type noRowsStore struct{}

func (noRowsStore) Claim(context.Context, int, func(context.Context, []status.Row) []status.Outcome) (int, error) {
	return 0, nil
}

// TestClaimedOncePerLook: Claimed is called once per look, also for a
// look that claimed nothing (no key), and what it returned is called once
// the look has ended, after Delivered: a drain the relay carried over to
// this look ends with it.
func TestClaimedOncePerLook(t *testing.T) {
	t.Parallel()
	rows := []status.Row{{ID: 1, Topic: "t", Key: []byte("a"), Value: []byte("a1")}}
	for _, tt := range []struct {
		name  string
		store Store
		want  string
	}{
		{"rows", &fakeStore{rows: rows}, "claimed [a], delivered [a], ended"},
		{"no rows", noRowsStore{}, "claimed [], ended"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			names := func(keys []status.Key) string {
				var s []string
				for _, k := range keys {
					s = append(s, k.Key)
				}
				return "[" + strings.Join(s, " ") + "]"
			}
			cfg := DefaultConfig()
			cfg.Claimed = func(keys []status.Key) func() {
				got = append(got, "claimed "+names(keys))
				return func() { got = append(got, "ended") }
			}
			cfg.Delivered = func(keys []status.Key) { got = append(got, "delivered "+names(keys)) }
			if _, err := New(tt.store, &fakeProducer{}, cfg).RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			if s := strings.Join(got, ", "); s != tt.want {
				t.Fatalf("%s, want %s", s, tt.want)
			}
		})
	}
}

// TestByTopicStopsTheTopic: ordering by topic, a row that cannot be
// produced stops its topic's later rows, keyed or not, and no other
// topic's; Claimed names each topic once, with the empty key. By key,
// only its key's rows stop; with TopicOrdered, each topic as it is ordered.
func TestByTopicStopsTheTopic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		byTopic      bool
		topicOrdered []string
		want         []string
		wantClaimed  []status.Key
	}{
		{"by key", false, nil, []string{"b1", "n1", "u1"}, []status.Key{{Topic: "t", Key: "a"}, {Topic: "t", Key: "b"}, {Topic: "u", Key: "a"}}},
		{"by topic", true, nil, []string{"u1"}, []status.Key{{Topic: "t"}, {Topic: "u"}}},
		{"t by topic, u by key", false, []string{"t"}, []string{"u1"}, []status.Key{{Topic: "t"}, {Topic: "u", Key: "a"}}},
		{"u by topic, t by key", false, []string{"u"}, []string{"b1", "n1", "u1"}, []status.Key{{Topic: "t", Key: "a"}, {Topic: "t", Key: "b"}, {Topic: "u"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := []status.Row{
				{ID: 1, Topic: "t", Key: []byte("a"), Value: []byte("a1")}, {ID: 2, Topic: "t", Key: []byte("b"), Value: []byte("b1")},
				{ID: 3, Topic: "t", Value: []byte("n1")}, {ID: 4, Topic: "u", Key: []byte("a"), Value: []byte("u1")},
			}
			prod := &partitionProducer{}
			cfg := DefaultConfig()
			cfg.ByTopic, cfg.TopicOrdered = tc.byTopic, tc.topicOrdered
			cfg.CheckRecord = func(r *kgo.Record) error {
				if string(r.Value) == "a1" {
					return kerr.MessageTooLarge
				}
				return nil
			}
			var claimed []status.Key
			cfg.Claimed = func(k []status.Key) func() { claimed = append(claimed, k...); return nil }
			if _, err := New(&fakeStore{rows: rows}, prod, cfg).RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			var produced []string
			for _, c := range prod.calls {
				produced = append(produced, c...)
			}
			if !slices.Equal(produced, tc.want) || !slices.Equal(claimed, tc.wantClaimed) {
				t.Fatalf("produced %v, claimed %v; want %v and %v", produced, claimed, tc.want, tc.wantClaimed)
			}
		})
	}
}

// TestHeldToAck: each event the poller delivers is timed from its parking
// (its status row's creation) to Kafka's acknowledgement; one that fails
// is not.
func TestHeldToAck(t *testing.T) {
	parked := time.Now().Add(-90 * time.Second)
	rows := []status.Row{
		{ID: 1, Topic: "a", Key: []byte("k1"), Value: []byte("v"), Status: status.Failed, CreatedAt: parked},
		{ID: 2, Topic: "b", Key: []byte("k2"), Value: []byte("v"), Status: status.Failed, CreatedAt: parked},
	}
	cfg := DefaultConfig()
	cfg.Metrics = metrics.New(buildinfo.Info{}, func() metrics.Snapshot { return metrics.Snapshot{} })
	if _, err := New(&fakeStore{rows: rows}, &fakeProducer{errs: map[string]error{"b": kerr.NotLeaderForPartition}}, cfg).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var m dto.Metric
	if err := cfg.Metrics.HeldToAck.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n, sum := m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum(); n != 1 || sum < 90 || sum > 120 {
		t.Errorf("cdc_relay_held_to_ack_seconds: %d samples, sum %.1f s; want the delivered one, parked 90 s ago", n, sum)
	}
}
