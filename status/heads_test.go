package status

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/migrations"
)

// mustExec runs sql on pool, failing the test on an error.
func mustExec(ctx context.Context, t *testing.T, pool *pgxpool.Pool, sql string) {
	t.Helper()
	if _, err := pool.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestPausedBy: a topic a PausedBy select names is paused as the pause
// table's are: its rows are not claimed, and PausedTopics lists it with
// them, once; a row of the select whose topic is NULL pauses nothing.
// Once the select no longer names it, its PAUSED rows are claimed.
func TestPausedBy(t *testing.T) {
	t.Parallel()
	_, pool := claimTestStore(t)
	ctx := context.Background()
	mustExec(ctx, t, pool, "CREATE TABLE team_pauses (topic text, paused boolean)")
	mustExec(ctx, t, pool, "INSERT INTO team_pauses VALUES ('team', true), (NULL, true), ('both', true)")
	store := NewStore(pool, "public", "outbox_delivery", Pauses("public", migrations.PauseTable, "s1"),
		PausedBy("SELECT topic FROM team_pauses WHERE paused"))
	if _, err := store.PauseTopic(ctx, "both"); err != nil {
		t.Fatal(err)
	}
	parkAll(ctx, t, store, pool, []parked{{"t1", "team", "k", Paused}, {"b1", "both", "k", Failed}, {"f1", "free", "k", Failed}, {"t2", "team", "", Paused}})
	if topics, err := store.PausedTopics(ctx); err != nil || !slices.Equal(topics, []string{"both", "team"}) {
		t.Fatalf("paused topics %v, %v; want both and team, once each", topics, err)
	}
	if got := claimIDs(ctx, t, store, 10, nil); !slices.Equal(got, []string{"f1"}) {
		t.Fatalf("claim %v, want only f1", got)
	}
	mustExec(ctx, t, pool, "UPDATE team_pauses SET paused = false WHERE topic = 'team'")
	if got := claimIDs(ctx, t, store, 10, nil); !slices.Equal(got, []string{"t1", "f1", "t2"}) {
		t.Fatalf("claim once the team resumed: %v, want t1, f1 and t2", got)
	}
}

// TestHeads: each topic's head is its first held row by id, keyed or not,
// FAILED or waiting; a topic with no held row has none.
func TestHeads(t *testing.T) {
	t.Parallel()
	_, pool := claimTestStore(t)
	ctx := context.Background()
	store := NewStore(pool, "public", "outbox_delivery")
	parkAll(ctx, t, store, pool, []parked{{"a1", "a", "", Waiting}, {"b1", "b", "k", Failed}, {"a2", "a", "k", Failed}, {"b2", "b", "", Waiting}, {"c1", "c", "k", Dead}})
	mustExec(ctx, t, pool, "UPDATE outbox_delivery SET skipped_at = now() WHERE event_id = 'c1'")
	held, err := store.TopicsHeld(ctx, []string{"a", "b", "c", "none"})
	if slices.Sort(held); err != nil || !slices.Equal(held, []string{"a", "b"}) {
		t.Fatalf("topics held %v, %v; want a and b (c's one row was skipped)", held, err)
	}
	heads, err := store.Heads(ctx, []string{"a", "b", "c", "none"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Head{}
	for _, h := range heads {
		got[h.Topic] = h
	}
	if len(got) != 2 || got["a"].EventID != "a1" || got["a"].Failing() || got["b"].EventID != "b1" || !got["b"].Failing() {
		t.Fatalf("heads %+v; want a1 (waiting) and b1 (failing), none for c (skipped) and none", heads)
	}
}
