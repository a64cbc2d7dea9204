package status

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/progress"
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

// TestHeads: each topic's lowest integer event id among its held rows,
// whatever order they were parked in, and the first row that failed
// (FAILED after an attempt, or DEAD; not an adopted row, FAILED with
// none); a topic with no held row, or only a skipped one, has no head;
// AfterID reads only the rows parked since; Source keeps one table's.
func TestHeads(t *testing.T) {
	t.Parallel()
	_, pool := claimTestStore(t)
	ctx := context.Background()
	store := NewStore(pool, "public", "outbox_delivery")
	parkAll(ctx, t, store, pool, []parked{{"11", "a", "", Waiting}, {"10", "a", "k", Paused}, {"20", "b", "k", Failed}, {"x", "b", "", Waiting},
		{"30", "c", "k", Dead}, {"40", "d", "k", Failed}})
	mustExec(ctx, t, pool, "UPDATE outbox_delivery SET skipped_at = now() WHERE event_id = '30'")
	mustExec(ctx, t, pool, "UPDATE outbox_delivery SET attempts = 0, reload = true, last_error = 'adopted' WHERE event_id = '40'")
	read := func(q HeadsQuery) (map[string]progress.Head, int64) {
		t.Helper()
		r, err := store.Heads(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]progress.Head{}
		for _, h := range r.Heads {
			got[h.Topic] = h
		}
		return got, r.MaxID
	}
	got, maxID := read(HeadsQuery{Topics: []string{"a", "b", "c", "d", "none"}})
	if a := got["a"]; len(got) != 3 || a.MinID != 10 || a.Failing {
		t.Fatalf("heads %+v; want a at 10 (parked second), not failing, b and d", got)
	}
	if b := got["b"]; b.MinID != 20 || !b.Failing || b.Attempts != 1 || !b.Unknown {
		t.Fatalf("b's head %+v; want 20, failing after the stream's refusal, and unknown (x is no integer)", b)
	}
	if d := got["d"]; d.MinID != 40 || d.Failing {
		t.Fatalf("d's head %+v; want 40, an adopted row, not failing", d)
	}
	parkAll(ctx, t, store, pool, []parked{{"5", "a", "", Waiting}})
	if got, _ := read(HeadsQuery{Topics: []string{"a", "b"}, AfterID: maxID}); len(got) != 1 || got["a"].MinID != 5 {
		t.Fatalf("heads since %d: %+v; want a's new row alone", maxID, got)
	}
	mustExec(ctx, t, pool, "UPDATE outbox_delivery SET source_table = 'public.other' WHERE event_id = '5'")
	mustExec(ctx, t, pool, "UPDATE outbox_delivery SET source_table = 'public.events' WHERE event_id <> '5'")
	if got, _ := read(HeadsQuery{Topics: []string{"a"}, Source: "public.events"}); got["a"].MinID != 10 {
		t.Fatalf("heads of public.events: %+v; want a at 10, the other table's 5 left out", got)
	}
}

// TestHeadsNameTheWriters: a transaction parking a row when Heads reads
// is among its Writers: its row, with an id up to MaxID, is not read yet.
func TestHeadsNameTheWriters(t *testing.T) {
	t.Parallel()
	_, pool := claimTestStore(t)
	ctx := context.Background()
	store := NewStore(pool, "public", "outbox_delivery")
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // rolled back at the end
	if _, err := tx.Exec(ctx, "INSERT INTO outbox_delivery (event_id, topic, status, last_error) VALUES ('7', 'a', 'WAITING', 'w')"); err != nil {
		t.Fatal(err)
	}
	read, err := store.Heads(ctx, HeadsQuery{Topics: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Heads) != 0 || len(read.Writers) != 1 {
		t.Fatalf("read %+v; want no head (the row is not committed) and its transaction among the writers", read)
	}
}

// TestHeadsBehindIsNotFailing: a row parked untried behind a slow
// receiver (its reason beginning with BehindPrefix) is a head, holding
// its topic's position, but not failing, so that the team's progress
// table shows no error for a receiver that is merely behind; once the
// poller tried it and failed, it is failing with the attempt's error; a
// row that failed behind it in its topic is the failing one meanwhile.
func TestHeadsBehindIsNotFailing(t *testing.T) {
	t.Parallel()
	_, pool := claimTestStore(t)
	ctx := context.Background()
	store := NewStore(pool, "public", "outbox_delivery", Publisher("partner"))
	behind := errors.New(BehindPrefix + "the receiver of publisher partner is slower than the events arrive (waited 5.1s in its lane); its poller sends it")
	for i, p := range []struct {
		id, topic string
		reason    error
	}{{"10", "a", behind}, {"20", "b", behind}, {"30", "c", behind}, {"31", "c", errors.New("publisher partner: the receiver refused it: 400 Bad Request")}} {
		ev := &decoder.Event{ID: []byte(p.id), Topic: p.topic, Key: []byte("k"), Value: []byte(`{}`), CommitLSN: uint64(0x100 * (i + 1))}
		if err := store.Failed(ctx, ev, p.reason); err != nil {
			t.Fatal(err)
		}
	}
	// The poller tried b's row, and the receiver failed.
	mustExec(ctx, t, pool, "UPDATE outbox_delivery SET attempts = 1, last_error = 'publisher partner: the receiver failed for 5s: 503' WHERE event_id = '20'")
	read, err := store.Heads(ctx, HeadsQuery{Topics: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]progress.Head{}
	for _, h := range read.Heads {
		got[h.Topic] = h
	}
	if a := got["a"]; a.MinID != 10 || a.Failing {
		t.Errorf("a's head %+v; want 10, behind, not failing", a)
	}
	if b := got["b"]; b.MinID != 20 || !b.Failing || b.Attempts != 2 || b.LastError != "publisher partner: the receiver failed for 5s: 503" {
		t.Errorf("b's head %+v; want 20, failing with the poller's attempt (2 attempts, the stream's park counted)", b)
	}
	if c := got["c"]; c.MinID != 30 || !c.Failing || c.LastError != "publisher partner: the receiver refused it: 400 Bad Request" {
		t.Errorf("c's head %+v; want 30, failing with 31's refusal", c)
	}
}
