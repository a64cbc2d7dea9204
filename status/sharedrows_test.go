package status

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// TestOthersAllow: the outbox row says the worst of the publishers'
// copies: given up on, then parked, then delivered.
func TestOthersAllow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		state outboxrow.State
		o     others
		want  bool
	}{
		{outboxrow.Delivered, others{}, true},
		{outboxrow.Delivered, others{parked: true}, false},
		{outboxrow.Delivered, others{parked: true, dead: true}, false},
		{outboxrow.Failed, others{}, true},
		{outboxrow.Failed, others{parked: true}, true},
		{outboxrow.Failed, others{parked: true, dead: true}, false},
		{outboxrow.Dead, others{parked: true, dead: true}, true},
		{outboxrow.Dead, others{}, true},
	} {
		if got := othersAllow(c.state, c.o); got != c.want {
			t.Errorf("othersAllow(%v, %+v) = %v, want %v", c.state, c.o, got, c.want)
		}
	}
}

// TestSharedWriteBack: an event sent to Kafka and a webhook publisher,
// each parking its own copy, has its outbox row say delivered only once
// both copies are, and dead while one is given up on whatever the other
// does; a table SharedWriteBack does not name is written as before. Two
// stores that deliver an event's last two copies at once leave its row
// delivered, every time.
func TestSharedWriteBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TABLE shared_outbox (id text PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING', last_error text)`,
		`INSERT INTO shared_outbox (id) SELECT 'e-' || g FROM generate_series(1, 40) g`,
		`CREATE TABLE lone_outbox (id text PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING', last_error text)`,
		`INSERT INTO lone_outbox VALUES ('e-1')`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	cols := writeback.Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED", Dead: "DEAD", ErrorColumn: "last_error"}
	rows, err := writeback.NewRows([]writeback.Table{{Name: "shared_outbox", IDColumn: "id", Columns: cols}, {Name: "lone_outbox", IDColumn: "id", Columns: cols}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := []Option{SourceTables("public.shared_outbox", "public.lone_outbox"), WriteBack(rows), SharedWriteBack("public.shared_outbox")}
	kafka := NewStore(pool, "public", "outbox_delivery", opts...)
	partner := NewStore(pool, "public", "outbox_delivery", append(opts, Publisher("partner"))...)
	park := func(s *Store, id string, table int, dead bool) {
		t.Helper()
		ev := &decoder.Event{ID: []byte(id), Table: table, Topic: "wallet-events", Value: []byte(`{}`), CommitLSN: 0x100}
		f := s.Failed
		if dead {
			f = s.Dead
		}
		if err := f(ctx, ev, fmt.Errorf("%s refused it", s.Publisher())); err != nil {
			t.Fatal(err)
		}
	}
	// deliver claims s's due rows of events ids and delivers them (or
	// fails them, failing).
	deliver := func(s *Store, failing bool, ids ...string) {
		t.Helper()
		want := map[string]bool{}
		for _, id := range ids {
			want[id] = true
		}
		if _, err := s.Claim(ctx, 100, func(ctx context.Context, due []Row) []Outcome {
			var out []Outcome
			for _, r := range due {
				switch {
				case !want[r.EventID]:
				case failing:
					out = append(out, Outcome{ID: r.ID, Err: errors.New("still refused"), RetryIn: -time.Second})
				default:
					out = append(out, Outcome{ID: r.ID, Delivered: true})
				}
			}
			return out
		}); err != nil {
			t.Fatal(err)
		}
	}
	says := func(table, id string) string {
		t.Helper()
		var st string
		if err := pool.QueryRow(ctx, "SELECT status FROM "+table+" WHERE id = $1", id).Scan(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	check := func(stage, table, id, want string) {
		t.Helper()
		if got := says(table, id); got != want {
			t.Errorf("%s: %s row %s says %s, want %s", stage, table, id, got, want)
		}
	}

	// e-1: both copies parked; Kafka's delivered first, then the webhook's.
	park(kafka, "e-1", 0, false)
	park(partner, "e-1", 0, false)
	check("both parked", "shared_outbox", "e-1", "FAILED")
	deliver(kafka, false, "e-1")
	check("Kafka's copy delivered, the webhook's parked", "shared_outbox", "e-1", "FAILED")
	deliver(partner, false, "e-1")
	check("both delivered", "shared_outbox", "e-1", "DELIVERED")

	// e-2: the webhook's copy given up on; Kafka's fails again, then is
	// delivered: the row says dead all along.
	park(kafka, "e-2", 0, false)
	park(partner, "e-2", 0, true)
	check("the webhook's copy dead", "shared_outbox", "e-2", "DEAD")
	deliver(kafka, true, "e-2")
	check("Kafka's copy failed again beside a dead one", "shared_outbox", "e-2", "DEAD")
	deliver(kafka, false, "e-2")
	check("Kafka's copy delivered beside a dead one", "shared_outbox", "e-2", "DEAD")

	// e-3: only the webhook's copy parked (Kafka's delivered by the
	// stream): its delivery makes the row delivered.
	park(partner, "e-3", 0, false)
	deliver(partner, false, "e-3")
	check("the one parked copy delivered", "shared_outbox", "e-3", "DELIVERED")

	// e-5: the webhook's store delivers its copy in a transaction that has
	// not ended when Kafka's delivers its own: Kafka's waits for it, and
	// then sees its copy delivered.
	park(kafka, "e-5", 0, false)
	park(partner, "e-5", 0, false)
	other, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	for _, sql := range []string{
		"SELECT 1 FROM shared_outbox WHERE id = 'e-5' FOR NO KEY UPDATE",
		"UPDATE outbox_delivery SET status = 'DELIVERED' WHERE event_id = 'e-5' AND publisher = 'partner'",
	} {
		if _, err := other.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); deliver(kafka, false, "e-5") }()
	waiting := func() bool {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = current_database()").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	for deadline := time.Now().Add(10 * time.Second); !waiting() && time.Now().Before(deadline); {
		select {
		case <-done:
			deadline = time.Now() // it did not wait: the check below fails
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	check("Kafka's copy delivered after the webhook's, which was committing", "shared_outbox", "e-5", "DELIVERED")

	// A table SharedWriteBack does not name: Kafka's delivery writes its
	// row whatever the webhook's copy is.
	park(kafka, "e-1", 1, false)
	park(partner, "e-1", 1, false)
	deliver(kafka, false, "e-1")
	check("a table not shared", "lone_outbox", "e-1", "DELIVERED")

	// e-10 … e-39: each store delivers its copies at once, many times.
	var ids []string
	for i := 10; i < 40; i++ {
		id := fmt.Sprintf("e-%d", i)
		ids = append(ids, id)
		park(kafka, id, 0, false)
		park(partner, id, 0, false)
	}
	var wg sync.WaitGroup
	for _, s := range []*Store{kafka, partner} {
		wg.Go(func() {
			for range ids {
				if _, err := s.Claim(ctx, 1, func(ctx context.Context, due []Row) []Outcome {
					var out []Outcome
					for _, r := range due {
						out = append(out, Outcome{ID: r.ID, Delivered: true})
					}
					return out
				}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	deliver(kafka, false, ids...) // what a claim of one left to the next
	deliver(partner, false, ids...)
	for _, id := range ids {
		check("delivered at once by both", "shared_outbox", id, "DELIVERED")
	}
}

// TestSharedWriteBackNoDeadlock: Kafka's store and a webhook's end their
// claims of the same two events at once, each with one delivered and the
// other failed, the other way round (a table with a reset trigger, so
// that a failed outcome's row is locked first to look for a reset in
// flight): each locks the events' rows in one order, and both commit,
// every round, with no deadlock.
func TestSharedWriteBackNoDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TABLE lock_outbox (id text PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING', last_error text)`,
		`INSERT INTO lock_outbox (id) SELECT 'e-' || g FROM generate_series(1, 40) g`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	cols := writeback.Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED", Dead: "DEAD", ErrorColumn: "last_error", Pending: []string{"PENDING"}}
	rows, err := writeback.NewRows([]writeback.Table{{Name: "lock_outbox", IDColumn: "id", Columns: cols}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := []Option{SourceTables("public.lock_outbox"), WriteBack(rows), SharedWriteBack("public.lock_outbox")}
	stores := []*Store{NewStore(pool, "public", "outbox_delivery", opts...), NewStore(pool, "public", "outbox_delivery", append(opts, Publisher("partner"))...)}
	for round := range 20 {
		a, b := fmt.Sprintf("e-%d", 2*round+1), fmt.Sprintf("e-%d", 2*round+2)
		claims := make([]*Claimed, 2)
		for i, s := range stores {
			for _, id := range []string{a, b} {
				if err := s.Failed(ctx, &decoder.Event{ID: []byte(id), Table: 0, Topic: "t", Value: []byte(`{}`), CommitLSN: 0x100}, errors.New("refused")); err != nil {
					t.Fatal(err)
				}
			}
			c, err := s.BeginClaim(ctx, 10, nil)
			if err != nil || len(c.Rows) != 2 {
				t.Fatalf("round %d: store %d claimed %d rows, %v; want 2", round, i, len(c.Rows), err)
			}
			claims[i] = c
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, c := range claims {
			wg.Go(func() {
				var out []Outcome
				for _, r := range c.Rows {
					delivered := (r.EventID == a) == (i == 0) // Kafka delivers a and fails b; the webhook the other way
					out = append(out, Outcome{ID: r.ID, Delivered: delivered, Err: map[bool]error{false: errors.New("refused again")}[delivered], RetryIn: time.Hour})
				}
				errs[i] = c.Finish(ctx, out)
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: store %d's claim did not commit: %v", round, i, err)
			}
		}
	}
}
