package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// resetStore gives table (public, with an id column id and a status
// column status) its reset trigger for cols, as migrate --config does, and
// returns a store that writes back to it with cols.
func resetStore(t *testing.T, pool *pgxpool.Pool, table string, cols writeback.Columns) *Store {
	t.Helper()
	ctx := context.Background()
	mcfg := migrations.DefaultConfig()
	mcfg.OutboxTable, mcfg.SkipOutbox = table, true
	mcfg.Reset = migrations.Reset{IDColumn: "id", StatusColumn: cols.StatusColumn, Pending: cols.Pending, FromPending: cols.RetryingIsPending()}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = migrations.Apply(ctx, conn.Conn(), mcfg)
	conn.Release()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := writeback.NewRows([]writeback.Table{{Name: table, IDColumn: "id", Columns: cols}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return NewStore(pool, "public", "outbox_delivery", SourceTables("public."+table), WriteBack(rows))
}

// TestWriteBackOfATeamsOwnLifecycle: a table whose poller kept a row
// PENDING with a retry count while it retried, and wrote FAILED only once
// it gave up (write_back retrying: PENDING, failed: FAILED), with its
// reset trigger. A parked event's row stays PENDING, its attempts and
// last attempt counted, its error kept; it never reads FAILED until the
// event is given up on; delivered, it reads DELIVERED with its error
// cleared. None of the relay's own writes of PENDING fires the reset
// trigger, not even over a FAILED row (an operator's retry of a dead
// event); a runbook's reset still does.
func TestWriteBackOfATeamsOwnLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TABLE notification_outbox (id bigint PRIMARY KEY, status varchar(20) NOT NULL DEFAULT 'PENDING'
			CHECK (status IN ('PENDING', 'PROCESSING', 'DELIVERED', 'FAILED')),
			retry_count integer NOT NULL DEFAULT 0, last_error text, last_attempt_at timestamptz, processed_at timestamptz)`,
		`INSERT INTO notification_outbox (id) SELECT g FROM generate_series(1, 4) g`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	cols := writeback.Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED", Retrying: "PENDING",
		Pending: []string{"PENDING", "PROCESSING"}, DeliveredAtColumn: "processed_at", ErrorColumn: "last_error",
		AttemptsColumn: "retry_count", LastAttemptColumn: "last_attempt_at"}
	store := resetStore(t, pool, "notification_outbox", cols)
	for id, dead := range map[string]bool{"1": false, "2": false, "3": true} {
		ev := &decoder.Event{ID: []byte(id), Topic: "notifications.deal-won", Value: []byte(`{}`), CommitLSN: 0x100}
		park := store.Failed
		if dead {
			park = store.Dead
		}
		if err := park(ctx, ev, errors.New("UNKNOWN_TOPIC_OR_PARTITION")); err != nil {
			t.Fatal(err)
		}
	}
	check := func(stage string, want map[int]string) {
		t.Helper()
		r, err := pool.Query(ctx, `SELECT id, status || ' ' || retry_count || ' ' || coalesce(last_error, '-') || ' ' ||
			(last_attempt_at IS NOT NULL) || ' ' || (processed_at IS NOT NULL) || ' reloads=' ||
			(SELECT count(*) FROM outbox_delivery d WHERE d.event_id = o.id::text AND d.reload)
			FROM notification_outbox o`)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int]string{}
		var id int
		var state string
		if _, err := pgx.ForEachRow(r, []any{&id, &state}, func() error { got[id] = state; return nil }); err != nil {
			t.Fatal(err)
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s: row %d says %q, want %q", stage, id, got[id], w)
			}
		}
	}
	check("parked", map[int]string{
		1: "PENDING 1 UNKNOWN_TOPIC_OR_PARTITION true false reloads=0",
		3: "FAILED 1 UNKNOWN_TOPIC_OR_PARTITION true false reloads=0", // given up on: the team's terminal value
		4: "PENDING 0 - false false reloads=0",
	})
	claim := func(outcome func(r Row) Outcome) map[string]int64 {
		t.Helper()
		if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now()"); err != nil {
			t.Fatal(err)
		}
		ids := map[string]int64{}
		_, err := store.Claim(ctx, 10, func(ctx context.Context, due []Row) []Outcome {
			var out []Outcome
			for _, r := range due {
				ids[r.EventID] = r.ID
				out = append(out, outcome(r))
			}
			return out
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	claim(func(r Row) Outcome {
		return Outcome{ID: r.ID, Err: errors.New("MESSAGE_TOO_LARGE"), RetryIn: time.Hour}
	})
	check("failed again", map[int]string{
		1: "PENDING 2 MESSAGE_TOO_LARGE true false reloads=0",
		2: "PENDING 2 MESSAGE_TOO_LARGE true false reloads=0",
	})
	var dead int64
	if err := pool.QueryRow(ctx, "SELECT id FROM outbox_delivery WHERE event_id = '3'").Scan(&dead); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Retry(ctx, RetryOptions{IDs: []int64{dead}}); err != nil {
		t.Fatal(err)
	}
	check("an operator's retry of the dead event", map[int]string{3: "PENDING 1 UNKNOWN_TOPIC_OR_PARTITION true false reloads=0"})
	claim(func(r Row) Outcome { return Outcome{ID: r.ID, Delivered: true} })
	check("delivered", map[int]string{
		1: "DELIVERED 2 - true true reloads=0",
		2: "DELIVERED 2 - true true reloads=0",
		3: "DELIVERED 1 - true true reloads=0",
	})
	if _, err := pool.Exec(ctx, "UPDATE notification_outbox SET status = 'PENDING', retry_count = 0 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	check("a runbook's reset", map[int]string{2: "PENDING 0 - true true reloads=1"})
}

// TestAdoptSkipsEventsAlreadyHeld: a slot created again over the same
// status table (after a slot loss, say) adopts the pending rows, but not
// those whose events the status table already holds to send (FAILED,
// WAITING, PAUSED: parked by the earlier relay, their rows reading
// pending or retrying): adopted again, they would be sent twice. An event
// the status table says was delivered, and whose row was set back to
// pending, is adopted.
func TestAdoptSkipsEventsAlreadyHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TABLE app_outbox (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING')`,
		`INSERT INTO app_outbox (id) SELECT g FROM generate_series(1, 5) g`,
		`INSERT INTO outbox_delivery (event_id, source_table, topic, status, last_error) VALUES
			('1', 'public.app_outbox', 'orders', 'FAILED', 'refused'), ('2', 'public.app_outbox', 'orders', 'WAITING', 'behind 1'),
			('3', 'public.app_outbox', 'orders', 'PAUSED', 'paused'), ('4', 'public.app_outbox', 'orders', 'DELIVERED', '-')`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	store := NewStore(pool, "public", "outbox_delivery")
	var n int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		n, err = store.Adopt(ctx, tx, Adoptable{Schema: "public", Name: "app_outbox", Source: "public.app_outbox",
			IDColumn: "id", StatusColumn: "status", Pending: []string{"PENDING"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var adopted []string
	r, _ := pool.Query(ctx, "SELECT event_id FROM outbox_delivery WHERE reload ORDER BY event_id")
	if adopted, err = pgx.CollectRows(r, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if n != 2 || fmt.Sprint(adopted) != "[4 5]" {
		t.Fatalf("adopted %d rows, events %v; want 2, events [4 5]", n, adopted)
	}
}

// TestResetDuringAClaimSupersedesIt: a runbook resets an event (fixing its
// topic) while the poller has its row claimed, mid-attempt, committing
// before the attempt ends, or after (an open transaction: the claim waits
// for it). The trigger skips the locked row and adds a reload row; an old
// attempt that failed or was given up on neither writes over the reset
// (the outbox row keeps the runbook's PENDING) nor leaves a row to try
// again or give up on: its row is deleted. One that delivered stays
// DELIVERED, and says so. The reload row then delivers the row as it is
// now, and the outbox row says DELIVERED.
func TestResetDuringAClaimSupersedesIt(t *testing.T) {
	t.Parallel()
	for _, outcome := range []string{"failed", "dead", "delivered", "failed, reset committed late", "failed, retrying a pending value"} {
		t.Run(outcome, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := newTestPool(t)
			for _, sql := range []string{
				`CREATE TABLE app_outbox (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING', topic text NOT NULL)`,
				`INSERT INTO app_outbox (id, topic) VALUES (1, 'Invioce')`,
			} {
				if _, err := pool.Exec(ctx, sql); err != nil {
					t.Fatal(err)
				}
			}
			cols := writeback.Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED", Pending: []string{"PENDING"}}
			if outcome == "failed, retrying a pending value" {
				cols.Retrying = "PENDING" // the trigger fires on PENDING over PENDING too
			}
			store := resetStore(t, pool, "app_outbox", cols)
			ev := &decoder.Event{ID: []byte("1"), Topic: "Invioce", Value: []byte(`{}`), CommitLSN: 0x100}
			if err := store.Failed(ctx, ev, errors.New("UNKNOWN_TOPIC_OR_PARTITION")); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now()"); err != nil {
				t.Fatal(err)
			}
			_, err := store.Claim(ctx, 10, func(ctx context.Context, due []Row) []Outcome {
				// The runbook, mid-attempt: it neither waits for the claim
				// nor deadlocks with it.
				reset := "UPDATE app_outbox SET status = 'PENDING', topic = 'Invoice' WHERE id = 1"
				if outcome != "failed, reset committed late" {
					if _, err := pool.Exec(ctx, reset); err != nil {
						t.Error(err)
					}
				} else {
					tx, err := pool.Begin(ctx)
					if err == nil {
						_, err = tx.Exec(ctx, reset)
					}
					if err != nil {
						t.Fatal(err)
					}
					time.AfterFunc(500*time.Millisecond, func() { _ = tx.Commit(context.Background()) })
				}
				o := Outcome{ID: due[0].ID, Err: errors.New("UNKNOWN_TOPIC_OR_PARTITION"), RetryIn: time.Minute}
				switch outcome {
				case "dead":
					o.Dead = true
				case "delivered":
					o = Outcome{ID: due[0].ID, Delivered: true}
				}
				return []Outcome{o}
			})
			if err != nil {
				t.Fatal(err)
			}
			state := func() string {
				t.Helper()
				var s string
				if err := pool.QueryRow(ctx, `SELECT (SELECT status FROM app_outbox WHERE id = 1) || ' / ' ||
					coalesce((SELECT string_agg(status || CASE WHEN reload THEN ' reload' ELSE '' END, ', ' ORDER BY id) FROM outbox_delivery), '')`).Scan(&s); err != nil {
					t.Fatal(err)
				}
				return s
			}
			want := map[string]string{"failed": "PENDING / FAILED reload", "dead": "PENDING / FAILED reload",
				"delivered": "DELIVERED / DELIVERED, FAILED reload", "failed, reset committed late": "PENDING / FAILED reload",
				"failed, retrying a pending value": "PENDING / FAILED reload"}[outcome]
			if got := state(); got != want {
				t.Fatalf("after the reset during the attempt: %q, want %q (the row as the runbook left it; the old attempt superseded)", got, want)
			}
			if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now()"); err != nil {
				t.Fatal(err)
			}
			var topic string
			_, err = store.Claim(ctx, 10, func(ctx context.Context, due []Row) []Outcome {
				if len(due) != 1 || !due[0].Reload {
					t.Errorf("claimed %+v, want the reload row alone", due)
					return nil
				}
				loaded := due[0]
				loaded.Topic, topic = "Invoice", "Invoice"
				return []Outcome{{ID: due[0].ID, Delivered: true, Loaded: &loaded}}
			})
			if err != nil {
				t.Fatal(err)
			}
			want = map[string]string{"failed": "DELIVERED / DELIVERED reload", "dead": "DELIVERED / DELIVERED reload",
				"delivered": "DELIVERED / DELIVERED, DELIVERED reload", "failed, reset committed late": "DELIVERED / DELIVERED reload",
				"failed, retrying a pending value": "DELIVERED / DELIVERED reload"}[outcome]
			if got := state(); got != want || topic != "Invoice" {
				t.Fatalf("after the reload row's attempt: %q, want %q", got, want)
			}
		})
	}
}

// TestClaimGoesOnWhenAWriteBackColumnIsGone: a write-back column dropped
// (or its privilege revoked) while the relay runs refuses the rows'
// outcomes, which are logged, and the claim still commits: the attempts
// that failed are counted and those delivered are DELIVERED, not rolled
// back to be sent again at every claim.
func TestClaimGoesOnWhenAWriteBackColumnIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE app_outbox (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING', err text)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO app_outbox (id) VALUES (1), (2)`); err != nil {
		t.Fatal(err)
	}
	store := resetStore(t, pool, "app_outbox", writeback.Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED",
		Pending: []string{"PENDING"}, ErrorColumn: "err"})
	for _, id := range []string{"1", "2"} {
		ev := &decoder.Event{ID: []byte(id), Topic: "orders", Value: []byte(`{}`), CommitLSN: 0x100}
		if err := store.Failed(ctx, ev, errors.New("UNKNOWN_TOPIC_OR_PARTITION")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "ALTER TABLE app_outbox DROP COLUMN err"); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() WHERE status = 'FAILED'"); err != nil {
			t.Fatal(err)
		}
		_, err := store.Claim(ctx, 10, func(ctx context.Context, due []Row) []Outcome {
			var out []Outcome
			for _, r := range due {
				if r.EventID == "2" {
					out = append(out, Outcome{ID: r.ID, Delivered: true})
				} else {
					out = append(out, Outcome{ID: r.ID, Err: errors.New("still missing"), RetryIn: time.Minute})
				}
			}
			return out
		})
		if err != nil {
			t.Fatalf("claim %d: %v", round, err)
		}
	}
	var got string
	if err := pool.QueryRow(ctx, `SELECT string_agg(event_id || ' ' || status || ' ' || attempts, ', ' ORDER BY event_id) FROM outbox_delivery`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "1 FAILED 2, 2 DELIVERED 1" {
		t.Fatalf("status rows %q, want %q: every claim committed", got, "1 FAILED 2, 2 DELIVERED 1")
	}
}

// TestResetKeepsTheEventsPlace: a runbook's reset of an event parked
// WAITING behind a DEAD one makes its row a reload row where it is (no
// row added): it stays behind the DEAD one, and once that is skipped it
// goes first, then the later event of its key. A reset of an event the
// poller is sending adds a reload row that holds the event's key and
// topic.
func TestResetKeepsTheEventsPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE app_outbox (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING', topic text NOT NULL);
		INSERT INTO app_outbox (id, topic) VALUES (1, 'orders'), (2, 'orders'), (3, 'orders'), (4, 'orders')`); err != nil {
		t.Fatal(err)
	}
	// The row of a WAITING event reads PENDING: a team whose poller kept
	// retried rows PENDING (retrying: PENDING) resets it PENDING over
	// PENDING, which its trigger sees.
	store := resetStore(t, pool, "app_outbox", writeback.Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED", Retrying: "PENDING",
		Pending: []string{"PENDING"}})
	park := func(id string, lsn uint64, key string, how func(context.Context, *decoder.Event, error) error) {
		t.Helper()
		ev := &decoder.Event{ID: []byte(id), Topic: "orders", Key: []byte(key), Value: []byte(`{}`), CommitLSN: lsn}
		if err := how(ctx, ev, errors.New("refused")); err != nil {
			t.Fatal(err)
		}
	}
	park("1", 0x100, "k", store.Dead)
	park("2", 0x200, "k", store.Waiting)
	park("3", 0x300, "k", store.Waiting)
	rows := func() string {
		t.Helper()
		var s string
		if err := pool.QueryRow(ctx, `SELECT string_agg(event_id || ' ' || status || CASE WHEN reload THEN ' reload' ELSE '' END ||
			' ' || topic || '/' || coalesce(convert_from(record_key, 'UTF8'), '-'), ', ' ORDER BY id) FROM outbox_delivery`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := pool.Exec(ctx, "UPDATE app_outbox SET status = 'PENDING' WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	if got, want := rows(), "1 DEAD orders/k, 2 FAILED reload orders/k, 3 WAITING orders/k"; got != want {
		t.Fatalf("after the reset of the WAITING event: %q, want %q", got, want)
	}
	claim := func() (got []string) {
		t.Helper()
		if _, err := store.Claim(ctx, 10, func(_ context.Context, due []Row) []Outcome {
			var out []Outcome
			for _, r := range due {
				got = append(got, r.EventID)
				out = append(out, Outcome{ID: r.ID, Delivered: true})
			}
			return out
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := claim(); len(got) != 0 {
		t.Fatalf("claimed %v behind the DEAD head, want nothing", got)
	}
	if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET skipped_at = now() WHERE event_id = '1'"); err != nil {
		t.Fatal(err)
	}
	if got := claim(); !slices.Equal(got, []string{"2", "3"}) {
		t.Fatalf("claimed %v once the head is skipped, want 2 then 3", got)
	}

	park("4", 0x400, "m", store.Failed)
	if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() WHERE event_id = '4'"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Claim(ctx, 10, func(ctx context.Context, due []Row) []Outcome {
		if _, err := pool.Exec(ctx, "UPDATE app_outbox SET status = 'PENDING' WHERE id = 4"); err != nil {
			t.Error(err)
		}
		return []Outcome{{ID: due[0].ID, Err: errors.New("refused"), RetryIn: time.Minute}}
	}); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := pool.QueryRow(ctx, `SELECT string_agg(status || CASE WHEN reload THEN ' reload' ELSE '' END || ' ' || topic || '/' ||
		coalesce(convert_from(record_key, 'UTF8'), '-'), ', ' ORDER BY id) FROM outbox_delivery WHERE event_id = '4'`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "FAILED reload orders/m"; got != want {
		t.Fatalf("event 4 reset while the poller sent it: %q, want %q (the attempt superseded, the key held)", got, want)
	}

	// An application that saves every column (PENDING over PENDING) while
	// the poller sends a WAITING event: nothing added, sent once.
	if _, err := pool.Exec(ctx, "INSERT INTO app_outbox (id, topic) VALUES (5, 'orders'), (6, 'orders')"); err != nil {
		t.Fatal(err)
	}
	park("5", 0x500, "n", store.Failed)
	park("6", 0x600, "n", store.Waiting)
	if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() WHERE event_id IN ('4', '5')"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Claim(ctx, 10, func(ctx context.Context, due []Row) []Outcome {
		if _, err := pool.Exec(ctx, "UPDATE app_outbox SET status = 'PENDING' WHERE id = 6"); err != nil {
			t.Error(err)
		}
		var out []Outcome
		for _, r := range due {
			out = append(out, Outcome{ID: r.ID, Delivered: true})
		}
		return out
	}); err != nil {
		t.Fatal(err)
	}
	var rows6 int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM outbox_delivery WHERE event_id = '6'").Scan(&rows6); err != nil || rows6 != 1 {
		t.Fatalf("event 6, saved by its application while the poller sent it: %d status rows (%v), want 1: sent once", rows6, err)
	}

	// A reset of the event an operator skipped makes it held again.
	if _, err := pool.Exec(ctx, "UPDATE app_outbox SET status = 'FAILED' WHERE id = 1; UPDATE app_outbox SET status = 'PENDING' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	var skipped bool
	if err := pool.QueryRow(ctx, "SELECT status = 'FAILED' AND reload AND skipped_at IS NULL FROM outbox_delivery WHERE event_id = '1'").Scan(&skipped); err != nil || !skipped {
		t.Fatalf("the skipped event 1 reset: held again %v (%v), want true", skipped, err)
	}
}
