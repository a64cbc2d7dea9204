package poller

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/status"
)

// roundsProducer records each ProduceWait call's values and refuses the
// records whose value is in refuse.
type roundsProducer struct {
	refuse map[string]error
	calls  [][]string
}

func (f *roundsProducer) ProduceWait(_ context.Context, recs []*kgo.Record) []error {
	var call []string
	out := make([]error, len(recs))
	for i, r := range recs {
		call = append(call, string(r.Value))
		out[i] = f.refuse[string(r.Value)]
	}
	f.calls = append(f.calls, call)
	return out
}

// failingStore's Claim fails after deliver, as a failed commit does.
type failingStore struct{ fakeStore }

func (f *failingStore) Claim(ctx context.Context, limit int, deliver func(context.Context, []status.Row) []status.Outcome) (int, error) {
	n, _ := f.fakeStore.Claim(ctx, limit, deliver)
	return n, errors.New("commit failed")
}

// TestDeliverInOrder: each key's rows are produced one after another, the
// next only after the one before was delivered; a key whose row fails
// stops there (its later rows get no outcome), and the other keys' rows
// are all delivered; Delivered hears of each delivered key once, after
// the claim, and not when the claim failed.
func TestDeliverInOrder(t *testing.T) {
	t.Parallel()
	row := func(id int64, topic, key, value string) status.Row {
		r := status.Row{ID: id, Topic: topic, Value: []byte(value)}
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
	tests := []struct {
		name       string
		store      Store
		wantCalls  [][]string
		wantKeys   []status.Key // nil: Delivered not called
		delivered  []int64
		failed     []int64
		noOutcomes []int64
	}{
		{
			name:      "one key's second row refused",
			store:     &fakeStore{rows: rows},
			wantCalls: [][]string{{"a1", "b1", "n1", "p1", "n2"}, {"a2", "b2"}, {"a3"}},
			wantKeys:  []status.Key{{Topic: "orders", Key: "a"}, {Topic: "orders", Key: "b"}, {Topic: "payments", Key: "b"}},
			delivered: []int64{1, 2, 3, 4, 6, 8, 9}, failed: []int64{5}, noOutcomes: []int64{7},
		},
		{
			name:      "the claim fails: nobody hears of it",
			store:     &failingStore{fakeStore{rows: rows}},
			wantCalls: [][]string{{"a1", "b1", "n1", "p1", "n2"}, {"a2", "b2"}, {"a3"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prod := &roundsProducer{refuse: map[string]error{"b2": kerr.MessageTooLarge}}
			var keys []status.Key
			calls := 0
			cfg := DefaultConfig()
			cfg.Delivered = func(k []status.Key) { keys = k; calls++ }
			_, _ = New(tt.store, prod, cfg).RunOnce(context.Background())
			if !slices.EqualFunc(prod.calls, tt.wantCalls, slices.Equal) {
				t.Fatalf("produce calls %v, want %v", prod.calls, tt.wantCalls)
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
			got := map[int64]status.Outcome{}
			for _, o := range tt.store.(*fakeStore).outcomes {
				got[o.ID] = o
			}
			for _, id := range tt.delivered {
				if !got[id].Delivered {
					t.Errorf("row %d: %+v, want delivered", id, got[id])
				}
			}
			for _, id := range tt.failed {
				if o, ok := got[id]; !ok || o.Delivered || o.Dead || o.RetryIn == 0 {
					t.Errorf("row %d: %+v, want failed, due again", id, o)
				}
			}
			for _, id := range tt.noOutcomes {
				if o, ok := got[id]; ok {
					t.Errorf("row %d: %+v, want no outcome: its key's earlier row failed", id, o)
				}
			}
		})
	}
}

// TestClaimedBeforeProduce: Claimed hears of the key of each ordered row
// of a claim once, before any row is produced, even of a key whose row is
// then refused; rows without a key and reload rows have none.
func TestClaimedBeforeProduce(t *testing.T) {
	t.Parallel()
	rows := []status.Row{
		{ID: 1, Topic: "fixed", Key: []byte("a"), Value: []byte("a1")}, {ID: 2, Topic: "fixed", Value: []byte("n1")},
		{ID: 3, Topic: "fixed", Key: []byte("a"), Value: []byte("a2")}, {ID: 4, Topic: "fixed", Key: []byte("b"), Value: []byte("b1")},
		{ID: 5, Topic: "fixed", Key: []byte("r"), Value: []byte("r1"), Reload: true},
	}
	prod := &roundsProducer{refuse: map[string]error{"b1": kerr.MessageTooLarge}}
	var claimed []status.Key
	producedBefore := -1
	cfg := DefaultConfig()
	cfg.Load = each(func(_ context.Context, row status.Row) (status.Row, error) { return row, nil })
	cfg.Claimed = func(k []status.Key) { claimed, producedBefore = append(claimed, k...), len(prod.calls) }
	if _, err := New(&fakeStore{rows: rows}, prod, cfg).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []status.Key{{Topic: "fixed", Key: "a"}, {Topic: "fixed", Key: "b"}}
	if !slices.Equal(claimed, want) || producedBefore != 0 {
		t.Fatalf("Claimed heard %v after %d produce calls; want %v before any", claimed, producedBefore, want)
	}
}
