package status

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// TestAdoptByPredicate: the rows a predicate selects are adopted, with
// those of a pending status, each once, in id order; a routed row once
// per topic its tags route it to, never when they route it nowhere.
func TestAdoptByPredicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newAdoptPool(t)
	routes := []decoder.Route{
		{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}},
		{Topic: "payment-events", AnyOfTags: []string{"payment_id", "transfer_id=t"}},
		{Topic: "wallet-events", RequiredTags: []string{"x"}}, // a second route of one topic: one copy
	}
	base := Adoptable{Schema: "public", Name: "events", Source: "public.events", IDColumn: "position"}
	for _, tc := range []struct {
		name string
		with func(*Adoptable)
		want []string // event_id topic, in id order
	}{
		{"predicate", func(a *Adoptable) { a.Where = "position > 3" }, []string{"4 ", "5 ", "6 "}},
		{"predicate naming the table and a progress table", func(a *Adoptable) {
			a.Where = "events.position > (SELECT last_position FROM progress) -- the poller's progress"
		}, []string{"2 ", "3 ", "4 ", "5 ", "6 "}},
		{"pending or predicate, each once", func(a *Adoptable) {
			a.StatusColumn, a.Pending, a.Where = "status", []string{"NEW"}, "position >= 5"
		}, []string{"1 ", "5 ", "6 "}},
		{"pending only", func(a *Adoptable) { a.StatusColumn, a.Pending = "status", []string{"NEW"} }, []string{"1 ", "5 "}},
		{"routes", func(a *Adoptable) { a.Where, a.TagsColumn, a.Routes = "true", "tags", routes }, []string{
			"1 wallet-events", "2 wallet-events", "2 payment-events", "3 wallet-events", "4 payment-events", "6 wallet-events"}},
		{"a predicate selecting rows the routes do not", func(a *Adoptable) {
			a.Where, a.TagsColumn, a.Routes = "tags IS NULL OR position = 3", "tags", routes
		}, []string{"3 wallet-events"}},
		{"nothing", func(*Adoptable) {}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := base
			tc.with(&a)
			if got := adoptOnce(ctx, t, pool, a); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("adopted %q, want %q", got, tc.want)
			}
		})
	}
}

// newAdoptPool is a pool on a migrated database with a table of events
// (position, status, tags) and a poller's progress table at 1.
func newAdoptPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TABLE events (position bigint PRIMARY KEY, status text, tags text[])`,
		`INSERT INTO events VALUES (1, 'NEW', '{wallet_id=a}'), (2, 'SENT', '{wallet_id=b,payment_id=p}'), (3, 'SENT', '{x}'),
			(4, 'SENT', '{transfer_id=t}'), (5, 'NEW', NULL), (6, 'SENT', '{wallet_id}')`,
		`CREATE TABLE progress (last_position bigint)`,
		`INSERT INTO progress VALUES (1)`,
	} {
		if _, err := pool.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	return pool
}

// adoptOnce empties the status table, checks and adopts a's rows, and
// returns the adopted rows as "event_id topic", in id order, after
// checking that Adopt counted each.
func adoptOnce(ctx context.Context, t *testing.T, pool *pgxpool.Pool, a Adoptable) []string {
	t.Helper()
	if _, err := pool.Exec(ctx, "TRUNCATE outbox_delivery"); err != nil {
		t.Fatal(err)
	}
	if err := CheckAdopt(ctx, pool, a); err != nil {
		t.Fatalf("CheckAdopt: %v", err)
	}
	var n int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		n, err = NewStore(pool, "public", "outbox_delivery").Adopt(ctx, tx, a)
		return err
	})
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	rows, _ := pool.Query(ctx, `SELECT event_id || ' ' || topic FROM outbox_delivery
		WHERE reload AND status = 'FAILED' AND source_table = 'public.events' AND next_attempt_at <= now() ORDER BY id`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(got)) {
		t.Errorf("Adopt = %d, but it added %d rows", n, len(got))
	}
	return got
}

// TestAdoptOneStatement: on a connection whose default is the simple
// protocol, a predicate holding whole statements runs none of them,
// neither in the check nor in the adoption, and one that closes the
// parentheses around it cannot override the relay's own filters; nor a
// route's.
func TestAdoptOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newTestDB(t)
	cfg, err := pgxpool.ParseConfig(db.url + "&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE events (position bigint, tags text[]); CREATE TABLE progress (last_position bigint);
		INSERT INTO events VALUES (NULL, '{}'), (1, '{}')`); err != nil {
		t.Fatal(err)
	}
	base := Adoptable{Schema: "public", Name: "events", Source: "public.events", IDColumn: "position"}
	routed := base
	routed.TagsColumn, routed.Routes = "tags", []decoder.Route{{Topic: "t", RequiredTags: []string{"k"}}}
	for i, a := range []Adoptable{base, routed, routed} {
		ownRoute := i == 2 // the predicate the route's own
		for _, tc := range []struct {
			where   string
			refused bool
		}{
			{"true)) ; DROP TABLE progress; COMMIT; SELECT ((1", true},
			{"true)) AS cdc_relay_adopted; DROP TABLE progress; COMMIT; SELECT ((1", true}, // runs in the simple protocol
			{"true) ; DROP TABLE progress; COMMIT; SELECT (1", true},
			{"true)) OR ((true", true},
			{"true) OR (true", false}, // balanced: SQL, under the relay's filters
		} {
			a.Where = tc.where
			if ownRoute {
				a.Where, a.RouteWhere = "", []string{tc.where}
			}
			checkErr := CheckAdopt(ctx, pool, a)
			var n int64
			adoptErr := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
				n, err = NewStore(pool, "public", "outbox_delivery").Adopt(ctx, tx, a)
				return err
			})
			// Only the row with an id, and none when routed: the tags route it nowhere.
			want := int64(1 - len(a.Routes))
			if tc.refused && (checkErr == nil || adoptErr == nil || n != 0) || !tc.refused && (checkErr != nil || adoptErr != nil || n != want) {
				t.Errorf("routed %v (the route's own %v), %q: CheckAdopt = %v, Adopt = %d, %v; want refused %v, else %d row(s)",
					len(a.Routes) > 0, ownRoute, tc.where, checkErr, n, adoptErr, tc.refused, want)
			}
		}
	}
	var tables int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename IN ('events', 'progress')").Scan(&tables); err != nil || tables != 2 {
		t.Fatalf("%d of the tables events and progress left (%v), want both", tables, err)
	}
}

// TestCheckAdoptRefuses: a predicate PostgreSQL would refuse is refused
// with its message, before anything is adopted; so is a routed table whose
// tags are not an array of text.
func TestCheckAdoptRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE events (position bigint PRIMARY KEY, tags jsonb)`); err != nil {
		t.Fatal(err)
	}
	base := Adoptable{Schema: "public", Name: "events", Source: "public.events", IDColumn: "position"}
	for _, tc := range []struct{ where, want string }{
		{"postion > 4000", `column "postion" does not exist`},
		{"position >", "syntax error"},
		{"position", "must be type boolean"},
		{"true); DROP TABLE events; --", "syntax error"},
		{"true; DROP TABLE events", "syntax error"},
		{"true)) ; DROP TABLE events; COMMIT; SELECT ((1", "SQLSTATE 42601"}, // a syntax error, whatever the version says
		{"true)) OR ((true", "SQLSTATE 42601"},
	} {
		a := base
		a.Where = tc.where
		err := CheckAdopt(ctx, pool, a)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "public.events") {
			t.Errorf("CheckAdopt(%q) = %v, want an error of public.events with %q", tc.where, err, tc.want)
		}
	}
	a := base
	a.Where, a.TagsColumn, a.Routes = "true", "tags", []decoder.Route{{Topic: "t", RequiredTags: []string{"k"}}}
	if err := CheckAdopt(ctx, pool, a); err == nil || !strings.Contains(err.Error(), "text[] or varchar[]") {
		t.Errorf("CheckAdopt of jsonb tags = %v, want a refusal naming text[]", err)
	}
	a = base
	a.Where, a.IDColumn = "true", "id" // the default, and the table's is position
	if err := CheckAdopt(ctx, pool, a); err == nil || !strings.Contains(err.Error(), "--id-column") {
		t.Errorf("CheckAdopt without the id column = %v, want a refusal naming --id-column", err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil {
		t.Fatalf("the table is gone: %v", err)
	}
}

// TestAdoptLarge: one statement adopts a large backlog (20,000 rows, or
// CDC_RELAY_TEST_ADOPT_ROWS), each once; it reports how long it took.
func TestAdoptLarge(t *testing.T) {
	n := envCount(t, "CDC_RELAY_TEST_ADOPT_ROWS")
	ctx := context.Background()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TABLE events (position bigint PRIMARY KEY, data json NOT NULL)`,
		`INSERT INTO events SELECT i, '{}' FROM generate_series(1, 2 * $1::bigint) AS i`,
		`ANALYZE events`,
	} {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, n)
		}
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	a := Adoptable{Schema: "public", Name: "events", Source: "public.events", IDColumn: "position", Where: "position > " + strconv.Itoa(n)}
	start := time.Now()
	var got int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		got, err = NewStore(pool, "public", "outbox_delivery").Adopt(ctx, tx, a)
		return err
	})
	took := time.Since(start)
	if err != nil || got != int64(n) {
		t.Fatalf("Adopt = %d, %v; want %d", got, err, n)
	}
	var distinct, lo, hi int64
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT event_id), min(event_id::bigint), max(event_id::bigint) FROM outbox_delivery WHERE reload`).Scan(&distinct, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if distinct != int64(n) || lo != int64(n)+1 || hi != 2*int64(n) {
		t.Errorf("adopted %d distinct rows from %d to %d, want %d from %d to %d", distinct, lo, hi, n, n+1, 2*n)
	}
	t.Logf("adopted %d rows in one statement in %v (%.0f rows/s)", n, took.Round(time.Millisecond), float64(n)/took.Seconds())
}

// TestClaimBesideAdoptedRows: a backlog of adopted rows (20,000, or
// CDC_RELAY_TEST_ADOPT_ROWS) is claimed in id order, a batch at a time,
// beside a key's held rows; it reports how long a claim took at the start
// and with half of them delivered, and the plan.
func TestClaimBesideAdoptedRows(t *testing.T) {
	n := envCount(t, "CDC_RELAY_TEST_ADOPT_ROWS")
	store, pool := claimTestStore(t)
	ctx := context.Background()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO outbox_delivery (event_id, source_table, topic, status, reload, last_error)
			SELECT i::text, 'public.events', 'wallet-events', 'FAILED', true, 'adopted' FROM generate_series(1, $1) AS i`, []any{n}},
		{`INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, last_error, status)
			VALUES ('k1', 'orders', 'K', '{}', 'x', 'DEAD'), ('k2', 'orders', 'K', '{}', 'x', 'WAITING')`, nil},
		{`ANALYZE outbox_delivery`, nil},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, at := range []int{1, n/2 + 1} {
		if _, err := pool.Exec(ctx, `UPDATE outbox_delivery SET status = 'DELIVERED' WHERE reload AND event_id::bigint < $1`, at); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got := claimIDs(ctx, t, store, 100, nil)
		took := time.Since(start)
		if len(got) != 100 || got[0] != strconv.Itoa(at) || got[99] != strconv.Itoa(at+99) {
			t.Fatalf("claimed %d rows from %v, want %d to %d", len(got), got[:min(len(got), 3)], at, at+99)
		}
		t.Logf("claim of 100 beside %d adopted rows due: %v", n-at+1, took.Round(time.Microsecond))
	}
	t.Logf("plan:\n%s", explainClaim(ctx, t, pool, store, true, 100))
}
