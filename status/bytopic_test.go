package status

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestClaimByTopic: ordering by topic, a topic's held rows, keyed or not,
// reload rows too, are claimed only while every earlier one of the topic
// is deliverable; another topic's go on; HeldKeys and StillHeld name
// topics, with the empty key.
func TestClaimByTopic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, pool := claimTestStore(t)
	store := NewStore(pool, "public", "outbox_delivery", ByTopic())
	ids := parkAll(ctx, t, store, pool, []parked{
		{"a", "events", "k1", Failed}, {"b", "events", "", Waiting}, {"c", "events", "k2", Waiting},
		{"d", "other", "", Waiting}, {"e", "other", "k1", Waiting},
	})
	if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() + interval '1 hour' WHERE id = $1", ids["a"]); err != nil {
		t.Fatal(err)
	}
	// A reload row of the topic after them (a reset row the trigger added).
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_delivery (event_id, source_table, topic, status, reload, last_error)
		VALUES ('r', 'public.outbox', 'events', 'FAILED', true, 'reset')`); err != nil {
		t.Fatal(err)
	}
	keys, err := store.HeldKeys(ctx)
	slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(a.Topic, b.Topic) })
	if want := []Key{{Topic: "events"}, {Topic: "other"}}; err != nil || !slices.Equal(keys, want) {
		t.Fatalf("HeldKeys %v, %v; want %v", keys, err, want)
	}
	claim := func() string {
		t.Helper()
		var got []string
		_, err := store.Claim(ctx, 100, func(_ context.Context, rows []Row) []Outcome {
			var out []Outcome
			for _, r := range rows {
				got = append(got, r.EventID)
				out = append(out, Outcome{ID: r.ID, Delivered: true})
			}
			return out
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, " ")
	}
	if got := claim(); got != "d e" {
		t.Fatalf("claimed %q while the topic's first row is not due, want the other topic's: d e", got)
	}
	if still, err := store.StillHeld(ctx, []Key{{Topic: "events", Key: "k2"}, {Topic: "other", Key: "k1"}}); err != nil ||
		!slices.Equal(still, []Key{{Topic: "events"}}) {
		t.Fatalf("StillHeld %v, %v; want events alone, with the empty key", still, err)
	}
	if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() WHERE id = $1", ids["a"]); err != nil {
		t.Fatal(err)
	}
	if got := claim(); got != "a b c r" {
		t.Fatalf("claimed %q once the topic's first row is due, want a b c r", got)
	}
	if got := claim(); got != "" {
		t.Fatalf("claimed %q, want nothing left", got)
	}
}
