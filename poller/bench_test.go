package poller

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/cpuclock"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/status"
)

// drainBatch is the rows one op of BenchmarkDrain claims: the default
// --retry-batch.
const drainBatch = 2000

// BenchmarkDrain is the poller's claim-load-produce-write loop on a real
// status table: each op is one RunOnce that claims drainBatch rows parked
// WAITING (each its own key, with a 250-byte value and two headers;
// parked before the op, not timed), produces them to a producer that
// answers each at once, and records the outcomes. Its cases: every row
// delivered; every tenth refused (FAILED again, its next attempt later).
// It reports the CPU time of the benchmark and its PostgreSQL backend too
// (cpuclock.Clock).
func BenchmarkDrain(b *testing.B) {
	for _, bc := range []struct {
		name    string
		refused int // every refused-th record is refused; 0: none
	}{
		{name: "delivered"},
		{name: "tenth refused", refused: 10},
	} {
		b.Run(bc.name, func(b *testing.B) { benchmarkDrain(b, bc.refused) })
	}
}

func benchmarkDrain(b *testing.B, refused int) {
	ctx, db, conn := sharedPG.ConnectDB(b, 30*time.Minute)
	if _, err := migrations.Apply(ctx, conn, migrations.DefaultConfig()); err != nil {
		b.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(db.URL())
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 1 // one backend, whose CPU time the clock reads
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	clock := cpuclock.New(ctx, b, pool)
	store := status.NewStore(pool, "public", "outbox_delivery", status.SourceTables("public.outbox"))
	p := New(store, &answerAtOnce{refused: refused}, Config{Batch: drainBatch})
	value := []byte(fmt.Sprintf(`{"pad": "%0230d"}`, 0))
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		parkWaiting(ctx, b, pool, store, i, value)
		clock.Start(b)
		n, err := p.RunOnce(ctx)
		clock.Stop(b)
		if err != nil || n != drainBatch {
			b.Fatalf("RunOnce: %d rows, %v; want %d", n, err, drainBatch)
		}
	}
	clock.Report(b, drainBatch)
}

// parkWaiting empties the status table and parks drainBatch events of op
// i WAITING, each its own key.
func parkWaiting(ctx context.Context, b *testing.B, pool *pgxpool.Pool, store *status.Store, i int, value []byte) {
	b.Helper()
	if _, err := pool.Exec(ctx, "TRUNCATE outbox_delivery"); err != nil {
		b.Fatal(err)
	}
	held := make([]status.Held, drainBatch)
	for j := range held {
		id := fmt.Sprintf("%d-%d", i, j)
		held[j] = status.Held{Reason: errors.New("waits"), Event: &decoder.Event{ID: []byte(id), Topic: "orders", Key: []byte("k" + id), Value: value,
			CommitLSN: uint64(0x1000 + i), Headers: []decoder.Header{{Key: "id", Value: []byte(id)}, {Key: "type", Value: []byte("OrderPlaced")}}}}
	}
	if err := store.ParkHeld(ctx, held); err != nil {
		b.Fatal(err)
	}
}

// answerAtOnce is a producer that answers each record at once: every
// refused-th is refused (0: none), the others delivered.
type answerAtOnce struct {
	refused int
	n       int
}

func (a *answerAtOnce) ProduceWait(_ context.Context, recs []*kgo.Record) []error {
	out := make([]error, len(recs))
	for i := range recs {
		if a.n++; a.refused > 0 && a.n%a.refused == 0 {
			out[i] = kerr.MessageTooLarge
		}
	}
	return out
}
