package status

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// parked is an event to park: its id, topic and key ("" for none), and
// the state it is parked in.
type parked struct{ id, topic, key, state string }

// parkAll parks evs in order, each in its own commit, and returns the
// status row's id of each event id.
func parkAll(ctx context.Context, t *testing.T, store *Store, pool *pgxpool.Pool, evs []parked) map[string]int64 {
	t.Helper()
	ids := map[string]int64{}
	for i, p := range evs {
		ev := &decoder.Event{ID: []byte(p.id), Topic: p.topic, Value: []byte(`{}`), CommitLSN: uint64(0x100 * (i + 1))}
		if p.key != "" {
			ev.Key = []byte(p.key)
		}
		var err error
		switch p.state {
		case Failed:
			err = store.Failed(ctx, ev, errors.New("refused"))
		case Dead:
			err = store.Dead(ctx, ev, errors.New("refused for good"))
		case Waiting:
			err = store.Waiting(ctx, ev, errors.New("waits for an earlier event of its key"))
		case Paused:
			err = store.Paused(ctx, ev)
		default:
			t.Fatalf("park %s as %q", p.id, p.state)
		}
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := pool.QueryRow(ctx, "SELECT id FROM outbox_delivery WHERE event_id = $1", p.id).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[p.id] = id
	}
	return ids
}

// claimIDs claims up to limit rows, answers each with outcome, and
// returns the event ids claimed, in the order deliver got them.
func claimIDs(ctx context.Context, t *testing.T, store *Store, limit int, outcome func(Row) Outcome) []string {
	t.Helper()
	var got []string
	_, err := store.Claim(ctx, limit, func(ctx context.Context, rows []Row) []Outcome {
		var out []Outcome
		for _, r := range rows {
			got = append(got, r.EventID)
			if outcome != nil {
				out = append(out, outcome(r))
			}
		}
		return out
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func delivered(r Row) Outcome { return Outcome{ID: r.ID, Delivered: true} }

func stateOf(ctx context.Context, t *testing.T, pool *pgxpool.Pool, id int64) (state string, attempts int) {
	t.Helper()
	if err := pool.QueryRow(ctx, "SELECT status, attempts FROM outbox_delivery WHERE id = $1", id).Scan(&state, &attempts); err != nil {
		t.Fatal(err)
	}
	return state, attempts
}

// TestClaimInOrder: a key behind a DEAD row gives nothing; a key whose
// first row another claim holds is skipped as a whole; a WAITING row that
// fails becomes FAILED, its key's head; a skip releases the rows behind
// it, in order; keyless rows are claimed regardless.
func TestClaimInOrder(t *testing.T) {
	t.Parallel()
	store, pool := claimTestStore(t)
	ctx := context.Background()
	ids := parkAll(ctx, t, store, pool, []parked{
		{"a1", "orders", "A", Dead}, {"b1", "orders", "B", Failed}, {"a2", "orders", "A", Waiting},
		{"b2", "orders", "B", Waiting}, {"n1", "orders", "", Failed}, {"a3", "orders", "A", Waiting},
		{"b3", "orders", "B", Waiting}, {"n2", "orders", "", Waiting}, {"c1", "orders", "C", Failed}, {"c2", "orders", "C", Waiting},
		{"bx", "payments", "B", Waiting}, // the same key on another topic is another key
	})
	if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() + interval '1 hour' WHERE id = $1", ids["c1"]); err != nil {
		t.Fatal(err)
	}
	// Limit 1 holds b1 only: a second claim meanwhile skips key B whole.
	var second []string
	first := claimIDs(ctx, t, store, 1, func(r Row) Outcome {
		second = claimIDs(ctx, t, store, 10, nil)
		return delivered(r)
	})
	if want := []string{"b1"}; !slices.Equal(first, want) {
		t.Fatalf("first claim %v, want %v", first, want)
	}
	if want := []string{"n1", "n2", "bx"}; !slices.Equal(second, want) {
		t.Fatalf("claim beside a claim holding key B's head: %v, want %v (nothing of B, A or C)", second, want)
	}
	failB3 := func(r Row) Outcome {
		if r.EventID == "b3" {
			return Outcome{ID: r.ID, Err: errors.New("refused again"), RetryIn: time.Hour}
		}
		return delivered(r)
	}
	if got, want := claimIDs(ctx, t, store, 10, failB3), []string{"b2", "n1", "b3", "n2", "bx"}; !slices.Equal(got, want) {
		t.Fatalf("claim %v, want %v", got, want)
	}
	if st, n := stateOf(ctx, t, pool, ids["b3"]); st != Failed || n != 1 {
		t.Fatalf("b3, a WAITING row that failed, is %s with %d attempts; want FAILED with 1", st, n)
	}
	if got := claimIDs(ctx, t, store, 10, delivered); len(got) != 0 {
		t.Fatalf("claimed %v; want nothing: a DEAD head, heads not due", got)
	}
	changes, err := store.Skip(ctx, SkipOptions{IDs: []int64{ids["a1"]}})
	if err != nil || !slices.Equal(changes, []Change{{ID: ids["a1"], Was: Dead, Released: 2}}) {
		t.Fatalf("skip a1: %+v, %v; want it skipped, 2 released", changes, err)
	}
	if got, want := claimIDs(ctx, t, store, 10, delivered), []string{"a2", "a3"}; !slices.Equal(got, want) {
		t.Fatalf("claim after the skip: %v, want %v", got, want)
	}
	if st, n := stateOf(ctx, t, pool, ids["a1"]); st != Dead || n != 0 {
		t.Fatalf("skipped a1 is %s, %d attempts; want DEAD, 0", st, n)
	}
}

// TestClaimSkipsPausedTopics: a paused topic's rows are not claimed, for
// the slot that paused it only; pausing twice changes nothing.
func TestClaimSkipsPausedTopics(t *testing.T) {
	t.Parallel()
	_, pool := claimTestStore(t)
	ctx := context.Background()
	store := NewStore(pool, "public", "outbox_delivery", Pauses("public", migrations.PauseTable, "s1"))
	other := NewStore(pool, "public", "outbox_delivery", Pauses("public", migrations.PauseTable, "s2"))
	parkAll(ctx, t, store, pool, []parked{{"p1", "held", "k", Failed}, {"q1", "free", "k", Failed}, {"p2", "held", "", Waiting}})
	for i, want := range []bool{true, false} {
		if changed, err := store.PauseTopic(ctx, "held"); err != nil || changed != want {
			t.Fatalf("pause %d: %v, %v; want changed %v", i+1, changed, err, want)
		}
	}
	if topics, err := store.PausedTopics(ctx); err != nil || !slices.Equal(topics, []string{"held"}) {
		t.Fatalf("paused topics %v, %v", topics, err)
	}
	if got := claimIDs(ctx, t, store, 10, nil); !slices.Equal(got, []string{"q1"}) {
		t.Fatalf("claim %v, want only q1: topic held is paused", got)
	}
	if got := claimIDs(ctx, t, other, 10, nil); !slices.Equal(got, []string{"p1", "q1", "p2"}) {
		t.Fatalf("another slot's claim %v, want every row", got)
	}
	if _, err := NewStore(pool, "public", "outbox_delivery").PauseTopic(ctx, "x"); err == nil {
		t.Fatal("PauseTopic without a pause table: no error")
	}
}

// TestResumeMakesPausedRowsWaiting: resume deletes the pause and makes
// the topic's PAUSED rows WAITING, which are then claimed in order; other
// topics' PAUSED rows stay.
func TestResumeMakesPausedRowsWaiting(t *testing.T) {
	t.Parallel()
	_, pool := claimTestStore(t)
	ctx := context.Background()
	store := NewStore(pool, "public", "outbox_delivery", Pauses("public", migrations.PauseTable, "s1"))
	for _, topic := range []string{"t", "u"} {
		if _, err := store.PauseTopic(ctx, topic); err != nil {
			t.Fatal(err)
		}
	}
	ids := parkAll(ctx, t, store, pool, []parked{{"t1", "t", "k", Paused}, {"u1", "u", "k", Paused}, {"t2", "t", "k", Paused}, {"t3", "t", "j", Paused}})
	if got := claimIDs(ctx, t, store, 10, nil); len(got) != 0 {
		t.Fatalf("claimed %v while both topics are paused", got)
	}
	for i, want := range []bool{true, false} {
		if changed, err := store.ResumeTopic(ctx, "t"); err != nil || changed != want {
			t.Fatalf("resume %d: %v, %v; want changed %v", i+1, changed, err, want)
		}
	}
	for id, want := range map[string]string{"t1": Waiting, "t2": Waiting, "t3": Waiting, "u1": Paused} {
		if st, n := stateOf(ctx, t, pool, ids[id]); st != want || n != 0 {
			t.Errorf("%s is %s with %d attempts; want %s with none", id, st, n, want)
		}
	}
	if topics, err := store.PausedTopics(ctx); err != nil || !slices.Equal(topics, []string{"u"}) {
		t.Fatalf("paused topics %v, %v; want u", topics, err)
	}
	if got := claimIDs(ctx, t, store, 10, delivered); !slices.Equal(got, []string{"t1", "t2", "t3"}) {
		t.Fatalf("claim after resume %v, want t1, t2, t3", got)
	}
}

// TestReloadRowParkedForItsPausedTopic: a reload row (a reset: no topic
// until loaded) is claimed while its topic is paused, since the claim
// cannot know its topic; the outcome Paused makes it PAUSED with the
// record loaded, no attempt counted. The claim then leaves it alone while
// the topic is paused, and the topic's resume makes it WAITING and
// claimable, still a reload row. Ordered and unordered alike.
func TestReloadRowParkedForItsPausedTopic(t *testing.T) {
	t.Parallel()
	for _, unordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("unordered %v", unordered), func(t *testing.T) {
			_, pool := claimTestStore(t)
			ctx := context.Background()
			opts := []Option{Pauses("public", migrations.PauseTable, "s1")}
			if unordered {
				opts = append(opts, Unordered())
			}
			store := NewStore(pool, "public", "outbox_delivery", opts...)
			if _, err := store.PauseTopic(ctx, "orders"); err != nil {
				t.Fatal(err)
			}
			var id int64
			if err := pool.QueryRow(ctx, "INSERT INTO outbox_delivery (event_id, source_table, topic, status, reload, last_error)"+
				" VALUES ('7', 'public.outbox', '', 'FAILED', true, 'reset') RETURNING id").Scan(&id); err != nil {
				t.Fatal(err)
			}
			paused := func(r Row) Outcome {
				loaded := r
				loaded.Topic, loaded.Key, loaded.Value = "orders", []byte("k"), []byte(`{"now": 1}`)
				return Outcome{ID: r.ID, Paused: true, Err: errors.New("its topic is paused"), Loaded: &loaded}
			}
			if got := claimIDs(ctx, t, store, 10, paused); !slices.Equal(got, []string{"7"}) {
				t.Fatalf("claim %v, want the reset row: its topic is not known yet", got)
			}
			row, err := store.Get(ctx, id)
			if err != nil || row.Status != Paused || row.Attempts != 0 || row.Topic != "orders" || string(row.Value) != `{"now": 1}` || !row.Reload {
				t.Fatalf("after the outcome Paused: %+v, %v; want PAUSED, no attempt, topic orders with the loaded record, still a reload row", row, err)
			}
			if got := claimIDs(ctx, t, store, 10, delivered); len(got) != 0 {
				t.Fatalf("claimed %v while its topic is paused", got)
			}
			if _, err := store.ResumeTopic(ctx, "orders"); err != nil {
				t.Fatal(err)
			}
			if st, n := stateOf(ctx, t, pool, id); st != Waiting || n != 0 {
				t.Fatalf("after resume: %s with %d attempts, want WAITING with none", st, n)
			}
			if got := claimIDs(ctx, t, store, 10, delivered); !slices.Equal(got, []string{"7"}) {
				t.Fatalf("claim after resume %v, want the reset row", got)
			}
			if st, n := stateOf(ctx, t, pool, id); st != Delivered || n != 1 {
				t.Fatalf("after its delivery: %s with %d attempts, want DELIVERED with 1", st, n)
			}
		})
	}
}

// TestHeldKeys: the keys with FAILED, DEAD (not skipped), WAITING or
// PAUSED rows, not NULL keys nor reload rows, whose keys ReloadKeys
// reads; StillHeld narrows a list, reload rows holding their keys.
func TestHeldKeys(t *testing.T) {
	t.Parallel()
	store, pool := claimTestStore(t)
	ctx := context.Background()
	ids := parkAll(ctx, t, store, pool, []parked{
		{"1", "o", "failed", Failed}, {"2", "o", "dead", Dead}, {"3", "o", "waiting", Waiting}, {"4", "o", "paused", Paused},
		{"5", "o", "delivered", Failed}, {"6", "o", "skipped", Dead}, {"7", "o", "", Failed}, {"8", "o", "reload", Failed},
	})
	for _, sql := range []string{
		fmt.Sprintf("UPDATE outbox_delivery SET status = 'DELIVERED' WHERE id = %d", ids["5"]),
		fmt.Sprintf("UPDATE outbox_delivery SET reload = true WHERE id = %d", ids["8"]),
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Skip(ctx, SkipOptions{IDs: []int64{ids["6"]}}); err != nil {
		t.Fatal(err)
	}
	k := func(key string) Key { return Key{Topic: "o", Key: key} }
	keys, err := store.HeldKeys(ctx)
	slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(a.Key, b.Key) })
	if want := []Key{k("dead"), k("failed"), k("paused"), k("waiting")}; err != nil || !slices.Equal(keys, want) {
		t.Fatalf("HeldKeys %v, %v; want %v", keys, err, want)
	}
	many := []Key{k("failed"), k("delivered"), k("skipped"), k("reload"), {Topic: "other", Key: "failed"}, k("failed")}
	for i := range 3000 {
		many = append(many, k(fmt.Sprint("never-", i)))
	}
	still, err := store.StillHeld(ctx, many)
	slices.SortFunc(still, func(a, b Key) int { return strings.Compare(a.Key, b.Key) })
	if err != nil || !slices.Equal(still, []Key{k("failed"), k("reload")}) {
		t.Fatalf("StillHeld %v, %v; want failed and reload", still, err)
	}
	var reloads []Key
	if err := store.ReloadKeys(ctx, func(topic string, key []byte) { reloads = append(reloads, Key{topic, string(key)}) }); err != nil ||
		!slices.Equal(reloads, []Key{k("reload")}) {
		t.Fatalf("ReloadKeys %v, %v; want reload", reloads, err)
	}
}

// TestOperatorsAndOrder: retrying a WAITING row is refused with what it
// waits for; list and show say it; skip and purge of a key's head say how
// many they release; skip refuses other states and a second skip.
func TestOperatorsAndOrder(t *testing.T) {
	t.Parallel()
	store, pool := claimTestStore(t)
	ctx := context.Background()
	ids := parkAll(ctx, t, store, pool, []parked{
		{"a1", "o", "A", Dead}, {"a2", "o", "A", Waiting}, {"a3", "o", "A", Dead}, {"a4", "o", "A", Waiting}, {"b1", "o", "B", Dead}, {"b2", "o", "B", Waiting},
	})
	_, err := store.Retry(ctx, RetryOptions{IDs: []int64{ids["a2"]}})
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), fmt.Sprintf("retry, skip or purge id %d", ids["a1"])) {
		t.Fatalf("retry a WAITING row: %v; want ErrHeld naming id %d", err, ids["a1"])
	}
	rows, err := store.List(ctx, ListOptions{Status: Waiting})
	if err != nil || len(rows) != 3 || rows[0].WaitsFor != ids["b1"] || rows[1].WaitsFor != ids["a1"] || rows[2].WaitsFor != ids["a1"] {
		t.Fatalf("list WAITING: %+v, %v; want b2, a4, a2, waiting for b1, a1, a1", rows, err)
	}
	would, err := store.WouldRelease(ctx, []int64{ids["a1"], ids["a2"], ids["a3"], ids["b1"], 1 << 40})
	if want := map[int64]int{ids["a1"]: 1, ids["a2"]: 0, ids["a3"]: 0, ids["b1"]: 1}; err != nil || !maps.Equal(would, want) {
		t.Fatalf("WouldRelease: %v, %v; want %v (a1 and b1 heads of their keys; a3 behind a2)", would, err, want)
	}
	changes, err := store.Skip(ctx, SkipOptions{IDs: []int64{ids["a1"], ids["a2"]}})
	if err == nil || !strings.Contains(err.Error(), "WAITING: skip gives up FAILED and DEAD events only") ||
		!slices.Equal(changes, []Change{{ID: ids["a1"], Was: Dead, Released: 1}}) {
		t.Fatalf("skip a1, a2: %+v, %v; want a1 skipped, 1 released, a2 refused", changes, err)
	}
	if _, err := store.Skip(ctx, SkipOptions{IDs: []int64{ids["a1"]}}); err == nil || !strings.Contains(err.Error(), "skipped already") {
		t.Fatalf("skip a1 again: %v", err)
	}
	row, err := store.Get(ctx, ids["a4"])
	if err != nil || row.WaitsFor != ids["a2"] {
		t.Fatalf("a4 waits for %d (%v), want a2's %d", row.WaitsFor, err, ids["a2"])
	}
	if row, err := store.Get(ctx, ids["a1"]); err != nil || row.Skipped.IsZero() || !strings.HasPrefix(row.LastError, skippedPrefix) {
		t.Fatalf("skipped a1: %+v, %v", row, err)
	}
	changes, err = store.Purge(ctx, PurgeOptions{IDs: []int64{ids["b1"], ids["a3"]}})
	if err != nil || !slices.Equal(changes, []Change{{ID: ids["a3"], Was: Dead}, {ID: ids["b1"], Was: Dead, Released: 1}}) {
		t.Fatalf("purge b1, a3: %+v, %v; want b1 releasing 1, a3 none (a2 is before it)", changes, err)
	}
	if got, want := claimIDs(ctx, t, store, 10, delivered), []string{"a2", "a4", "b2"}; !slices.Equal(got, want) {
		t.Fatalf("claim %v, want %v", got, want)
	}
}

// TestParkHeld: ParkHeld stores WAITING and PAUSED rows in one statement,
// their ids in the order given, as Waiting and Paused store each; an
// event sent again is not stored twice; a row PostgreSQL refuses for its
// data (a NUL in a header) makes it park one at a time, that row degraded.
func TestParkHeld(t *testing.T) {
	t.Parallel()
	_, pool := claimTestStore(t)
	ctx := context.Background()
	store := NewStore(pool, "public", "outbox_delivery")
	ev := func(id string, lsn uint64, hdr string) *decoder.Event {
		e := &decoder.Event{ID: []byte(id), Topic: "t", Key: []byte("k"), Value: []byte(`{}`), CommitLSN: lsn}
		if hdr != "" {
			e.Headers = []decoder.Header{{Key: "h", Value: []byte(hdr)}}
		}
		return e
	}
	wait := errors.New("waits for an earlier event of its key")
	tests := []struct {
		name string
		held []Held
		want string // event_id:status, in id order
	}{
		{"in order", []Held{{Event: ev("a", 0x100, ""), Reason: wait}, {Event: ev("b", 0x100, ""), Paused: true}, {Event: ev("c", 0x200, ""), Reason: wait}},
			"a:WAITING,b:PAUSED,c:WAITING"},
		{"sent again", []Held{{Event: ev("a", 0x100, ""), Reason: wait}, {Event: ev("d", 0x300, ""), Reason: wait}}, "a:WAITING,b:PAUSED,c:WAITING,d:WAITING"},
		{"a row refused for its data", []Held{{Event: ev("e", 0x400, "x\x00y"), Reason: wait}, {Event: ev("f", 0x400, ""), Reason: wait}},
			"a:WAITING,b:PAUSED,c:WAITING,d:WAITING,e:WAITING,f:WAITING"},
	}
	for _, tt := range tests {
		if err := store.ParkHeld(ctx, tt.held); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		rows, err := pool.Query(ctx, "SELECT event_id || ':' || status FROM outbox_delivery ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		rows.Close()
		if strings.Join(got, ",") != tt.want {
			t.Fatalf("%s: rows %v, want %s", tt.name, got, tt.want)
		}
	}
}

// TestNextDue: when the next FAILED row of a topic not paused is due,
// later than now; a row due already, a WAITING row and a paused topic's
// row do not count; none is false.
func TestNextDue(t *testing.T) {
	t.Parallel()
	_, pool := claimTestStore(t)
	ctx := context.Background()
	store := NewStore(pool, "public", "outbox_delivery", Pauses("public", migrations.PauseTable, "s1"))
	if _, ok, err := store.NextDue(ctx); err != nil || ok {
		t.Fatalf("NextDue of an empty table: %v, %v; want none", ok, err)
	}
	parkAll(ctx, t, store, pool, []parked{{"due", "a", "k1", Failed}, {"soon", "a", "k2", Failed}, {"later", "a", "k3", Failed},
		{"paused", "p", "k4", Failed}, {"waits", "a", "k1", Waiting}})
	for id, in := range map[string]string{"due": "-1 minute", "soon": "5 minutes", "later": "10 minutes", "paused": "1 minute"} {
		if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() + $2::interval WHERE event_id = $1", id, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.PauseTopic(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	in, ok, err := store.NextDue(ctx)
	if err != nil || !ok || in < 4*time.Minute || in > 5*time.Minute {
		t.Fatalf("NextDue in %s (%v, %v), want soon's 5 minutes", in, ok, err)
	}
}
