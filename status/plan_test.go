package status

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/migrations"
)

// TestClaimPlanReadsHeldRowsOnly: beside many DELIVERED rows, the claim
// reads the held rows through their indexes (keyed and solo, migration
// 0013), never the whole table.
// CDC_RELAY_TEST_CLAIM_ROWS sets the DELIVERED rows (200,000 by default).
func TestClaimPlanReadsHeldRowsOnly(t *testing.T) {
	delivered := 200000
	if n, err := strconv.Atoi(os.Getenv("CDC_RELAY_TEST_CLAIM_ROWS")); err == nil && n > 0 {
		delivered = n
	}
	_, pool := claimTestStore(t)
	ctx := context.Background()
	store := NewStore(pool, "public", "outbox_delivery", Pauses("public", migrations.PauseTable, "s"))
	for _, sql := range []string{
		`INSERT INTO outbox_delivery (topic, record_key, status, last_error, delivered_at)
		   SELECT 'orders', convert_to('k' || g % 5000, 'UTF8'), 'DELIVERED', 'x', now() FROM generate_series(1, ` + strconv.Itoa(delivered) + `) g`,
		`INSERT INTO outbox_delivery (topic, record_key, status, last_error)
		   SELECT 'orders', convert_to('k' || g % 10, 'UTF8'), CASE WHEN g <= 10 THEN 'FAILED' ELSE 'WAITING' END, 'x' FROM generate_series(1, 100) g`,
		`ANALYZE outbox_delivery`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	plan := explainClaim(ctx, t, pool, store, true, 100, "s")
	t.Logf("%d DELIVERED rows, 100 held:\n%s", delivered, plan)
	if !strings.Contains(plan, "outbox_delivery_keyed_idx") || !strings.Contains(plan, "outbox_delivery_solo_idx") ||
		strings.Contains(plan, "Seq Scan on outbox_delivery") {
		t.Errorf("the claim does not read the held rows through the keyed and solo indexes:\n%s", plan)
	}
	began := time.Now()
	n, err := store.Claim(ctx, 100, func(context.Context, []Row) []Outcome { return nil })
	if err != nil || n != 100 {
		t.Fatalf("Claim = %d, %v; want the 100 held rows", n, err)
	}
	t.Logf("Claim of 100 rows took %s", time.Since(began))
}

// explainClaim returns the plans of the claim's candidates queries, as a
// claim runs them (the solo index's under inIndexOrder), with args.
func explainClaim(ctx context.Context, t *testing.T, pool *pgxpool.Pool, store *Store, analyze bool, args ...any) string {
	t.Helper()
	explain := "EXPLAIN (COSTS OFF) "
	if analyze {
		explain = "EXPLAIN (ANALYZE, COSTS OFF) "
	}
	var plan strings.Builder
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, cq := range store.candidatesQueries() {
			q, ordered := cq.sql, cq.ordered
			var names, before []string
			if ordered {
				var err error
				if names, before, err = setPlanner(ctx, tx, inIndexOrder); err != nil {
					return err
				}
			}
			rows, _ := tx.Query(ctx, explain+q, args...)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			plan.WriteString(strings.Join(lines, "\n") + "\n")
			if ordered {
				if _, err := tx.Exec(ctx, "SELECT set_config(n, v, true) FROM unnest($1::text[], $2::text[]) AS t(n, v)", names, before); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return plan.String()
}

// TestHeldRowsClaimedInConstantTime: beside 20,000 held rows of as many
// keys, a claim of 100 reads 100 rows of the keyed index, and sorts and
// windows none: a claim costs what it takes, not the held rows (a window
// over every held keyed row made a drain cost the square of the
// backlog). A key with a blocking row keeps the rows before it, and none
// after. CDC_RELAY_TEST_CLAIM_DRAIN=n drains n held rows of distinct keys
// 2,000 at a time first and reports each claim's time.
func TestHeldRowsClaimedInConstantTime(t *testing.T) {
	store, pool := claimTestStore(t)
	ctx := context.Background()
	if n, _ := strconv.Atoi(os.Getenv("CDC_RELAY_TEST_CLAIM_DRAIN")); n > 0 {
		reportDrain(ctx, t, store, pool, n)
	}
	for _, sql := range []string{
		// The blocked key: two rows before its FAILED head that is not due, one after.
		`INSERT INTO outbox_delivery (event_id, topic, record_key, last_error, status) VALUES ('b1', 'orders', 'B', 'x', 'WAITING'), ('b2', 'orders', 'B', 'x', 'WAITING')`,
		`INSERT INTO outbox_delivery (event_id, topic, record_key, last_error, status, next_attempt_at) VALUES ('b3', 'orders', 'B', 'x', 'FAILED', now() + interval '1 hour')`,
		`INSERT INTO outbox_delivery (event_id, topic, record_key, last_error, status) VALUES ('b4', 'orders', 'B', 'x', 'WAITING')`,
		`INSERT INTO outbox_delivery (event_id, topic, record_key, last_error, status)
		   SELECT 'k' || g, 'orders', convert_to('k' || g, 'UTF8'), 'x', 'WAITING' FROM generate_series(1, 20000) g`,
		`ANALYZE outbox_delivery`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	plan := explainClaim(ctx, t, pool, store, true, 100)
	if strings.Contains(plan, "WindowAgg") || strings.Contains(plan, "Seq Scan on outbox_delivery") {
		t.Errorf("the claim windows or scans the held rows:\n%s", plan)
	}
	read := regexp.MustCompile(`Index Scan using outbox_delivery_keyed_idx .*actual time=\S+ rows=([0-9.]+) `) // rows=100.00 from PostgreSQL 18
	for _, m := range read.FindAllStringSubmatch(plan, -1) {
		if n, err := strconv.ParseFloat(m[1], 64); err != nil || n > 100 {
			t.Errorf("the keyed index read %s rows for a claim of 100:\n%s", m[1], plan)
		}
	}
	if !read.MatchString(plan) {
		t.Errorf("the claim does not read the keyed index:\n%s", plan)
	}
	got := claimIDs(ctx, t, store, 100, nil)
	if len(got) != 100 || got[0] != "b1" || got[1] != "b2" || got[2] != "k1" || slices.Contains(got, "b4") {
		t.Fatalf("claimed %v…, want b1, b2 (before B's blocking row), then k1…k98, never b4", got[:min(5, len(got))])
	}
}

// reportDrain claims n held rows of distinct keys, 2,000 at a time, and
// logs each claim's time and the whole, then deletes what is left.
func reportDrain(ctx context.Context, t *testing.T, store *Store, pool *pgxpool.Pool, n int) {
	t.Helper()
	for _, sql := range []string{
		`INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, last_error, status)
		   SELECT 'p' || g, 'orders', convert_to('p' || g, 'UTF8'), '{"seq": 1}', 'x', 'WAITING' FROM generate_series(1, ` + strconv.Itoa(n) + `) g`,
		`ANALYZE outbox_delivery`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	for i := 0; ; i++ {
		at := time.Now()
		got, err := store.Claim(ctx, 2000, func(_ context.Context, rows []Row) []Outcome {
			out := make([]Outcome, len(rows))
			for j, r := range rows {
				out[j] = Outcome{ID: r.ID, Delivered: true}
			}
			return out
		})
		if err != nil {
			t.Fatal(err)
		}
		if got == 0 {
			break
		}
		t.Logf("claim %d: %d rows in %s", i, got, time.Since(at).Round(time.Millisecond))
	}
	t.Logf("%d held rows of distinct keys claimed in %s", n, time.Since(began).Round(time.Millisecond))
	if _, err := pool.Exec(ctx, "DELETE FROM outbox_delivery"); err != nil {
		t.Fatal(err)
	}
}
