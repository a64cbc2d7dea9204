package status

import (
	"context"
	"os"
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
