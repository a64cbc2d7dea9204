package status

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// TestClaimBesidePausedRows: beside many PAUSED rows of a paused topic
// and a key held by a DEAD row with many WAITING rows behind it, a claim
// takes the one due FAILED row elsewhere. It reports how long the claim
// took and its plan. CDC_RELAY_TEST_CLAIM_PAUSED and CDC_RELAY_TEST_CLAIM_WAITING
// set how many rows each group has (20,000 unless set).
func TestClaimBesidePausedRows(t *testing.T) {
	paused, waiting := envCount(t, "CDC_RELAY_TEST_CLAIM_PAUSED"), envCount(t, "CDC_RELAY_TEST_CLAIM_WAITING")
	_, pool := claimTestStore(t)
	ctx := context.Background()
	store := NewStore(pool, "public", "outbox_delivery", Pauses("public", migrations.PauseTable, "s1"))
	if _, err := store.PauseTopic(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, last_error, status)" +
			" SELECT 'p' || i, 'held', convert_to('k' || (i % 1000), 'UTF8'), '{}', 'paused', 'PAUSED' FROM generate_series(1, $1) AS i", []any{paused}},
		{"INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, last_error, status)" +
			" SELECT 'd' || i, 'orders', 'D', '{}', 'x', CASE WHEN i = 0 THEN 'DEAD' ELSE 'WAITING' END FROM generate_series(0, $1) AS i", []any{waiting}},
		{"INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, last_error, status) VALUES ('f', 'orders', 'F', '{}', 'x', 'FAILED')", nil},
		{"ANALYZE outbox_delivery", nil},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	got := claimIDs(ctx, t, store, 100, nil)
	took := time.Since(start)
	if !slices.Equal(got, []string{"f"}) {
		t.Fatalf("claim %v, want only f", got)
	}
	t.Logf("claim beside %d PAUSED rows of a paused topic and a DEAD row with %d WAITING behind it: %v", paused, waiting, took)
	t.Log(explainClaim(ctx, t, pool, store, true, 100, "s1"))
}

// envCount is the count the environment variable name sets, or 20,000.
func envCount(t *testing.T, name string) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return 20000
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// TestClaimTurnsJITOff: a claim's transaction runs with PostgreSQL's JIT
// off once its candidates are read (noJIT), and with the planner's other
// settings put back (inIndexOrder is for its ordered queries only).
func TestClaimTurnsJITOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	store := NewStore(pool, "public", "outbox_delivery", SourceTables("public.outbox"))
	if err := store.Failed(ctx, &decoder.Event{ID: []byte("1"), Topic: "orders", Key: []byte("k"), Value: []byte(`{}`), CommitLSN: 0x100}, errors.New("refused")); err != nil {
		t.Fatal(err)
	}
	c, err := store.BeginClaim(ctx, 10, nil)
	if err != nil || len(c.Rows) != 1 {
		t.Fatalf("BeginClaim: %d rows, %v", len(c.Rows), err)
	}
	defer c.Abort(ctx)
	var jit, seqscan string
	if err := c.tx.QueryRow(ctx, "SELECT current_setting('jit'), current_setting('enable_seqscan')").Scan(&jit, &seqscan); err != nil {
		t.Fatal(err)
	}
	if jit != "off" || seqscan != "on" {
		t.Errorf("in the claim's transaction jit = %s, enable_seqscan = %s; want off, and on again", jit, seqscan)
	}
}
