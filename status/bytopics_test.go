package status

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/migrations"
)

// TestClaimByTopics: with ByTopics, the held rows of the topics it names
// are claimed as ByTopic claims them (a topic's rows, keyed or not,
// reload rows too, behind its first row not deliverable) and the rows of
// the other topics as ordering by key claims them (a key's behind its
// first; rows without a key, and other keys, go), in one id order; with
// a pause table too (the topics' parameter after the slot's).
func TestClaimByTopics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		paused string // a topic paused, if any
		// claims are the event ids each claim takes, the rows of
		// notDue made due before claim i when i is in dueAt.
		claims []string
		dueAt  map[int][]string
	}{
		{name: "without a pause table", claims: []string{"f g h r2", "a b c r1", "d e", ""},
			dueAt: map[int][]string{1: {"a"}, 2: {"d"}}},
		{name: "both firsts due at once", claims: []string{"f g h r2", "a b c d e r1", ""},
			dueAt: map[int][]string{1: {"a", "d"}}},
		{name: "beside a paused topic", paused: "audit", claims: []string{"f g r2", "a b c r1", "d e", ""},
			dueAt: map[int][]string{1: {"a"}, 2: {"d"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			_, pool := claimTestStore(t)
			opts := []Option{ByTopics("events", "audit")}
			if tc.paused != "" {
				opts = append(opts, Pauses("public", migrations.PauseTable, "s1"))
			}
			store := NewStore(pool, "public", "outbox_delivery", opts...)
			ids := parkMixed(ctx, t, store, pool)
			if tc.paused != "" {
				if _, err := store.PauseTopic(ctx, tc.paused); err != nil {
					t.Fatal(err)
				}
			}
			for i, want := range tc.claims {
				for _, id := range tc.dueAt[i] {
					if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() WHERE id = $1", ids[id]); err != nil {
						t.Fatal(err)
					}
				}
				if got := strings.Join(claimIDs(ctx, t, store, 100, delivered), " "); got != want {
					t.Fatalf("claim %d took %q, want %q", i, got, want)
				}
			}
		})
	}
}

// parkMixed parks the rows of TestClaimByTopics and TestHeldKeysByTopics:
// events and audit ordered by topic, orders by key; a (events) and d
// (orders, key k1) FAILED and not due; reload rows r1 (events, key x)
// and r2 (orders, key k3).
func parkMixed(ctx context.Context, t *testing.T, store *Store, pool *pgxpool.Pool) map[string]int64 {
	t.Helper()
	ids := parkAll(ctx, t, store, pool, []parked{
		{"a", "events", "k1", Failed}, {"b", "events", "", Waiting}, {"c", "events", "k2", Waiting},
		{"d", "orders", "k1", Failed}, {"e", "orders", "k1", Waiting}, {"f", "orders", "k2", Waiting},
		{"g", "orders", "", Waiting}, {"h", "audit", "k9", Waiting},
	})
	if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() + interval '1 hour' WHERE id = ANY($1)",
		[]int64{ids["a"], ids["d"]}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_delivery (event_id, source_table, topic, record_key, status, reload, last_error)
		VALUES ('r1', 'public.outbox', 'events', 'x', 'FAILED', true, 'reset'), ('r2', 'public.outbox', 'orders', 'k3', 'FAILED', true, 'reset')`); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestHeldKeysByTopics: with ByTopics, HeldKeys names the topics it
// names with the empty key and the other topics' keys; ReloadKeys only
// the other topics' reload keys; StillHeld answers each key as its topic
// is ordered.
func TestHeldKeysByTopics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, pool := claimTestStore(t)
	store := NewStore(pool, "public", "outbox_delivery", ByTopics("events", "audit"))
	parkMixed(ctx, t, store, pool)
	byName := func(a, b Key) int { return strings.Compare(a.Topic+"/"+a.Key, b.Topic+"/"+b.Key) }
	for _, tc := range []struct {
		name string
		read func() ([]Key, error)
		want []Key
	}{
		{"HeldKeys", func() ([]Key, error) { return store.HeldKeys(ctx) },
			[]Key{{Topic: "audit"}, {Topic: "events"}, {Topic: "orders", Key: "k1"}, {Topic: "orders", Key: "k2"}}},
		{"ReloadKeys", func() ([]Key, error) {
			var keys []Key
			err := store.ReloadKeys(ctx, func(topic string, key []byte) { keys = append(keys, Key{Topic: topic, Key: string(key)}) })
			return keys, err
		}, []Key{{Topic: "orders", Key: "k3"}}},
		{"StillHeld", func() ([]Key, error) {
			return store.StillHeld(ctx, []Key{{Topic: "events"}, {Topic: "orders", Key: "k1"}, {Topic: "orders", Key: "k5"},
				{Topic: "audit"}, {Topic: "other"}})
		}, []Key{{Topic: "audit"}, {Topic: "events"}, {Topic: "orders", Key: "k1"}}},
	} {
		got, err := tc.read()
		slices.SortFunc(got, byName)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
