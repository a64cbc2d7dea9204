package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// TestTimestampTypeChangeHealsByItself: a brief type change of the
// timestamp column (F8 of the second adversarial pass) under load on a few
// keys. The rows written meanwhile lack only their timestamp: they are
// parked FAILED and the poller sends them with the time of delivery, and
// the later rows of their keys that waited behind them follow, in their
// keys' order. Every event arrives once, with no person. On main they were
// parked DEAD, held every key, and only `failed retry --all --status dead`
// released them.
func TestTimestampTypeChangeHealsByItself(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	relay := e.startRelay()
	topic := e.topic("order")
	n := 0
	batch := func() {
		t.Helper()
		tx, err := e.conn.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 10; k++ {
			n++
			insert(t, tx, "order", fmt.Sprintf("k%d", k), "E", fmt.Sprintf(`{"n": %d}`, n))
		}
		if err := tx.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	batch()
	e.readN(topic, 10, 30*time.Second)
	mustExec(t, e.conn, "ALTER TABLE outbox ALTER COLUMN created_at TYPE text")
	for range 5 {
		batch()
	}
	mustExec(t, e.conn, "ALTER TABLE outbox ALTER COLUMN created_at TYPE timestamptz USING created_at::timestamptz")
	for range 5 {
		batch()
	}
	recs := e.readDistinct(topic, n)
	e.waitFor("nothing is left held", 30*time.Second, func() bool {
		return e.statusCount("FAILED")+e.statusCount("DEAD")+e.statusCount("WAITING") == 0
	})
	if d := e.statusCount("DELIVERED"); d < 50 {
		t.Fatalf("%d rows delivered by the poller, want the 50 written while the column was text, and those that waited behind them", d)
	}
	last := map[string]int{}
	for _, r := range recs {
		var v struct{ N int }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		if v.N <= last[string(r.Key)] {
			t.Fatalf("key %s: event %d after %d", r.Key, v.N, last[string(r.Key)])
		}
		last[string(r.Key)] = v.N
	}
	relay.stop(30 * time.Second)
	if all := e.readAll(topic); len(all) != n {
		t.Fatalf("%d records for %d events: some sent twice", len(all), n)
	}
}
