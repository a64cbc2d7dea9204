package status

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// TestRetryToTopic: a DEAD row parked for an illegal topic, retried with a
// new topic, is FAILED and due with its original topic kept; it releases
// the WAITING row behind it in its old topic, takes its place by id in its
// new topic's group, and each row is claimed once, in order. A WAITING
// row, an illegal topic, several ids, an id not in the table and a topic
// the event has a row for already are refused; a second correction keeps
// the first original topic.
func TestRetryToTopic(t *testing.T) {
	t.Parallel()
	store, pool := claimTestStore(t)
	ctx := context.Background()
	ids := parkAll(ctx, t, store, pool, []parked{
		{"g0", "good", "K", Failed}, {"x1", "bad topic!", "K", Dead}, {"x2", "bad topic!", "K", Waiting}, {"g2", "good", "K", Waiting},
	})
	refusals := []struct {
		name string
		opts RetryOptions
		want string
	}{
		{"a WAITING row", RetryOptions{IDs: []int64{ids["x2"]}, Topic: "good"}, "held behind"},
		{"an illegal topic", RetryOptions{IDs: []int64{ids["x1"]}, Topic: "still bad!"}, "illegal character"},
		{"several ids", RetryOptions{IDs: []int64{ids["x1"], ids["g0"]}, Topic: "good"}, "one id at a time"},
		{"all", RetryOptions{All: true, Topic: "good"}, "one id at a time"},
		{"an id not in the table", RetryOptions{IDs: []int64{999}, Topic: "good"}, "not found"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			changes, err := store.Retry(ctx, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || len(changes) != 0 {
				t.Fatalf("retry: %+v, %v; want no change and an error with %q", changes, err, tc.want)
			}
		})
	}
	changes, err := store.Retry(ctx, RetryOptions{IDs: []int64{ids["x1"]}, Topic: "good"})
	if err != nil || !slices.Equal(changes, []Change{{ID: ids["x1"], Was: Dead, Released: 1}}) {
		t.Fatalf("retry x1 to topic good: %+v, %v; want it retried, x2 released", changes, err)
	}
	row, err := store.Get(ctx, ids["x1"])
	if err != nil || row.Topic != "good" || row.OriginalTopic != "bad topic!" || row.Status != Failed || row.Attempts != 0 || row.WaitsFor != ids["g0"] {
		t.Fatalf("x1 after the retry: %+v, %v; want FAILED to good, original topic kept, waiting for g0", row, err)
	}
	if row, err := store.Get(ctx, ids["g2"]); err != nil || row.WaitsFor != ids["g0"] || row.OriginalTopic != "" {
		t.Fatalf("g2: %+v, %v; want it waiting for g0, its topic never corrected", row, err)
	}
	if got, want := claimIDs(ctx, t, store, 10, delivered), []string{"g0", "x1", "x2", "g2"}; !slices.Equal(got, want) {
		t.Fatalf("claim %v, want %v", got, want)
	}
	if got := claimIDs(ctx, t, store, 10, delivered); len(got) != 0 {
		t.Fatalf("claimed %v again; want each row delivered once", got)
	}
	if _, err := store.Retry(ctx, RetryOptions{IDs: []int64{ids["x1"]}, Topic: "other"}); !errors.Is(err, ErrDelivered) {
		t.Fatalf("retry the delivered x1 to another topic: %v; want ErrDelivered", err)
	}

	// Corrected twice, the row keeps the topic it was parked for.
	ev := &decoder.Event{ID: []byte("y"), Topic: "_internal", Value: []byte(`{}`), CommitLSN: 0x9000}
	if err := store.Dead(ctx, ev, errors.New("not allowed")); err != nil {
		t.Fatal(err)
	}
	y := parkedID(ctx, t, store, "y", "_internal")
	for _, topic := range []string{"first", "second"} {
		if _, err := store.Retry(ctx, RetryOptions{IDs: []int64{y}, Topic: topic}); err != nil {
			t.Fatalf("retry y to %s: %v", topic, err)
		}
		if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET status = 'DEAD' WHERE id = $1", y); err != nil {
			t.Fatal(err)
		}
	}
	if row, err := store.Get(ctx, y); err != nil || row.Topic != "second" || row.OriginalTopic != "_internal" {
		t.Fatalf("y corrected twice: %+v, %v; want topic second, original _internal", row, err)
	}

	// The same event parked for two topics: one cannot become the other.
	ev.Topic = "third"
	if err := store.Dead(ctx, ev, errors.New("refused")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Retry(ctx, RetryOptions{IDs: []int64{y}, Topic: "third"}); !errors.Is(err, ErrTopicTaken) || !strings.Contains(err.Error(), `has a row for topic "third" already`) {
		t.Fatalf("retry y to the topic of its other copy: %v", err)
	}
}

// parkedID returns the status row id of event id parked for topic.
func parkedID(ctx context.Context, t *testing.T, store *Store, id, topic string) int64 {
	t.Helper()
	rows, err := store.List(ctx, ListOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.EventID == id {
			return r.ID
		}
	}
	t.Fatalf("no row of event %s for topic %s", id, topic)
	return 0
}

// TestRetryToTopicKept: a row already for the topic, or a reload row, keeps
// its topic (ErrTopicKept) and nothing changes: the rows behind it are not
// reported released and still wait, and Hold is undone or never called.
func TestRetryToTopicKept(t *testing.T) {
	t.Parallel()
	store, pool := claimTestStore(t)
	ctx := context.Background()
	ids := parkAll(ctx, t, store, pool, []parked{{"d", "t", "K", Dead}, {"w", "t", "K", Waiting}, {"r", "u", "R", Dead}})
	if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET reload = true WHERE id = $1", ids["r"]); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, id, topic, want string
	}{
		{"the row's own topic", "d", "t", `is already for topic "t": retry it without --topic`},
		{"a reload row", "r", "v", "correct the topic in the outbox row"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			held, undone := 0, 0
			hold := func(Key) func() { held++; return func() { undone++ } }
			changes, err := store.Retry(ctx, RetryOptions{IDs: []int64{ids[tc.id]}, Topic: tc.topic, Hold: hold})
			if !errors.Is(err, ErrTopicKept) || !strings.Contains(err.Error(), tc.want) || len(changes) != 0 {
				t.Fatalf("retry: %+v, %v; want no change and ErrTopicKept with %q", changes, err, tc.want)
			}
			if held != undone {
				t.Fatalf("held %d times, undone %d; want every hold undone", held, undone)
			}
		})
	}
	if w, err := store.Get(ctx, ids["w"]); err != nil || w.Status != Waiting || w.WaitsFor != ids["d"] {
		t.Fatalf("w: %+v, %v; want it still waiting for d", w, err)
	}
	if d, err := store.Get(ctx, ids["d"]); err != nil || d.Status != Dead || d.OriginalTopic != "" {
		t.Fatalf("d: %+v, %v; want it DEAD and never corrected", d, err)
	}
}

// TestRetryToTopicHolds: a committed correction calls Hold once with the
// new topic and key, and does not undo it; CorrectedHeldKeys returns the
// key while the corrected row is held, and not once it is delivered.
func TestRetryToTopicHolds(t *testing.T) {
	t.Parallel()
	store, pool := claimTestStore(t)
	ctx := context.Background()
	ids := parkAll(ctx, t, store, pool, []parked{{"d", "bad!", "K", Dead}, {"o", "t", "O", Dead}})
	var holds []Key
	undone := 0
	hold := func(k Key) func() { holds = append(holds, k); return func() { undone++ } }
	if _, err := store.Retry(ctx, RetryOptions{IDs: []int64{ids["d"]}, Topic: "good", Hold: hold}); err != nil {
		t.Fatal(err)
	}
	if want := []Key{{Topic: "good", Key: "K"}}; !slices.Equal(holds, want) || undone != 0 {
		t.Fatalf("holds %v, undone %d; want %v, not undone", holds, undone, want)
	}
	if keys, err := store.CorrectedHeldKeys(ctx); err != nil || !slices.Equal(keys, []Key{{Topic: "good", Key: "K"}}) {
		t.Fatalf("CorrectedHeldKeys = %v, %v; want good/K only (o was never corrected)", keys, err)
	}
	if got := claimIDs(ctx, t, store, 10, delivered); !slices.Contains(got, "d") {
		t.Fatalf("claim %v; want d delivered", got)
	}
	if keys, err := store.CorrectedHeldKeys(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("CorrectedHeldKeys after delivery = %v, %v; want none", keys, err)
	}
}

// TestRetryToTopicHoldsATopic: a row without a key corrected into a topic
// the store orders by topic holds that topic (the empty Key), through
// Hold and CorrectedHeldKeys; into a topic ordered by key, nothing.
func TestRetryToTopicHoldsATopic(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	store := NewStore(pool, "public", "outbox_delivery", ByTopics("events"))
	ctx := context.Background()
	ids := parkAll(ctx, t, store, pool, []parked{{"e", "bad!", "", Dead}, {"o", "bad!", "", Dead}})
	var holds []Key
	hold := func(k Key) func() { holds = append(holds, k); return func() {} }
	for _, r := range []struct{ id, topic string }{{"e", "events"}, {"o", "orders"}} {
		if _, err := store.Retry(ctx, RetryOptions{IDs: []int64{ids[r.id]}, Topic: r.topic, Hold: hold}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []Key{{Topic: "events"}}; !slices.Equal(holds, want) {
		t.Fatalf("holds %v; want %v (orders is ordered by key, and the row has none)", holds, want)
	}
	if keys, err := store.CorrectedHeldKeys(ctx); err != nil || !slices.Equal(keys, []Key{{Topic: "events"}}) {
		t.Fatalf("CorrectedHeldKeys = %v, %v; want the topic events only", keys, err)
	}
}
