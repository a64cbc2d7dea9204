package poller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/status"
)

// overlapDB is a migrated database of the test's own with n held rows
// (FAILED and due) of keys k0…k6 in turn, values v0…v(n-1) in id order,
// and a store on its status table.
func overlapDB(t *testing.T, n int) (context.Context, *pgxpool.Pool, *status.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	db := sharedPG.DB(t)
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := migrations.Apply(ctx, conn, migrations.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, last_error, commit_lsn, status, next_attempt_at)
		SELECT 'e' || g, 'orders', convert_to('k' || (g % 7), 'UTF8'), convert_to('v' || g, 'UTF8'), 'refused', '0/10', 'FAILED', now() - interval '1 minute'
		FROM generate_series(0, $1 - 1) g ORDER BY g`, n); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return ctx, pool, status.NewStore(pool, "public", "outbox_delivery")
}

// recordingProducer acknowledges every record, but in its first call
// those of the key refuseKey (refused there, as franz-go fails a
// partition's), and keeps each key's acknowledged values in the order
// produced.
type recordingProducer struct {
	mu        sync.Mutex
	byKey     map[string][]string
	n, calls  int
	refuseKey string
}

func (r *recordingProducer) ProduceWait(_ context.Context, recs []*kgo.Record) []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	out := make([]error, len(recs))
	for i, rec := range recs {
		if r.calls == 1 && r.refuseKey != "" && string(rec.Key) == r.refuseKey {
			out[i] = errTooLarge
			continue
		}
		r.byKey[string(rec.Key)] = append(r.byKey[string(rec.Key)], string(rec.Value))
		r.n++
	}
	return out
}

// inIDOrder fails t unless each key's acknowledged values (v<id>) are in
// the order of their ids.
func inIDOrder(t *testing.T, byKey map[string][]string) {
	t.Helper()
	for key, values := range byKey {
		var seq []int
		for _, v := range values {
			var i int
			if _, err := fmt.Sscanf(v, "v%d", &i); err != nil {
				t.Fatalf("value %q: %v", v, err)
			}
			seq = append(seq, i)
		}
		if !slices.IsSorted(seq) {
			t.Errorf("key %s: acknowledged in the order %v, want their ids' order", key, seq)
		}
	}
}

// runUntilDelivered runs p until every row of the status table is
// DELIVERED, then stops it and waits for Run to return.
func runUntilDelivered(ctx context.Context, t *testing.T, pool *pgxpool.Pool, p *Poller) {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(runCtx) }()
	defer func() { stop(); <-done }()
	waitDelivered(ctx, t, pool)
}

// waitDelivered waits until every row of the status table is DELIVERED.
func waitDelivered(ctx context.Context, t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var left int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM outbox_delivery WHERE status <> 'DELIVERED'").Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows not DELIVERED after a minute", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// overlapCounter counts the claims begun beside one still finishing that
// claimed rows.
type overlapCounter struct {
	*status.Store
	overlapped atomic.Int64
}

func (c *overlapCounter) BeginClaim(ctx context.Context, limit int, exclude []int64) (*status.Claimed, error) {
	claimed, err := c.Store.BeginClaim(ctx, limit, exclude)
	if err == nil && len(exclude) > 0 && len(claimed.Rows) > 0 {
		c.overlapped.Add(1)
	}
	return claimed, err
}

// TestRunOverlapsClaims: over the status table, Run begins each claim
// while the last one's outcomes are written, and the claims so begun take
// rows (the last one's left out, their keys' later rows deliverable);
// every held row is delivered once, each key's in the order of their ids,
// and every row ends DELIVERED; the relay hears of each claim's keys
// (Claimed, then Delivered and its end) one claim at a time.
func TestRunOverlapsClaims(t *testing.T) {
	t.Parallel()
	const rows = 1000
	ctx, pool, store := overlapDB(t, rows)
	prod := &recordingProducer{byKey: map[string][]string{}}
	cs := &overlapCounter{Store: store}
	var mu sync.Mutex
	var events []string // "claimed", "delivered", "ended", in the order the relay hears them
	cfg := DefaultConfig()
	cfg.Batch = 40
	cfg.Claimed = func(keys []status.Key) func() {
		mu.Lock()
		defer mu.Unlock()
		if len(keys) == 0 {
			return nil
		}
		events = append(events, "claimed")
		return func() { mu.Lock(); events = append(events, "ended"); mu.Unlock() }
	}
	cfg.Delivered = func([]status.Key) { mu.Lock(); events = append(events, "delivered"); mu.Unlock() }
	runUntilDelivered(ctx, t, pool, New(cs, prod, cfg))
	if prod.n != rows {
		t.Errorf("%d records produced, want %d, each once", prod.n, rows)
	}
	inIDOrder(t, prod.byKey)
	// 1,000 rows in claims of 40: all but the first begun beside the last.
	if n := cs.overlapped.Load(); n < rows/40/2 {
		t.Errorf("%d claims took rows while the last one finished, want most of the %d", n, rows/40)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i+2 < len(events); i += 3 {
		if got := events[i : i+3]; !slices.Equal(got, []string{"claimed", "delivered", "ended"}) {
			t.Fatalf("the relay heard %v at %d, want each claim's claimed, delivered, ended in turn: %v", got, i, events)
		}
	}
}

// TestOverlapWaitsForARefusal: a claim with a row Kafka refused (every
// record of one key, in the first claim, as franz-go fails a partition)
// is committed before the next claim begins, so that no later row of the
// key goes before the refused one's next attempt; each key's rows are
// acknowledged in the order of their ids. The commits are slowed (a
// trigger sleeps 0.2 s after each update of the status table), so that a
// claim begun beside one would take the key's later rows.
func TestOverlapWaitsForARefusal(t *testing.T) {
	t.Parallel()
	const rows = 300
	ctx, pool, store := overlapDB(t, rows)
	if _, err := pool.Exec(ctx, `CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.2); RETURN NULL; END $$;
		CREATE TRIGGER slow_commit AFTER UPDATE ON outbox_delivery FOR EACH STATEMENT EXECUTE FUNCTION slow_commit()`); err != nil {
		t.Fatal(err)
	}
	prod := &recordingProducer{byKey: map[string][]string{}, refuseKey: "k0"}
	cfg := DefaultConfig()
	cfg.Batch, cfg.RetryBase, cfg.RetryMax = 40, 10*time.Millisecond, 50*time.Millisecond
	runUntilDelivered(ctx, t, pool, New(store, prod, cfg))
	if prod.n != rows {
		t.Errorf("%d records acknowledged, want %d, each once", prod.n, rows)
	}
	inIDOrder(t, prod.byKey)
}

// TestOverlappedClaimAbortedWhenTheLastFails: a claim begun beside one
// whose outcomes were not committed produces nothing and leaves its rows
// as they were, for the next claim.
func TestOverlappedClaimAbortedWhenTheLastFails(t *testing.T) {
	t.Parallel()
	ctx, pool, store := overlapDB(t, 30)
	prod := &recordingProducer{byKey: map[string][]string{}}
	cfg := DefaultConfig()
	cfg.Batch = 10
	p := New(store, prod, cfg)
	lost := errors.New("the commit failed")
	last := &finishing{done: make(chan error, 1), delivered: []int64{1, 2, 3}}
	last.done <- lost
	next, n, err := p.claimOverlapped(ctx, store, last)
	if !errors.Is(err, lost) || next != nil || n != 0 || prod.n != 0 {
		t.Fatalf("claimOverlapped beside a failed commit = %v, %d, %v, %d records; want the commit's error, nothing produced", next, n, err, prod.n)
	}
	// Its rows are not locked: a claim takes them at once.
	c, err := store.BeginClaim(ctx, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abort(ctx)
	if len(c.Rows) != 10 || c.Rows[0].ID != 1 {
		t.Fatalf("the next claim took %d rows from id %v, want 10 from the first", len(c.Rows), c.Rows)
	}
	var failed int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM outbox_delivery WHERE status = 'FAILED'").Scan(&failed); err != nil || failed != 30 {
		t.Fatalf("%d FAILED rows (%v), want the 30 as they were", failed, err)
	}
}
