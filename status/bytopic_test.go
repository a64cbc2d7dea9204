package status

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestClaimByTopic: ordering by topic, a topic's held rows, keyed or not,
// reload rows too, are claimed only while every earlier one of the topic
// is deliverable; another topic's go on, and so do the rows of the empty
// topic (reset rows not read yet), never ordered; HeldKeys and StillHeld
// name topics, with the empty key.
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
	// A reload row of the topic after them, and rows the reset trigger
	// added (the empty topic, not read yet): one DEAD, which orders
	// nothing, one due.
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_delivery (event_id, source_table, topic, status, reload, last_error)
		VALUES ('r', 'public.outbox', 'events', 'FAILED', true, 'reset'), ('r0', 'public.outbox', '', 'DEAD', true, 'gone'),
			('r1', 'public.outbox', '', 'FAILED', true, 'reset')`); err != nil {
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
	if got := claim(); got != "d e r1" {
		t.Fatalf("claimed %q while the topic's first row is not due, want the other topic's and the reset row's: d e r1", got)
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
