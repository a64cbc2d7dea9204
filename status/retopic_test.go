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
	if _, err := store.Retry(ctx, RetryOptions{IDs: []int64{y}, Topic: "third"}); err == nil || !strings.Contains(err.Error(), `has a row for topic "third" already`) {
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
