package status

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/migrations"
)

// TestChangesNotifyThePoller: each change that makes parked rows
// deliverable at once notifies DueChannel when it commits, and ListenDue
// hears it.
func TestChangesNotifyThePoller(t *testing.T) {
	t.Parallel()
	_, pool := claimTestStore(t)
	ctx := context.Background()
	store := NewStore(pool, "public", "outbox_delivery", Pauses("public", migrations.PauseTable, "s1"))
	if _, err := store.PauseTopic(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	ids := parkAll(ctx, t, store, pool, []parked{
		{"f1", "t", "k", Failed}, {"d1", "t", "j", Dead}, {"w1", "t", "j", Waiting},
		{"d2", "t", "i", Dead}, {"w2", "t", "i", Waiting}, {"p1", "p", "k", Paused},
	})
	woken := listenDue(ctx, t, pool)
	for _, tt := range []struct {
		name   string
		change func() error
	}{
		{"retry", func() error { _, err := store.Retry(ctx, RetryOptions{IDs: []int64{ids["f1"]}}); return err }},
		{"skip releasing a waiting row", func() error { _, err := store.Skip(ctx, SkipOptions{IDs: []int64{ids["d1"]}}); return err }},
		{"purge releasing a waiting row", func() error { _, err := store.Purge(ctx, PurgeOptions{IDs: []int64{ids["d2"]}}); return err }},
		{"resume", func() error { _, err := store.ResumeTopic(ctx, "p"); return err }},
		{"retry to another topic", func() error {
			_, err := store.Retry(ctx, RetryOptions{IDs: []int64{ids["f1"]}, Topic: "t2"})
			return err
		}},
	} {
		if err := tt.change(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		select {
		case <-woken:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no notification on %s within 10 s", tt.name, DueChannel)
		}
	}
}

// listenDue runs ListenDue on a connection of its own until the test
// ends, once it listens, and returns what its woken sends on.
func listenDue(ctx context.Context, t *testing.T, pool *pgxpool.Pool) <-chan struct{} {
	t.Helper()
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	var pid uint32 = conn.PgConn().PID()
	lctx, cancel := context.WithCancel(ctx)
	woken := make(chan struct{}, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ListenDue(lctx, conn, func() { woken <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = conn.Close(context.Background())
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		var listening bool
		err := pool.QueryRow(ctx, "SELECT query = 'LISTEN "+DueChannel+"' FROM pg_stat_activity WHERE pid = $1", pid).Scan(&listening)
		if err != nil {
			t.Fatal(err)
		}
		if listening {
			return woken
		}
		if time.Now().After(deadline) {
			t.Fatal("ListenDue did not listen within 10 s")
		}
		time.Sleep(10 * time.Millisecond) // polls pg_stat_activity
	}
}
