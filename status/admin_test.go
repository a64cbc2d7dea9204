package status

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// fixture empties the table and records the rows of every test, ids 1 to 5:
//
//	1 FAILED     topic a, table public.outbox, 2 attempts, next attempt in an hour
//	2 DEAD       topic a, table app.orders_outbox, marked dead 10 days ago
//	3 DEAD       topic b, no table (NULL), marked dead an hour ago
//	4 DELIVERED  topic b, table public.outbox, delivered 2 days ago
//	5 FAILED     topic b, table app.orders_outbox, never tried
func (db *testDB) fixture(ctx context.Context, t *testing.T) {
	t.Helper()
	if _, err := db.conn.Exec(ctx, "TRUNCATE outbox_delivery RESTART IDENTITY"); err != nil {
		t.Fatal(err)
	}
	parker := NewStore(db.conn, "public", "outbox_delivery", SourceTables("public.outbox", "app.orders_outbox"))
	for i, topic := range []string{"a", "a", "b", "b", "b"} {
		ev := &decoder.Event{ID: []byte(fmt.Sprintf("e-%d", i+1)), Topic: topic, Key: []byte("k"),
			Value: []byte(`{"n": 1}`), CommitLSN: uint64(0x1000 * (i + 1)), Table: i % 3,
			Headers: []decoder.Header{{Key: "event_type", Value: []byte("Created")}}}
		if err := parker.Failed(ctx, ev, errors.New("unknown topic")); err != nil {
			t.Fatal(err)
		}
	}
	for _, sql := range []string{
		"UPDATE outbox_delivery SET attempts = 2, next_attempt_at = now() + interval '1 hour' WHERE id = 1",
		"UPDATE outbox_delivery SET status = 'DEAD', attempts = 5, updated_at = now() - interval '10 days' WHERE id = 2",
		"UPDATE outbox_delivery SET status = 'DEAD', attempts = 5, updated_at = now() - interval '1 hour' WHERE id = 3",
		"UPDATE outbox_delivery SET status = 'DELIVERED', attempts = 1, updated_at = now() - interval '2 days', delivered_at = now() - interval '2 days' WHERE id = 4",
	} {
		if _, err := db.conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
}

// rows returns every row by id.
func (db *testDB) rows(ctx context.Context, t *testing.T) map[int64]Row {
	t.Helper()
	list, err := db.store.List(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := map[int64]Row{}
	for _, r := range list {
		m[r.ID] = r
	}
	return m
}

func ids(rows []Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

func TestListAndGet(t *testing.T) {
	t.Parallel()
	ctx, db := newTestDB(t)
	db.fixture(ctx, t)
	for _, tt := range []struct {
		name string
		opts ListOptions
		want []int64
	}{
		{"every row, newest first", ListOptions{}, []int64{5, 4, 3, 2, 1}},
		{"by status", ListOptions{Status: Dead}, []int64{3, 2}},
		{"by topic", ListOptions{Topic: "a"}, []int64{2, 1}},
		{"by status and topic", ListOptions{Status: Failed, Topic: "b"}, []int64{5}},
		{"limit", ListOptions{Limit: 2}, []int64{5, 4}},
		{"nothing matches", ListOptions{Topic: "nosuch"}, []int64{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := db.store.List(ctx, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), tt.want) {
				t.Fatalf("ids %v, want %v", ids(got), tt.want)
			}
		})
	}
	if _, err := db.store.List(ctx, ListOptions{Status: "failed"}); err == nil {
		t.Error("List took a status that is not a state")
	}

	row, err := db.store.Get(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	if row.ID != 4 || row.Status != Delivered || row.Topic != "b" || row.EventID != "e-4" || row.SourceTable != "public.outbox" || string(row.Key) != "k" ||
		string(row.Value) != `{"n": 1}` || len(row.Headers) != 1 || string(row.Headers[0].Value) != "Created" ||
		row.CommitLSN != 0x4000 || row.DeliveredAt.IsZero() || row.LastError != "unknown topic" {
		t.Errorf("Get(4) = %+v", row)
	}
	if row, err := db.store.Get(ctx, 3); err != nil || row.SourceTable != "" || row.EventID != "e-3" {
		t.Errorf("Get(3) of a row without a source table = %+v, %v", row, err)
	}
	_, err = db.store.Get(ctx, 99)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(99): %v, want ErrNotFound", err)
	}
	if want := `id 99 not found in "public"."outbox_delivery"`; err.Error() != want {
		t.Errorf("Get(99): %q, want %q", err, want)
	}
}

// changeCase is a case of the Retry and Purge tests: the options, and what
// the call should return.
type changeCase[O any] struct {
	name    string
	opts    O
	want    []Change
	wantErr []error // each errors.Is the error; nil: no error
	bad     bool    // the options are refused before anything is done
}

// check checks what the call returned: with bad options, a refusal and no
// change; otherwise an error that is each of wantErr (none: no error), and
// the changes want. It returns the ids of the rows that should have
// changed.
func (tt changeCase[O]) check(t *testing.T, got []Change, err error) map[int64]bool {
	t.Helper()
	want := tt.want
	switch {
	case tt.bad && err == nil:
		t.Fatalf("%+v taken; want the options refused", tt.opts)
	case tt.bad:
		want = nil
	case tt.wantErr == nil && err != nil:
		t.Fatal(err)
	}
	for _, w := range tt.wantErr {
		if !errors.Is(err, w) {
			t.Fatalf("error %v, want one that is %v", err, w)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("changed %v, want %v", got, want)
	}
	ids := map[int64]bool{}
	for _, c := range want {
		ids[c.ID] = true
	}
	return ids
}

func TestRetry(t *testing.T) {
	t.Parallel()
	ctx, db := newTestDB(t)
	for _, tt := range []changeCase[RetryOptions]{
		{name: "by id", opts: RetryOptions{IDs: []int64{1, 3}}, want: []Change{{ID: 1, Was: Failed}, {ID: 3, Was: Dead}}},
		{name: "ids repeated and out of order", opts: RetryOptions{IDs: []int64{3, 2, 3}}, want: []Change{{ID: 2, Was: Dead}, {ID: 3, Was: Dead}}},
		{name: "all", opts: RetryOptions{All: true}, want: []Change{{ID: 1, Was: Failed}, {ID: 2, Was: Dead}, {ID: 3, Was: Dead}, {ID: 5, Was: Failed}}},
		{name: "all DEAD", opts: RetryOptions{All: true, Status: Dead}, want: []Change{{ID: 2, Was: Dead}, {ID: 3, Was: Dead}}},
		{name: "all FAILED", opts: RetryOptions{All: true, Status: Failed}, want: []Change{{ID: 1, Was: Failed}, {ID: 5, Was: Failed}}},
		{name: "a delivered row is refused, the others retried", opts: RetryOptions{IDs: []int64{4, 2}},
			want: []Change{{ID: 2, Was: Dead}}, wantErr: []error{ErrDelivered}},
		{name: "a missing id is reported, the others retried", opts: RetryOptions{IDs: []int64{99, 5, 4}},
			want: []Change{{ID: 5, Was: Failed}}, wantErr: []error{ErrNotFound, ErrDelivered}},
		{name: "nothing at all", opts: RetryOptions{IDs: []int64{99}}, want: []Change{}, wantErr: []error{ErrNotFound}},
		{name: "ids and all", opts: RetryOptions{IDs: []int64{1}, All: true}, bad: true},
		{name: "neither ids nor all", opts: RetryOptions{}, bad: true},
		{name: "status without all", opts: RetryOptions{IDs: []int64{1}, Status: Dead}, bad: true},
		{name: "all DELIVERED", opts: RetryOptions{All: true, Status: Delivered}, bad: true},
		{name: "all of a status that is not one", opts: RetryOptions{All: true, Status: "LOST"}, bad: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db.fixture(ctx, t)
			before := db.rows(ctx, t)
			var now time.Time
			if err := db.conn.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
				t.Fatal(err)
			}
			got, err := db.store.Retry(ctx, tt.opts)
			retried := tt.check(t, got, err)
			after := db.rows(ctx, t)
			for id, b := range before {
				a := after[id]
				if !retried[id] {
					if !sameRow(a, b) {
						t.Errorf("row %d was not named but changed:\nbefore %+v\nafter  %+v", id, b, a)
					}
					continue
				}
				if a.Status != Failed || a.Attempts != 0 {
					t.Errorf("row %d: status %s, %d attempts; want FAILED, 0", id, a.Status, a.Attempts)
				}
				if a.NextAttemptAt.Before(now) || a.NextAttemptAt.After(time.Now().Add(time.Minute)) {
					t.Errorf("row %d: next attempt %s, want now (%s)", id, a.NextAttemptAt, now)
				}
				if a.UpdatedAt.Before(now) {
					t.Errorf("row %d: updated_at %s not moved to now (%s)", id, a.UpdatedAt, now)
				}
				if a.LastError != b.LastError || !bytes.Equal(a.Value, b.Value) || a.EventID != b.EventID || a.SourceTable != b.SourceTable {
					t.Errorf("row %d: the record, its source table or its last error changed", id)
				}
			}
		})
	}
}

// TestRetryWaitsForThePoller: a row the poller has locked and then marks
// DELIVERED is not retried, although it was FAILED when Retry started.
func TestRetryWaitsForThePoller(t *testing.T) {
	t.Parallel()
	ctx, db := newTestDB(t)
	db.fixture(ctx, t)
	poller, err := pgx.Connect(ctx, db.url)
	if err != nil {
		t.Fatal(err)
	}
	defer poller.Close(context.Background())
	tx, err := poller.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT id FROM outbox_delivery WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		changes []Change
		err     error
	}
	done := make(chan result, 1)
	go func() {
		changes, err := db.store.Retry(ctx, RetryOptions{IDs: []int64{1, 5}})
		done <- result{changes, err}
	}()
	// Wait until Retry waits on the poller's lock. The poller's transaction
	// would see one snapshot of pg_stat_activity for its whole life: each
	// look clears it first.
	for waiting := false; !waiting; time.Sleep(10 * time.Millisecond) {
		if _, err := poller.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			t.Fatal(err)
		}
		if err := poller.QueryRow(ctx, "SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH target%'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(ctx, "UPDATE outbox_delivery SET status = 'DELIVERED', delivered_at = now() WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if !errors.Is(r.err, ErrDelivered) || !slices.Equal(r.changes, []Change{{ID: 5, Was: Failed}}) {
		t.Fatalf("Retry = %v, %v; want row 5 retried and row 1 refused as delivered", r.changes, r.err)
	}
	if got := db.rows(ctx, t)[1]; got.Status != Delivered || got.Attempts != 2 {
		t.Fatalf("row 1 is %s with %d attempts, want DELIVERED as the poller left it", got.Status, got.Attempts)
	}
}

func TestPurge(t *testing.T) {
	t.Parallel()
	ctx, db := newTestDB(t)
	for _, tt := range []changeCase[PurgeOptions]{
		{name: "by id, FAILED included", opts: PurgeOptions{IDs: []int64{1, 4}}, want: []Change{{ID: 1, Was: Failed}, {ID: 4, Was: Delivered}}},
		{name: "every DEAD row", opts: PurgeOptions{Dead: true}, want: []Change{{ID: 2, Was: Dead}, {ID: 3, Was: Dead}}},
		{name: "DEAD rows older than a day", opts: PurgeOptions{Dead: true, OlderThan: 24 * time.Hour}, want: []Change{{ID: 2, Was: Dead}}},
		{name: "DEAD rows older than a month", opts: PurgeOptions{Dead: true, OlderThan: 30 * 24 * time.Hour}, want: []Change{}},
		{name: "a missing id is reported, the others purged", opts: PurgeOptions{IDs: []int64{5, 99}},
			want: []Change{{ID: 5, Was: Failed}}, wantErr: []error{ErrNotFound}},
		{name: "ids and dead", opts: PurgeOptions{IDs: []int64{1}, Dead: true}, bad: true},
		{name: "neither", opts: PurgeOptions{}, bad: true},
		{name: "older than without dead", opts: PurgeOptions{IDs: []int64{2}, OlderThan: time.Hour}, bad: true},
		{name: "negative age", opts: PurgeOptions{Dead: true, OlderThan: -time.Hour}, bad: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db.fixture(ctx, t)
			before := db.rows(ctx, t)
			got, err := db.store.Purge(ctx, tt.opts)
			purged := tt.check(t, got, err)
			after := db.rows(ctx, t)
			for id, b := range before {
				a, ok := after[id]
				switch {
				case purged[id] && ok:
					t.Errorf("row %d is still there", id)
				case !purged[id] && !ok:
					t.Errorf("row %d was deleted but not named", id)
				case !purged[id] && !sameRow(a, b):
					t.Errorf("row %d was not named but changed", id)
				}
			}
		})
	}
}

// sameRow reports whether a and b hold the same values.
func sameRow(a, b Row) bool {
	return a.ID == b.ID && a.SourceTable == b.SourceTable && a.Status == b.Status && a.Attempts == b.Attempts && a.NextAttemptAt.Equal(b.NextAttemptAt) &&
		a.UpdatedAt.Equal(b.UpdatedAt) && a.LastError == b.LastError && bytes.Equal(a.Value, b.Value) && a.DeliveredAt.Equal(b.DeliveredAt)
}
