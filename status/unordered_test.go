package status

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/migrations"
)

// TestClaimUnordered: with Unordered, a due FAILED row is claimed though a
// DEAD row of its key comes before it, oldest due first; WAITING and PAUSED
// rows are claimed as their own heads; a FAILED row not due, and a paused
// topic's rows, are not. The same rows claimed in order give only the
// keys with nothing held before.
func TestClaimUnordered(t *testing.T) {
	t.Parallel()
	_, pool := claimTestStore(t)
	ctx := context.Background()
	opts := []Option{Pauses("public", migrations.PauseTable, "s1")}
	ordered := NewStore(pool, "public", "outbox_delivery", opts...)
	store := NewStore(pool, "public", "outbox_delivery", append(opts, Unordered())...)
	ids := parkAll(ctx, t, store, pool, []parked{
		{"a1", "orders", "A", Dead}, {"a2", "orders", "A", Failed}, {"b1", "orders", "B", Failed},
		{"b2", "orders", "B", Waiting}, {"c1", "orders", "C", Failed}, {"a3", "orders", "A", Paused},
		{"p1", "held", "A", Failed}, {"p2", "held", "", Paused},
	})
	// Due in the reverse of their order: b1 first, then a2.
	for id, due := range map[string]time.Duration{"a2": -time.Minute, "b1": -time.Hour, "c1": time.Hour} {
		if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() + $2::interval WHERE id = $1", ids[id], due); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.PauseTopic(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	if got, want := claimIDs(ctx, t, ordered, 10, nil), []string{"b1", "b2"}; !slices.Equal(got, want) {
		t.Fatalf("claim in order %v, want %v: key A is behind a DEAD row, c1 is not due, topic held is paused", got, want)
	}
	got := claimIDs(ctx, t, store, 10, nil)
	if want := []string{"b1", "a2"}; len(got) < 2 || !slices.Equal(got[:2], want) {
		t.Fatalf("unordered claim %v, want %v first: the oldest due", got, want)
	}
	slices.Sort(got)
	if want := []string{"a2", "a3", "b1", "b2"}; !slices.Equal(got, want) {
		t.Fatalf("unordered claim %v, want %v: every due FAILED, WAITING and PAUSED row of a topic not paused", got, want)
	}
}
