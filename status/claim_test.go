package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// claimTestStore is a migrated status table on a throwaway cluster.
func claimTestStore(t *testing.T) (*Store, *pgxpool.Pool) {
	t.Helper()
	pool := newTestPool(t)
	return NewStore(pool, "public", "outbox_delivery"), pool
}

// TestClaim: due FAILED rows only, each outcome written as its state, and
// a row another claim holds is skipped, not waited for.
func TestClaim(t *testing.T) {
	t.Parallel()
	store, pool := claimTestStore(t)
	ctx := context.Background()
	for i, id := range []string{"a", "b", "c", "later"} {
		ev := &decoder.Event{ID: []byte(id), Topic: "orders", Key: []byte("k"), Value: []byte(`{"n": 1}`), CommitLSN: uint64(0x100 * (i + 1)),
			Headers: []decoder.Header{{Key: "id", Value: []byte(id)}}}
		if err := store.Failed(ctx, ev, kerr.UnknownTopicOrPartition); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() + interval '1 hour' WHERE event_id = 'later'"); err != nil {
		t.Fatal(err)
	}
	n, err := store.Claim(ctx, 10, func(ctx context.Context, rows []Row) []Outcome {
		if len(rows) != 3 || rows[0].EventID != "a" || string(rows[0].Value) != `{"n": 1}` || string(rows[0].Headers[0].Value) != "a" || rows[0].CommitLSN != 0x100 {
			t.Errorf("claimed %+v, want rows a, b, c with their records", rows)
			return nil
		}
		// While this claim holds them, another claims nothing.
		other, err := store.Claim(ctx, 10, func(context.Context, []Row) []Outcome { return nil })
		if err != nil || other != 0 {
			t.Errorf("a second claim got %d rows (%v), want none: the first holds them", other, err)
		}
		return []Outcome{
			{ID: rows[0].ID, Delivered: true},
			{ID: rows[1].ID, Err: errors.New("still missing"), RetryIn: time.Minute},
			{ID: rows[2].ID, Dead: true, Err: errors.New("gave up")},
		}
	})
	if err != nil || n != 3 {
		t.Fatalf("Claim = %d, %v; want 3 rows", n, err)
	}
	want := map[string]struct {
		status, lastError string
		attempts          int
		delivered         bool
	}{
		"a":     {Delivered, "UNKNOWN_TOPIC_OR_PARTITION", 1, true},
		"b":     {Failed, "still missing", 1, false},
		"c":     {Dead, "gave up", 1, false},
		"later": {Failed, "UNKNOWN_TOPIC_OR_PARTITION", 0, false},
	}
	for id, w := range want {
		var st, lastError string
		var attempts int
		var delivered bool
		var retryIn time.Duration
		err := pool.QueryRow(ctx, "SELECT status, attempts, last_error, delivered_at IS NOT NULL, next_attempt_at - updated_at FROM outbox_delivery WHERE event_id = $1", id).
			Scan(&st, &attempts, &lastError, &delivered, &retryIn)
		if err != nil {
			t.Fatal(err)
		}
		if st != w.status || attempts != w.attempts || delivered != w.delivered || !strings.Contains(lastError, w.lastError) {
			t.Errorf("row %s: %s, %d attempts, delivered %v, %q; want %+v", id, st, attempts, delivered, lastError, w)
		}
		if id == "b" && (retryIn < time.Minute || retryIn > time.Minute+time.Second) {
			t.Errorf("row b: next attempt %s after its update, want a minute", retryIn)
		}
	}
}

// TestClaimRecordsASlowDelivery: a delivery that takes longer than the
// time the outcomes have to be written (a slow broker) still has its
// outcomes written: that time counts from the delivery's end, not from
// the claim, or Kafka would have the events and the rows would be claimed
// and sent again.
func TestClaimRecordsASlowDelivery(t *testing.T) {
	t.Parallel()
	store, pool := claimTestStore(t)
	// Short, so that the test is quick, but long enough for the outcome's
	// statements on a loaded CI machine (200 ms was not, on PostgreSQL 13
	// beside the other suites).
	store.outcomeTimeout = 2 * time.Second
	ctx := context.Background()
	ev := &decoder.Event{ID: []byte("slow"), Topic: "orders", Key: []byte("k"), Value: []byte(`{}`), CommitLSN: 0x100}
	if err := store.Failed(ctx, ev, kerr.RequestTimedOut); err != nil {
		t.Fatal(err)
	}
	n, err := store.Claim(ctx, 10, func(ctx context.Context, rows []Row) []Outcome {
		time.Sleep(store.outcomeTimeout + 300*time.Millisecond) // Kafka answers late
		return []Outcome{{ID: rows[0].ID, Delivered: true}}
	})
	if err != nil || n != 1 {
		t.Fatalf("Claim = %d, %v; want 1 row recorded", n, err)
	}
	var st string
	if err := pool.QueryRow(ctx, "SELECT status FROM outbox_delivery WHERE event_id = 'slow'").Scan(&st); err != nil || st != Delivered {
		t.Fatalf("row: %q (%v), want %s", st, err, Delivered)
	}
}

// TestClaimBytes: a claim takes rows, in the order it claims them, while
// their records fit in ClaimBytes, and always one; a key whose run is cut
// keeps its rows before the cut, and the rows past it are left as they
// were, for the next claim. Ordered and unordered alike.
func TestClaimBytes(t *testing.T) {
	t.Parallel()
	for _, unordered := range []bool{false, true} {
		t.Run(map[bool]string{false: "ordered", true: "unordered"}[unordered], func(t *testing.T) {
			t.Parallel()
			pool := newTestPool(t)
			opts := []Option{ClaimBytes(2500)}
			if unordered {
				opts = append(opts, Unordered())
			}
			store := NewStore(pool, "public", "outbox_delivery", opts...)
			ctx := context.Background()
			// 1,000-byte records: a0, b0, a1, b1, a2; then one too large
			// for the bound alone.
			for i, id := range []string{"a0", "b0", "a1", "b1", "a2", "huge"} {
				size := 1000 - 2
				if id == "huge" {
					size = 5000
				}
				ev := &decoder.Event{ID: []byte(id), Topic: "orders", Key: []byte(id[:1]), Value: []byte(strings.Repeat("x", size)), CommitLSN: uint64(0x100 * (i + 1))}
				if err := store.Failed(ctx, ev, kerr.RequestTimedOut); err != nil {
					t.Fatal(err)
				}
			}
			// Every row due, oldest first, so the unordered claim's order is the ids'.
			if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() - interval '1 hour' + id * interval '1 second'"); err != nil {
				t.Fatal(err)
			}
			var claims [][]string
			for range 4 {
				n, err := store.Claim(ctx, 100, func(ctx context.Context, rows []Row) []Outcome {
					// The rows past the bound are not locked: another
					// session may lock them meanwhile.
					var free int
					if err := pool.QueryRow(ctx, "SELECT count(*) FROM (SELECT id FROM outbox_delivery WHERE status = 'FAILED' FOR UPDATE SKIP LOCKED) f").Scan(&free); err != nil {
						t.Fatal(err)
					}
					var left int
					if err := pool.QueryRow(ctx, "SELECT count(*) FROM outbox_delivery WHERE status = 'FAILED'").Scan(&left); err != nil {
						t.Fatal(err)
					}
					if free != left-len(rows) {
						t.Errorf("%d FAILED rows free to lock during a claim of %d of %d, want the others all", free, len(rows), left)
					}
					var ids []string
					var out []Outcome
					for _, r := range rows {
						ids = append(ids, r.EventID)
						out = append(out, Outcome{ID: r.ID, Delivered: true})
					}
					claims = append(claims, ids)
					return out
				})
				if err != nil || n == 0 {
					t.Fatalf("claim %d: %d rows, %v", len(claims)+1, n, err)
				}
			}
			want := "[[a0 b0] [a1 b1] [a2] [huge]]"
			if got := fmt.Sprint(claims); got != want {
				t.Fatalf("claims %s, want %s: two 1,000-byte records fit in 2,500 bytes, and one too large alone", got, want)
			}
		})
	}
}
