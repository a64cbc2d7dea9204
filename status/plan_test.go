package status

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	var plan strings.Builder
	rows, _ := pool.Query(ctx, "EXPLAIN ANALYZE "+store.candidatesQuery(), 100, "s")
	var line string
	if _, err := pgx.ForEachRow(rows, []any{&line}, func() error { plan.WriteString(line + "\n"); return nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d DELIVERED rows, 100 held:\n%s", delivered, plan.String())
	if !strings.Contains(plan.String(), "outbox_delivery_keyed_idx") || !strings.Contains(plan.String(), "outbox_delivery_solo_idx") ||
		strings.Contains(plan.String(), "Seq Scan on outbox_delivery") {
		t.Errorf("the claim does not read the held rows through the keyed and solo indexes:\n%s", plan.String())
	}
	began := time.Now()
	n, err := store.Claim(ctx, 100, func(context.Context, []Row) []Outcome { return nil })
	if err != nil || n != 100 {
		t.Fatalf("Claim = %d, %v; want the 100 held rows", n, err)
	}
	t.Logf("Claim of 100 rows took %s", time.Since(began))
}
