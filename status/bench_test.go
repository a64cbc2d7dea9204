package status

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/cpuclock"
)

// benchRows is the rows of the status benchmarks: a claim of the default
// --retry-batch, or a park of as many events.
const benchRows = 2000

// benchPool is a pool of one connection on a database of the
// benchmark's own, migrated, and a clock of its CPU time.
func benchPool(b *testing.B) (context.Context, *pgxpool.Pool, *cpuclock.Clock) {
	b.Helper()
	ctx, db, _ := pg.ConnectDB(b, 30*time.Minute)
	cfg, err := pgxpool.ParseConfig(db.URL())
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return ctx, pool, cpuclock.New(ctx, b, pool)
}

// benchEvent is event j of op i: its own key, a 250-byte value, two
// headers.
func benchEvent(i, j int) *decoder.Event {
	id := fmt.Sprintf("%d-%d", i, j)
	return &decoder.Event{ID: []byte(id), Topic: "orders", Key: []byte("k" + id), Value: []byte(fmt.Sprintf(`{"pad": "%0230d"}`, j)),
		CommitLSN: uint64(0x1000 + i), Headers: []decoder.Header{{Key: "id", Value: []byte(id)}, {Key: "type", Value: []byte("OrderPlaced")}}}
}

// BenchmarkParkHeld is the stream's park of held events (a held key's or
// a paused topic's, ParkHeld): each op parks benchRows events, WAITING,
// into a status table emptied before it (not timed). It reports the CPU
// time of the benchmark and its PostgreSQL backend too (cpuclock.Clock).
func BenchmarkParkHeld(b *testing.B) {
	ctx, pool, clock := benchPool(b)
	store := NewStore(pool, "public", "outbox_delivery", SourceTables("public.outbox"))
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		if _, err := pool.Exec(ctx, "TRUNCATE outbox_delivery"); err != nil {
			b.Fatal(err)
		}
		held := make([]Held, benchRows)
		for j := range held {
			held[j] = Held{Event: benchEvent(i, j), Reason: errors.New("waits")}
		}
		clock.Start(b)
		if err := store.ParkHeld(ctx, held); err != nil {
			b.Fatal(err)
		}
		clock.Stop(b)
	}
	clock.Report(b, benchRows)
}

// BenchmarkClaimFailedAgain is the poller's claim of rows that fail
// again: each op claims the benchRows FAILED rows (each its own key) and
// records every attempt as failed, due again at once, so that the next
// op claims them again; the table is vacuumed before each op (not timed),
// so that each claims the same table. It reports the CPU time of the
// benchmark and its PostgreSQL backend too (cpuclock.Clock).
func BenchmarkClaimFailedAgain(b *testing.B) {
	ctx, pool, clock := benchPool(b)
	store := NewStore(pool, "public", "outbox_delivery", SourceTables("public.outbox"))
	for j := 0; j < benchRows; j++ {
		if err := store.Failed(ctx, benchEvent(0, j), errors.New("refused")); err != nil {
			b.Fatal(err)
		}
	}
	benchClaims(ctx, b, pool, clock, store, benchRows, true)
}

// benchClaims times b.N claims of store that fail every row they claim
// again (due at once: the next claim takes them again), each expected to
// claim want rows, the table vacuumed before each (not timed) if vacuum;
// it reports the CPU time per row claimed (per claim when none is).
func benchClaims(ctx context.Context, b *testing.B, pool *pgxpool.Pool, clock *cpuclock.Clock, store *Store, want int, vacuum bool) {
	again := errors.New("again")
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		if vacuum {
			if _, err := pool.Exec(ctx, "VACUUM outbox_delivery"); err != nil {
				b.Fatal(err)
			}
		}
		clock.Start(b)
		n, err := store.Claim(ctx, benchRows, func(_ context.Context, rows []Row) []Outcome {
			out := make([]Outcome, len(rows))
			for j, r := range rows {
				out[j] = Outcome{ID: r.ID, Err: again, RetryIn: -time.Second}
			}
			return out
		})
		clock.Stop(b)
		if err != nil || n != want {
			b.Fatalf("Claim: %d rows, %v; want %d", n, err, want)
		}
	}
	clock.Report(b, max(want, 1))
}

// backlogRows and backlogKeys are another publisher's backlog beside
// Kafka's rows in BenchmarkClaimBesideABacklog: a webhook's receiver out
// for 30 s under 1,000 events/s, each key's first event FAILED (not due:
// the receiver is still out) and the rest WAITING behind it.
const backlogRows, backlogKeys = 30000, 1000

// BenchmarkClaimBesideABacklog is Kafka's claim, alone in the status
// table and beside a webhook publisher's backlog (backlogRows of
// backlogKeys keys): "empty" claims nothing (Kafka's poller looking while
// nothing of its own is due, which it does every poll interval), "2000"
// claims benchRows FAILED rows that fail again, as
// BenchmarkClaimFailedAgain. It reports the CPU time of the benchmark and
// its PostgreSQL backend too (cpuclock.Clock).
func BenchmarkClaimBesideABacklog(b *testing.B) {
	for _, backlog := range []int{0, backlogRows} {
		for _, own := range []int{0, benchRows} {
			name := fmt.Sprintf("backlog=%d/own=%d", backlog, own)
			b.Run(name, func(b *testing.B) { benchmarkClaimBeside(b, backlog, own) })
		}
	}
}

func benchmarkClaimBeside(b *testing.B, backlog, own int) {
	ctx, pool, clock := benchPool(b)
	store := NewStore(pool, "public", "outbox_delivery", SourceTables("public.outbox"))
	partner := NewStore(pool, "public", "outbox_delivery", SourceTables("public.outbox"), Publisher("partner"))
	var held []Held
	for j := 0; j < backlog; j++ {
		ev := benchEvent(1, j)
		ev.Topic, ev.Key = "wallet", []byte(fmt.Sprintf("w%d", j%backlogKeys))
		if j < backlogKeys {
			if err := partner.Failed(ctx, ev, errors.New("HTTP 500")); err != nil {
				b.Fatal(err)
			}
			continue
		}
		held = append(held, Held{Event: ev, Reason: errors.New("waits")})
	}
	if err := partner.ParkHeld(ctx, held); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() + interval '1 hour' WHERE publisher = 'partner' AND status = 'FAILED'"); err != nil {
		b.Fatal(err)
	}
	for j := 0; j < own; j++ {
		if err := store.Failed(ctx, benchEvent(0, j), errors.New("refused")); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE outbox_delivery"); err != nil {
		b.Fatal(err)
	}
	benchClaims(ctx, b, pool, clock, store, own, true)
}

// blockedKeys is the keys held behind a parked event in
// BenchmarkClaimManyBlockedKeys.
const blockedKeys = 100000

// BenchmarkClaimManyBlockedKeys is the claim of benchRows due rows beside
// blockedKeys keys each held behind a FAILED row not due yet (a topic
// refused for an hour under a load of many keys). Its plans cost past
// PostgreSQL's jit_above_cost, and JIT is on by default: the claim turns it
// off (BeginClaim). It reports the CPU time of the benchmark and its
// PostgreSQL backend too.
func BenchmarkClaimManyBlockedKeys(b *testing.B) {
	ctx, pool, clock := benchPool(b)
	store := NewStore(pool, "public", "outbox_delivery", SourceTables("public.outbox"))
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_delivery (event_id, source_table, topic, record_key, record_value, status, last_error, commit_lsn, next_attempt_at)
		SELECT 'b-' || g, 'public.outbox', 'orders', ('blocked-' || g)::bytea, '{}'::bytea, 'FAILED', 'refused', '0/10', now() + interval '1 hour'
		FROM generate_series(1, $1::int) AS g`, blockedKeys); err != nil {
		b.Fatal(err)
	}
	for j := 0; j < benchRows; j++ {
		if err := store.Failed(ctx, benchEvent(0, j), errors.New("refused")); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE outbox_delivery"); err != nil {
		b.Fatal(err)
	}
	benchClaims(ctx, b, pool, clock, store, benchRows, false)
}
