package writeback

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
	"github.com/cdc-relay/cdc-relay/internal/tcpproxy"
)

func TestNewChecksTheConfig(t *testing.T) {
	t.Parallel()
	good := func() Table {
		return Table{Name: "outbox", IDColumn: "id", Columns: Columns{StatusColumn: "status", Delivered: "SENT", Failed: "FAILED",
			DeliveredAtColumn: "sent_at", ErrorColumn: "error"}}
	}
	cases := []struct {
		name string
		edit func(*Config)
		want string // "" for no error
	}{
		{"good", func(*Config) {}, ""},
		{"no tables", func(c *Config) { c.Tables = nil }, "no tables"},
		{"no name", func(c *Config) { c.Tables[0].Name = "" }, "no table name"},
		{"no id column", func(c *Config) { c.Tables[0].IDColumn = "" }, "no id column"},
		{"no status column", func(c *Config) { c.Tables[0].Columns.StatusColumn = "" }, "no status column"},
		{"no failed value", func(c *Config) { c.Tables[0].Columns.Failed = "" }, "both required"},
		{"same values", func(c *Config) { c.Tables[0].Columns.Failed = "SENT" }, `the same ("SENT")`},
		{"status is the id", func(c *Config) { c.Tables[0].Columns.StatusColumn = "id" }, `"id" is both the id and the status_column`},
		{"error is the status", func(c *Config) { c.Tables[0].Columns.ErrorColumn = "status" }, "both the status_column and the error_column"},
		{"retrying and dead without failed", func(c *Config) {
			c.Tables[0].Columns.Failed, c.Tables[0].Columns.Retrying, c.Tables[0].Columns.Dead = "", "RETRY", "DEAD"
		}, ""},
		{"retrying a pending value", func(c *Config) {
			c.Tables[0].Columns.Retrying, c.Tables[0].Columns.Pending = "NEW", []string{"NEW"}
		}, ""},
		{"retrying the delivered value", func(c *Config) { c.Tables[0].Columns.Retrying = "SENT" }, `delivered and retrying status values are the same ("SENT")`},
		{"the dead value pending", func(c *Config) { c.Tables[0].Columns.Pending = []string{"NEW", c.Tables[0].Columns.Failed} }, "is also the delivered or dead value"},
		{"a table twice", func(c *Config) { c.Tables = append(c.Tables, c.Tables[0]) }, "public.outbox is listed twice"},
		{"negative interval", func(c *Config) { c.FlushInterval = -time.Second }, "may not be negative"},
		{"negative batch", func(c *Config) { c.MaxBatch = -1 }, "may not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Tables: []Table{good()}}
			tc.edit(&cfg)
			w, err := New(fakeDB{}, cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want == "":
				if w.cfg.FlushInterval != DefaultFlushInterval || w.cfg.MaxBatch != DefaultMaxBatch {
					t.Fatalf("defaults not applied: %+v", w.cfg)
				}
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("New: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestWriteBackByIDType writes outcomes to tables whose id is a uuid, a
// bigint and text, with a text, enum and varchar status, and checks the
// rows, the timestamp, and that the statements use the id's index.
func TestWriteBackByIDType(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	exec(t, ctx, pool, `CREATE TYPE outbox_status AS ENUM ('PENDING', 'DELIVERED', 'FAILED')`)
	exec(t, ctx, pool, `CREATE SCHEMA "App"`)
	cases := []struct {
		name   string
		table  string // quoted
		create string // %s is the table
		idType string
		ids    []string
		cols   Columns
		atType string // the delivered-at column's type; "" for none
	}{
		{
			name:   "uuid id, text status, timestamptz",
			table:  `public.uuid_outbox`,
			idType: "uuid",
			create: `CREATE TABLE %s (id uuid PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING',
				processed_at timestamptz, error text)`,
			ids: []string{"00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002",
				"00000000-0000-4000-8000-000000000003", "00000000-0000-4000-8000-000000000004",
				"00000000-0000-4000-8000-000000000005", "00000000-0000-4000-8000-000000000006",
				"00000000-0000-4000-8000-000000000007"},
			cols:   Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED", DeliveredAtColumn: "processed_at", ErrorColumn: "error"},
			atType: "timestamptz",
		},
		{
			name:   "bigint id, enum status, timestamp without time zone, varchar(20) error",
			table:  `public.bigint_outbox`,
			idType: "bigint",
			create: `CREATE TABLE %s (id bigint PRIMARY KEY,
				status outbox_status NOT NULL DEFAULT 'PENDING', processed_at timestamp, error varchar(20))`,
			ids:    []string{"1", "2", "3", "4", "5", "6", "7"},
			cols:   Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED", DeliveredAtColumn: "processed_at", ErrorColumn: "error"},
			atType: "timestamp",
		},
		{
			name:   "text id, varchar status, quoted names, no optional columns",
			table:  `"App"."Order Events"`,
			idType: "text",
			create: `CREATE TABLE %s (id text PRIMARY KEY, "State" varchar(16) NOT NULL DEFAULT 'PENDING')`,
			ids:    []string{"a", "b", "it's", "d e", "ö", "f", "g"},
			cols:   Columns{StatusColumn: "State", Delivered: "SENT", Failed: "FAILED"},
		},
		{
			// char(n) is bpchar: cast to "character" it would be char(1).
			name:   "uuid id, char(10) status",
			table:  `public.char_outbox`,
			idType: "uuid",
			create: `CREATE TABLE %s (id uuid PRIMARY KEY, status char(10) NOT NULL DEFAULT 'PENDING')`,
			ids: []string{"00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002", "00000000-0000-0000-0000-000000000003",
				"00000000-0000-0000-0000-000000000004", "00000000-0000-0000-0000-000000000005", "00000000-0000-0000-0000-000000000006",
				"00000000-0000-0000-0000-000000000007"},
			cols: Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			exec(t, ctx, pool, fmt.Sprintf(tc.create, tc.table))
			status := pgx.Identifier{tc.cols.StatusColumn}.Sanitize()
			exec(t, ctx, pool, fmt.Sprintf("INSERT INTO %s (id) SELECT unnest($1::text[])::%s", tc.table, tc.idType), tc.ids)
			// The last row is deleted before its outcome comes.
			exec(t, ctx, pool, fmt.Sprintf("DELETE FROM %s WHERE id::text = $1", tc.table), tc.ids[6])

			schema, name, _ := strings.Cut(strings.ReplaceAll(tc.table, `"`, ""), ".")
			table := Table{Schema: schema, Name: name, IDColumn: "id", Columns: tc.cols}
			w, err := New(pool, Config{Tables: []Table{table}, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range tc.ids[:3] {
				w.Delivered(0, []byte(id), nil)
			}
			w.Delivered(0, []byte(tc.ids[6]), nil)
			w.Delivered(0, nil, nil) // an event without an id: nothing to find
			runWriter(t, w)
			waitFor(t, 30*time.Second, "outcomes not written", func() bool { return w.Stats().Pending == 0 })

			got := states(t, ctx, pool, tc.table, status, tc.cols.ErrorColumn)
			want := map[string]string{
				tc.ids[0]: tc.cols.Delivered, tc.ids[1]: tc.cols.Delivered, tc.ids[2]: tc.cols.Delivered,
				tc.ids[3]: "PENDING", tc.ids[4]: "PENDING", tc.ids[5]: "PENDING",
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("rows:\n got %v\nwant %v", got, want)
			}
			if s := w.Stats(); s.Updated != 3 || s.Statements != 1 || s.Failures != 0 || s.Refused != 0 {
				t.Fatalf("stats %+v, want 3 rows updated by 1 statement", s)
			}
			if tc.atType != "" {
				// A timestamptz is an instant; a timestamp without time
				// zone is written in UTC, the convention the relay reads
				// it by: 10 hours off if written in the session's zone.
				now := "now()"
				if tc.atType == "timestamp" {
					now = "(now() AT TIME ZONE 'UTC')"
				}
				n := scalar[int64](t, ctx, pool, fmt.Sprintf(`SELECT count(*) FROM %s WHERE processed_at IS NOT NULL
					AND abs(extract(epoch FROM processed_at - %s)) < 120`, tc.table, now))
				if unset := scalar[int64](t, ctx, pool, fmt.Sprintf(`SELECT count(*) FROM %s WHERE processed_at IS NULL`, tc.table)); n != 3 || unset != 3 {
					t.Fatalf("%d delivered rows have a delivered-at time within 2 minutes of %s (the session's zone is %s), %d have none; want 3 and 3",
						n, now, testTimeZone, unset)
				}
			}
			explainUsesIndex(t, ctx, pool, table, tc.ids[:2])
		})
	}
}

// explainUsesIndex checks that both of table's statements find rows by
// the index on the id (with sequential scans priced out, a condition that
// could not use the index, such as id::text = …, still scans the table).
func explainUsesIndex(t *testing.T, ctx context.Context, pool interface {
	Begin(context.Context) (pgx.Tx, error)
}, table Table, ids []string) {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	ts := &tableState{Table: table, quoted: pgx.Identifier{table.Schema, table.Name}.Sanitize()}
	sql, err := prepare(ctx, tx, ts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		sql  string
		args []any
	}{
		{sql.delivered, []any{ids, "X"}},
	} {
		rows, err := tx.Query(ctx, "EXPLAIN "+s.sql, s.args...)
		if err != nil {
			t.Fatalf("EXPLAIN %s: %v", s.sql, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "Index") || strings.Contains(plan, "Seq Scan") {
			t.Fatalf("%s\ndoes not find rows by the id's index:\n%s", s.sql, plan)
		}
	}
}

// outboxTable creates a table with a text id, a status, a delivered-at
// and an error column, and rows with ids.
func outboxTable(t *testing.T, ctx context.Context, db DB, name string, ids ...string) Table {
	t.Helper()
	exec(t, ctx, db, fmt.Sprintf(`CREATE TABLE %s (id text PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING',
		processed_at timestamptz, error text)`, name))
	exec(t, ctx, db, fmt.Sprintf("INSERT INTO %s (id) SELECT unnest($1::text[])", name), ids)
	return Table{Name: name, IDColumn: "id", Columns: Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED",
		DeliveredAtColumn: "processed_at", ErrorColumn: "error"}}
}

// TestBatching reports 10,000 outcomes and counts the UPDATE statements
// that write them.
func TestBatching(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	const n = 10000
	cases := []struct {
		name          string
		goroutines    int
		maxStatements int64
	}{
		// Reported before the first flush: ten statements of 1000 ids.
		{"reported at once", 1, n / DefaultMaxBatch},
		// Reported while Run flushes, from the producer's goroutines, each
		// id twice (an event sent again): a statement at most per flush
		// beyond the ten full ones.
		{"reported concurrently", 8, 40},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("batch_%d", i)
			exec(t, ctx, pool, fmt.Sprintf(`CREATE TABLE %s (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING',
				processed_at timestamptz, error text)`, name))
			exec(t, ctx, pool, fmt.Sprintf("INSERT INTO %s (id) SELECT generate_series(1, %d)", name, n))
			db := &countingDB{DB: pool}
			w, err := New(db, Config{Tables: []Table{{Name: name, IDColumn: "id", Columns: Columns{StatusColumn: "status",
				Delivered: "DELIVERED", Failed: "FAILED", DeliveredAtColumn: "processed_at", ErrorColumn: "error"}}}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.goroutines == 1 {
				for id := 1; id <= n; id++ {
					w.Delivered(0, strconv.AppendInt(nil, int64(id), 10), nil)
				}
				runWriter(t, w)
			} else {
				runWriter(t, w)
				var wg sync.WaitGroup
				for g := range tc.goroutines {
					wg.Go(func() {
						var buf []byte
						for id := 1 + g; id <= n; id += tc.goroutines {
							buf = strconv.AppendInt(buf[:0], int64(id), 10)
							w.Delivered(0, buf, nil)
							w.Delivered(0, buf, nil)
							if id%1000 == 0 {
								_ = w.Stats()
							}
						}
					})
				}
				wg.Wait()
			}
			waitFor(t, time.Minute, "outcomes not written", func() bool { return w.Stats().Pending == 0 })
			delivered := scalar[int64](t, ctx, pool, fmt.Sprintf("SELECT count(*) FROM %s WHERE status = 'DELIVERED' AND processed_at IS NOT NULL", name))
			s := w.Stats()
			t.Logf("%d outcomes from %d goroutine(s): %d UPDATE statements (%+v)", n*(1+min(1, tc.goroutines-1)), tc.goroutines, db.execs.Load(), s)
			if delivered != n {
				t.Fatalf("%d rows delivered, want %d", delivered, n)
			}
			if got := db.execs.Load(); got > tc.maxStatements || got != s.Statements || got < n/DefaultMaxBatch {
				t.Fatalf("%d statements run (%d counted by Stats), want %d to %d", got, s.Statements, n/DefaultMaxBatch, tc.maxStatements)
			}
		})
	}
}

// TestRefusedTableCatchesUp gives a table a fault retries cannot fix: its
// outcomes wait, an error names the fix once, the other table is written
// all along, and once the fault is fixed the table catches up.
func TestRefusedTableCatchesUp(t *testing.T) {
	t.Parallel()
	ctx, own, pool := startDB(t)
	relay := "relay_" + own.Name // roles are the cluster's
	exec(t, ctx, pool, "CREATE ROLE "+relay+" LOGIN")
	exec(t, ctx, pool, "CREATE TYPE st AS ENUM ('PENDING', 'DELIVERED', 'FAILED')")
	cases := []struct {
		name  string
		setup []string // %s is the table
		user  string   // the writer's role; "" is the superuser
		log   []string // what the error line says
		fix   string
	}{
		{
			name:  "a missing column",
			setup: []string{"ALTER TABLE %s DROP COLUMN error"},
			log:   []string{`has no column \"error\"`, "add the column"},
			fix:   "ALTER TABLE %s ADD COLUMN error text",
		},
		{
			name:  "no privilege",
			setup: []string{"GRANT SELECT (id) ON %s TO " + relay},
			user:  relay,
			log:   []string{"42501", `GRANT SELECT (\"id\", \"status\"), UPDATE (\"status\", \"processed_at\", \"error\") ON \"public\".`},
			fix:   "GRANT SELECT (status), UPDATE (status, processed_at, error) ON %s TO " + relay,
		},
		{
			name:  "a status the enum lacks",
			setup: []string{"ALTER TABLE %s ALTER COLUMN status DROP DEFAULT", "ALTER TABLE %s ALTER COLUMN status TYPE st USING status::st"},
			log:   []string{"22P02", "a status value the status column's type does not accept"},
			fix:   "ALTER TYPE st ADD VALUE 'SENT'",
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			broken := outboxTable(t, ctx, pool, fmt.Sprintf("broken_%d", i), "1", "2")
			healthy := outboxTable(t, ctx, pool, fmt.Sprintf("healthy_%d", i), "1", "2")
			broken.Columns.Delivered = "SENT"
			for _, s := range tc.setup {
				exec(t, ctx, pool, fmt.Sprintf(s, broken.Name))
			}
			exec(t, ctx, pool, fmt.Sprintf("GRANT SELECT, UPDATE ON %s TO %s", healthy.Name, relay))
			db := pool
			if tc.user != "" {
				db = newPool(t, ctx, own.URL(), tc.user)
			}
			log := &syncbuf.Buffer{}
			w, err := New(db, Config{Tables: []Table{broken, healthy}, Logger: slog.New(slog.NewTextHandler(log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			w.refusedRetry = 200 * time.Millisecond
			runWriter(t, w)
			w.Delivered(0, []byte("1"), nil)
			w.Delivered(0, []byte("2"), nil)
			w.Delivered(1, []byte("1"), nil)
			waitFor(t, 30*time.Second, "the healthy table not written, or too few attempts on the broken one", func() bool {
				return w.Stats().Failures >= 3 &&
					scalar[int64](t, ctx, pool, fmt.Sprintf("SELECT count(*) FROM %s WHERE status = 'DELIVERED'", healthy.Name)) == 1
			})
			w.Delivered(1, []byte("2"), nil) // still written
			waitFor(t, 30*time.Second, "the healthy table not written", func() bool {
				return scalar[int64](t, ctx, pool, fmt.Sprintf("SELECT count(*) FROM %s WHERE status = 'DELIVERED'", healthy.Name)) == 2
			})
			if n := scalar[int64](t, ctx, pool, fmt.Sprintf("SELECT count(*) FROM %s WHERE status::text <> 'PENDING'", broken.Name)); n != 0 {
				t.Fatalf("%d rows of the broken table changed", n)
			}
			out := log.String()
			if n := strings.Count(out, "write-back refused"); n != 1 || !strings.Contains(out, "level=ERROR") {
				t.Fatalf("the fault logged %d times (want once, at error level, in its first minute):\n%s", n, out)
			}
			for _, want := range tc.log {
				if !strings.Contains(out, want) {
					t.Fatalf("log does not say %q:\n%s", want, out)
				}
			}

			if strings.Contains(tc.fix, "%s") {
				tc.fix = fmt.Sprintf(tc.fix, broken.Name)
			}
			exec(t, ctx, pool, tc.fix)
			waitFor(t, 30*time.Second, "the broken table did not catch up after the fix", func() bool { return w.Stats().Pending == 0 })
			got := states(t, ctx, pool, broken.Name, "status", "error")
			if want := "map[1:SENT 2:SENT]"; fmt.Sprint(got) != want {
				t.Fatalf("rows %v, want %s", got, want)
			}
			waitFor(t, 10*time.Second, "recovery not logged", func() bool { return strings.Contains(log.String(), "write-back works again") })
		})
	}
}

// TestDatabaseRestart restarts PostgreSQL while outcomes are reported:
// those reported meanwhile are written once it is back.
func TestDatabaseRestart(t *testing.T) {
	ctx, own, pool := startOwnDB(t) // restarted: a cluster of its own
	const rows = 200000
	exec(t, ctx, pool, `CREATE TABLE outbox (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING', processed_at timestamptz)`)
	exec(t, ctx, pool, "INSERT INTO outbox (id) SELECT generate_series(1, $1)", rows)
	w, err := New(pool, Config{Tables: []Table{{Name: "outbox", IDColumn: "id",
		Columns: Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED", DeliveredAtColumn: "processed_at"}}}})
	if err != nil {
		t.Fatal(err)
	}
	w.retryMax = time.Second
	runWriter(t, w)

	// Outcomes at about 10,000/s until the database is back.
	restarted := make(chan struct{})
	reported := make(chan int)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		id, after := 0, 20 // ticks after the restart
		for after > 0 && id < rows {
			<-tick.C
			for range 100 {
				id++
				w.Delivered(0, strconv.AppendInt(nil, int64(id), 10), nil)
			}
			select {
			case <-restarted:
				after--
			default:
			}
		}
		reported <- id
	}()
	waitFor(t, 30*time.Second, "nothing written before the restart", func() bool { return w.Stats().Updated > 0 })
	if err := own.Restart(ctx, "immediate"); err != nil {
		t.Fatal(err)
	}
	close(restarted)
	n := <-reported
	waitFor(t, time.Minute, "outcomes not written after the restart", func() bool { return w.Stats().Pending == 0 })
	s := w.Stats()
	t.Logf("%d outcomes reported across the restart: %+v", n, s)
	if got := scalar[int64](t, ctx, pool, "SELECT count(*) FROM outbox WHERE status = 'DELIVERED'"); got != int64(n) {
		t.Fatalf("%d rows delivered, want %d", got, n)
	}
	if last := scalar[int64](t, ctx, pool, "SELECT max(id) FROM outbox WHERE status = 'DELIVERED'"); last != int64(n) {
		t.Fatalf("the last row delivered is %d, want %d", last, n)
	}
	if s.Failures == 0 || s.Refused != 0 {
		t.Fatalf("stats %+v: want failures during the restart, no row refused", s)
	}
}

// TestDeliveredNeverBlocks reports 100,000 outcomes while the database is
// down, or while the writer's statement hangs on a silent connection:
// none is dropped, and none waits on the database. A call that waited
// would wait for a statement that never ends, so the bound is generous
// (30 s for the 100,000, some 20 µs a call on a quiet machine, logged):
// it tells a block from a slow machine, and is no claim of speed.
func TestDeliveredNeverBlocks(t *testing.T) {
	const calls = 100000
	for _, mode := range []string{"stopped", "silent"} {
		t.Run(mode, func(t *testing.T) {
			ctx, own, pool := startOwnDB(t) // stopped, and times the calls: a cluster of its own
			table := outboxTable(t, ctx, pool, "outbox", "x")
			url := own.URL("postgres")
			var proxy *tcpproxy.Proxy
			if mode == "silent" {
				var err error
				host := strings.TrimPrefix(strings.Split(url, "/")[2], "postgres@")
				if proxy, err = tcpproxy.Start(host); err != nil {
					t.Fatal(err)
				}
				url = strings.Replace(url, host, proxy.Addr(), 1)
			}
			db := &countingDB{DB: newPool(t, ctx, url, "")}
			if proxy != nil {
				// Closed before the pool, which would wait for the silent
				// connection.
				t.Cleanup(func() { proxy.Close() })
			}
			log := &syncbuf.Buffer{}
			w, err := New(db, Config{Tables: []Table{table}, Logger: slog.New(slog.NewTextHandler(log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			runWriter(t, w)
			w.Delivered(0, []byte("x"), nil)
			waitFor(t, 30*time.Second, "the first outcome not written", func() bool { return w.Stats().Updated == 1 })
			if mode == "stopped" {
				if err := own.Stop(); err != nil {
					t.Fatal(err)
				}
			} else {
				proxy.Silence()
				n := db.execs.Load()
				w.Delivered(0, []byte("x"), nil)
				waitFor(t, 10*time.Second, "no statement started", func() bool { return db.execs.Load() > n })
			}
			ids := make([][]byte, calls)
			for i := range ids {
				ids[i] = fmt.Appendf(nil, "00000000-0000-4000-8000-%012d", i)
			}
			start := time.Now()
			for _, id := range ids {
				w.Delivered(0, id, nil)
			}
			elapsed := time.Since(start)
			s := w.Stats()
			t.Logf("%d Delivered calls with the database %s: %v (%v per call); %+v", calls, mode, elapsed, elapsed/calls, s)
			if elapsed > 30*time.Second {
				t.Fatalf("%d calls took %v: a call waits on the database", calls, elapsed)
			}
			if s.Pending < calls {
				t.Fatalf("%d outcomes pending, want every one of the %d reported", s.Pending, calls)
			}
		})
	}
}

// TestRunWritesWhatIsWaitingWhenStopped stops Run at once: it writes what
// was reported, or says how much it could not.
func TestRunWritesWhatIsWaitingWhenStopped(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	for _, down := range []bool{false, true} {
		t.Run(fmt.Sprintf("down=%v", down), func(t *testing.T) {
			name := fmt.Sprintf("outbox_%v", down)
			table := outboxTable(t, ctx, pool, name, "a", "b")
			db := &countingDB{DB: pool}
			db.down.Store(down)
			w, err := New(db, Config{Tables: []Table{table}, FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			w.Delivered(0, []byte("a"), nil)
			w.Delivered(0, []byte("b"), nil)
			rctx, cancel := context.WithCancel(ctx)
			cancel()
			err = w.Run(rctx)
			got := states(t, ctx, pool, name, "status", "error")
			if !down {
				if err != nil || fmt.Sprint(got) != "map[a:DELIVERED b:DELIVERED]" {
					t.Fatalf("Run: %v; rows %v", err, got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "2 outcomes not written") || !strings.Contains(err.Error(), "connection refused") {
				t.Fatalf("Run: %v; want an error saying 2 outcomes were not written, and why", err)
			}
			if fmt.Sprint(got) != "map[a:PENDING b:PENDING]" {
				t.Fatalf("rows %v", got)
			}
		})
	}
}

// TestBurstMemoryIsReleased holds 100,000 outcomes through an outage,
// then checks that the memory they took is let go once they are written.
func TestBurstMemoryIsReleased(t *testing.T) {
	db := &countingDB{DB: fakeDB{}}
	w, err := New(db, Config{Tables: []Table{{Name: "outbox", IDColumn: "id",
		Columns: Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED"}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db.down.Store(true)
	for i := range 100000 {
		w.Delivered(0, strconv.AppendInt(nil, int64(i), 10), nil)
	}
	flushNow(ctx, w)
	db.down.Store(false)
	for i := range 3 {
		w.Delivered(0, []byte("x"), nil)
		flushNow(ctx, w)
		if i == 0 {
			if s := w.Stats(); s.Updated != 100001 || s.Pending != 0 {
				t.Fatalf("stats %+v, want 100,001 rows updated", s)
			}
		}
	}
	tbl := &w.flusher.tables[0]
	if tbl.peak != 1 || cap(tbl.held) > 1024 || cap(w.q.entries) > 1024 || cap(w.flusher.spare.entries) > 1024 {
		t.Fatalf("after the burst: peak %d, held cap %d, queue caps %d and %d; want the burst's memory released",
			tbl.peak, cap(tbl.held), cap(w.q.entries), cap(w.flusher.spare.entries))
	}
}

func TestCleanReason(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 600) // 1200 bytes
	cases := []struct{ in, want string }{
		{"MESSAGE_TOO_LARGE", "MESSAGE_TOO_LARGE"},
		{"a\x00b", "ab"},
		{"bad \xff utf-8", "bad \uFFFD utf-8"},
		{long, strings.Repeat("é", 500)},
		{"x" + long, "x" + strings.Repeat("é", 499)}, // not cut inside a character
	}
	for _, tc := range cases {
		if got := cleanReason(tc.in); got != tc.want {
			t.Errorf("cleanReason(%.20q) = %.20q… (%d bytes), want %.20q… (%d bytes)", tc.in, got, len(got), tc.want, len(tc.want))
		}
	}
}

// benchWriter returns a Writer on fakeDB and 4096 uuid ids.
func benchWriter(b *testing.B) (*Writer, [][]byte) {
	w, err := New(fakeDB{}, Config{Tables: []Table{{Name: "outbox", IDColumn: "id",
		Columns: Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED"}}}})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([][]byte, 4096)
	for i := range ids {
		ids[i] = fmt.Appendf(nil, "00000000-0000-4000-8000-%012d", i)
	}
	return w, ids
}

// benchDone is the Done of the benchmarks: as the relay's, it names its
// row's transaction.
type benchDone struct{}

func (benchDone) WrittenBack() {}
func (benchDone) Xid() uint32  { return 7 }

// BenchmarkDelivered is the cost of Delivered on the producer's ack path.
// Beside it, a goroutine takes the queue every millisecond as Run does,
// and throws it away, so that what is measured is Delivered and its lock,
// not the database work (BenchmarkFlush).
func BenchmarkDelivered(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		b.Run(map[bool]string{false: "serial", true: "parallel"}[parallel], func(b *testing.B) {
			w, ids := benchWriter(b)
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				tick := time.NewTicker(time.Millisecond)
				defer tick.Stop()
				var spare queue
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					w.mu.Lock()
					taken := w.q
					w.q = spare
					w.mu.Unlock()
					taken.reset()
					spare = taken
				}
			}()
			defer func() { close(stop); <-done }()
			b.ReportAllocs()
			if !parallel {
				for i := 0; b.Loop(); i++ {
					w.Delivered(0, ids[i%len(ids)], benchDone{})
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					w.Delivered(0, ids[i%len(ids)], benchDone{})
				}
			})
		})
	}
}

// BenchmarkFlush is the flusher's own cost per outcome (taking, merging,
// building the statements' arguments), with a database that answers at
// once: the CPU write-back spends beside the stream.
func BenchmarkFlush(b *testing.B) {
	w, ids := benchWriter(b)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w.Delivered(0, ids[i%len(ids)], benchDone{})
		if i%DefaultMaxBatch == DefaultMaxBatch-1 {
			flushNow(ctx, w)
		}
	}
}

// TestWriterClearsTheErrorAndSetsTheLastAttempt: a row the stream
// delivered loses the error an earlier attempt left in it (unless the
// table keeps it): NULL, or the empty string in a NOT NULL column (or one
// of a NOT NULL domain over a text type); its last-attempt
// column takes now(), in UTC for a timestamp without time zone.
func TestWriterClearsTheErrorAndSetsTheLastAttempt(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	exec(t, ctx, pool, "CREATE DOMAIN reason_text AS varchar(200) NOT NULL")
	for _, tc := range []struct {
		name, errType string
		keep          bool
		want          string // rows a and b: id status error last-attempt-within-2-minutes
	}{
		{"cleared", "text", false, "a DELIVERED - true|b PENDING broker down false"},
		{"kept", "text", true, "a DELIVERED broker down true|b PENDING broker down false"},
		{"not_null", "text NOT NULL", false, "a DELIVERED  true|b PENDING broker down false"},
		{"domain_not_null", "reason_text", false, "a DELIVERED  true|b PENDING broker down false"},
	} {
		exec(t, ctx, pool, fmt.Sprintf(`CREATE TABLE %s (id text PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING',
			last_error %s DEFAULT 'broker down', last_attempt_at timestamp)`, tc.name, tc.errType))
		exec(t, ctx, pool, fmt.Sprintf("INSERT INTO %s (id) VALUES ('a'), ('b')", tc.name))
		w, err := New(pool, Config{Tables: []Table{{Name: tc.name, IDColumn: "id", Columns: Columns{StatusColumn: "status",
			Delivered: "DELIVERED", Failed: "FAILED", ErrorColumn: "last_error", KeepError: tc.keep, LastAttemptColumn: "last_attempt_at"}}}})
		if err != nil {
			t.Fatal(err)
		}
		w.Delivered(0, []byte("a"), nil)
		runWriter(t, w)
		waitFor(t, 30*time.Second, "outcome not written", func() bool { return w.Stats().Pending == 0 })
		got := scalar[string](t, ctx, pool, fmt.Sprintf(`SELECT string_agg(id || ' ' || status || ' ' || coalesce(last_error, '-') || ' ' ||
			coalesce(abs(extract(epoch FROM last_attempt_at - (now() AT TIME ZONE 'UTC'))) < 120, false), '|' ORDER BY id) FROM %s`, tc.name))
		if got != tc.want {
			t.Errorf("%s: rows %q, want %q (stats %+v)", tc.name, got, tc.want, w.Stats())
		}
	}
}
