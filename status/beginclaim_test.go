package status

import (
	"context"
	"slices"
	"testing"
)

// TestBeginClaimLeavesOutTheLast: a claim begun while an earlier one
// still holds its rows (not committed yet) takes nothing of their keys
// (the rows held stop them); told to leave those rows out (the earlier
// claim delivered them all), it takes the keys' later rows, in order, as
// it would once the earlier claim committed; for every kind of claim:
// by key, by topic, unordered; rows with no key, each their own.
func TestBeginClaimLeavesOutTheLast(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name                   string
		opts                   []Option
		first, beside, without []string
	}{
		{"by key", nil, []string{"a1", "a2", "b1"}, []string{"n1", "n2"}, []string{"n1", "a3", "b2", "n2"}},
		{"by topic", []Option{ByTopic()}, []string{"a1", "a2", "b1"}, nil, []string{"n1", "a3", "b2", "n2"}},
		// The oldest due first: the FAILED rows, due a minute ago, then
		// the WAITING ones as they were parked; the rows held are skipped.
		{"unordered", []Option{Unordered()}, []string{"a1", "b1", "n1"}, []string{"n2", "a2", "a3", "b2"}, []string{"n2", "a2", "a3", "b2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, pool := claimTestStore(t)
			ctx := context.Background()
			store := NewStore(pool, "public", "outbox_delivery", tt.opts...)
			parkAll(ctx, t, store, pool, []parked{
				{"a1", "orders", "A", Failed}, {"a2", "orders", "A", Waiting}, {"b1", "orders", "B", Failed},
				{"n1", "orders", "", Failed}, {"a3", "orders", "A", Waiting}, {"b2", "orders", "B", Waiting},
				{"n2", "orders", "", Failed},
			})
			if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() - interval '1 minute' WHERE status = 'FAILED'"); err != nil {
				t.Fatal(err)
			}
			first, err := store.BeginClaim(ctx, 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer first.Abort(ctx)
			if got := eventIDs(first.Rows); !slices.Equal(got, tt.first) {
				t.Fatalf("the first claim took %v, want %v", got, tt.first)
			}
			beside := beginIDs(ctx, t, store, nil)
			if !slices.Equal(beside, tt.beside) {
				t.Errorf("a claim beside it, leaving nothing out, took %v, want %v", beside, tt.beside)
			}
			var ids []int64
			for _, r := range first.Rows {
				ids = append(ids, r.ID)
			}
			if got := beginIDs(ctx, t, store, ids); !slices.Equal(got, tt.without) {
				t.Errorf("a claim beside it, leaving its rows out, took %v, want %v", got, tt.without)
			}
		})
	}
}

// beginIDs begins a claim of up to 10 rows leaving out exclude, and
// returns the event ids of its rows, then lets them go.
func beginIDs(ctx context.Context, t *testing.T, store *Store, exclude []int64) []string {
	t.Helper()
	c, err := store.BeginClaim(ctx, 10, exclude)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abort(ctx)
	return eventIDs(c.Rows)
}

func eventIDs(rows []Row) []string {
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.EventID)
	}
	return ids
}

func TestWithoutIDs(t *testing.T) {
	ids := []int64{5, 6, 7, 8, 9}
	id := func(i int) int64 { return ids[i] }
	for _, tt := range []struct {
		limit   int
		exclude []int64
		want    []int
	}{
		{10, nil, []int{0, 1, 2, 3, 4}},
		{2, nil, []int{0, 1}},
		{10, []int64{6, 8}, []int{0, 2, 4}},
		{2, []int64{5}, []int{1, 2}},
		{3, []int64{5, 6, 7, 8, 9}, nil},
	} {
		if got := withoutIDs(len(ids), tt.limit, tt.exclude, id); !slices.Equal(got, tt.want) {
			t.Errorf("withoutIDs(limit %d, exclude %v) = %v, want %v", tt.limit, tt.exclude, got, tt.want)
		}
	}
}
