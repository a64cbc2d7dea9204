package backfill

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/sink"
)

// events is an event-store table: a composite text-and-number key, with
// gaps in the positions, and a row whose topic cannot be one.
const events = `CREATE TABLE events (
	stream   text   NOT NULL,
	position bigint NOT NULL,
	topic    text   NOT NULL,
	payload  jsonb  NOT NULL,
	PRIMARY KEY (stream, position)
)`

// pg is the package's PostgreSQL: each test has a database of its own on
// it.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// fixture is a database of the test's own with table events, and a Kafka
// broker.
type fixture struct {
	ctx     context.Context
	url     string
	db      string // the database's name
	brokers []string
	cfg     Config
}

// newFixture runs each statement of schema in the test's database, with
// {db} replaced by the database's name: roles are the cluster's, so a
// test names its roles after its database.
func newFixture(t *testing.T, schema ...string) *fixture {
	t.Helper()
	ctx, db, conn := pg.ConnectDB(t, 2*time.Minute)
	for _, stmt := range schema {
		stmt = strings.ReplaceAll(stmt, "{db}", db.Name)
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	m := decoder.Mapping{Schema: "public", Table: "events", KeyColumn: "stream", PayloadColumn: "payload", TopicColumn: "topic", TopicTemplate: "unused"}
	f := &fixture{ctx: ctx, url: db.URL(), db: db.Name, brokers: kc.ListenAddrs()}
	f.cfg = Config{PostgresURL: f.url, Mapping: m, Kafka: sink.Config{Brokers: f.brokers, AutoCreateTopics: true}, Where: "true", Batch: 7, RunID: "run-1"}
	return f
}

// conn is a connection to the fixture's database, closed when t ends.
func (f *fixture) conn(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(f.ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// consume reads topic from its start until it has n records, or fails.
func (f *fixture) consume(t *testing.T, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(f.ctx, 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
	}
	if len(recs) != n {
		t.Fatalf("%s: %d records, want %d", topic, len(recs), n)
	}
	return recs
}

// positions are the positions in the records' values ({"p": n}), in order.
func positions(recs []*kgo.Record) []string {
	ps := make([]string, len(recs))
	for i, r := range recs {
		ps[i] = strings.Trim(strings.TrimPrefix(string(r.Value), `{"p": `), "}")
	}
	return ps
}

// TestBackfillPagesByKey: a predicate over rows with gaps in their
// composite key, read 7 at a time, publishes every selected row once, in
// key order, through the mapping and with the backfill's header; a row
// that cannot become a record is skipped and counted; rows committed
// meanwhile, ahead of the backfill's place or beyond its last key, are
// left to the stream: the rows are those selected at the start.
func TestBackfillPagesByKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, events,
		`INSERT INTO events SELECT s, p, 'bf', format('{"p": %s}', p)::jsonb FROM unnest(ARRAY['a', 'b b', 'c''c']) s, generate_series(1, 100) p WHERE p % 3 <> 0`,
		`INSERT INTO events VALUES ('b b', 1000, '__bad', '{"p": 1000}')`)
	f.cfg.Where = "position > 40"
	conn, err := pgx.Connect(f.ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	f.cfg.Progress = func(p Progress) {
		if p.Rows == 7 {
			if _, err := conn.Exec(f.ctx, `INSERT INTO events VALUES ('zz', 41, 'bf', '{"p": 41}'), ('b b', 99, 'bf', '{"p": 99}')`); err != nil {
				t.Error(err)
			}
		}
	}
	res, err := Run(f.ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	var each []string // every stream's positions selected, in order
	for p := 41; p <= 100; p++ {
		if p%3 != 0 {
			each = append(each, fmt.Sprint(p))
		}
	}
	streams := []string{"a", "b b", "c'c"}
	if n := int64(len(streams) * len(each)); res.Rows != n || res.Skipped != 1 || res.Total != n+1 || res.Stopped {
		t.Errorf("result %+v, want %d rows, 1 skipped", res, n)
	}
	if res.LastKey != `["c'c","100"]` || res.Last != res.LastKey {
		t.Errorf("last key %s", res.LastKey)
	}
	byKey := map[string][]*kgo.Record{}
	for _, r := range f.consume(t, "bf", len(streams)*len(each)) {
		byKey[string(r.Key)] = append(byKey[string(r.Key)], r)
		if h := r.Headers; len(h) != 1 || h[0].Key != Header || string(h[0].Value) != "run-1" {
			t.Errorf("record of key %q has headers %v: want only %s: run-1", r.Key, h, Header)
		}
	}
	for _, s := range streams {
		if got := positions(byKey[s]); !slices.Equal(got, each) {
			t.Errorf("stream %q: positions %v\nwant %v", s, got, each)
		}
	}
}

// TestBackfillStopsAndResumes: a backfill stopped after its second batch
// says where; one started --after that key publishes the rest, and
// together they publish every row. Each keeps its row in the table of
// backfills: running while it runs, with its session, then how it ended.
func TestBackfillStopsAndResumes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, events, `INSERT INTO events SELECT 's', p, 'sr', format('{"p": %s}', p)::jsonb FROM generate_series(1, 50) p`)
	conn, err := pgx.Connect(f.ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := migrations.Apply(f.ctx, conn, migrations.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	f.cfg.RecordTable = migrations.BackfillTableName(migrations.DefaultConfig())
	row := func() (state string, rows, selected int64, key string, live bool) {
		t.Helper()
		err := conn.QueryRow(f.ctx, `SELECT state, rows_published, rows_selected, coalesce(last_key, ''),
			EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = b.backend_pid AND a.application_name = b.application_name)
			FROM cdc_relay_backfills b WHERE table_name = 'public.events'`).Scan(&state, &rows, &selected, &key, &live)
		if err != nil {
			t.Fatal(err)
		}
		return state, rows, selected, key, live
	}
	ctx, stop := context.WithCancel(f.ctx)
	batches := 0
	f.cfg.Progress = func(Progress) {
		if batches++; batches == 2 {
			if state, _, selected, _, live := row(); state != StateRunning || selected != 50 || !live {
				t.Errorf("while it runs, its row says %s of %d rows, its session live: %v", state, selected, live)
			}
			stop()
		}
	}
	first, err := Run(ctx, f.cfg)
	if err != nil || !first.Stopped || first.Rows != 14 || first.LastKey != `["s","14"]` {
		t.Fatalf("first run %+v, %v: want stopped after 14 rows at [\"s\",\"14\"]", first, err)
	}
	if state, rows, _, key, _ := row(); state != StateStopped || rows != 14 || key != first.LastKey {
		t.Errorf("once stopped, its row says %s, %d rows, last key %s", state, rows, key)
	}
	f.cfg.Progress, f.cfg.After = nil, first.LastKey
	var second Result
	err = whenFree(func() (err error) { second, err = Run(f.ctx, f.cfg); return err }) // the first's session ends soon after it returns
	if err != nil || second.Stopped || second.Rows != 36 || second.Total != 36 {
		t.Fatalf("second run %+v, %v: want the 36 rows left", second, err)
	}
	if state, rows, selected, key, _ := row(); state != StateDone || rows != 36 || selected != 36 || key != `["s","50"]` {
		t.Errorf("once done, its row says %s, %d of %d rows, last key %s", state, rows, selected, key)
	}
	want := make([]string, 50)
	for i := range want {
		want[i] = fmt.Sprint(i + 1)
	}
	if got := positions(f.consume(t, "sr", 50)); !slices.Equal(got, want) {
		t.Errorf("positions %v", got)
	}
}

// TestBackfillUnbalancedPredicate: a predicate with unbalanced parentheses
// cannot escape the key's conditions: the backfill reads each row once,
// and ends.
func TestBackfillUnbalancedPredicate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, events, `INSERT INTO events SELECT 's', p, 'ub', format('{"p": %s}', p)::jsonb FROM generate_series(1, 50) p`)
	f.cfg.Where = "position <= 10) OR (true"
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	res, err := Run(ctx, f.cfg)
	if err != nil || res.Stopped || res.Rows != 50 || res.Total != 50 {
		t.Fatalf("%+v, %v: want the 50 rows once", res, err)
	}
	f.consume(t, "ub", 50)
}

// TestBackfillDryRunAndOverride: a dry run counts and finds the first and
// last key; --topic-override sends every record to its topic; a rate
// spaces the batches.
func TestBackfillDryRunAndOverride(t *testing.T) {
	t.Parallel()
	f := newFixture(t, events, `INSERT INTO events SELECT 'x', p, 'not-this', '{}' FROM generate_series(1, 30) p`)
	f.cfg.Where, f.cfg.DryRun = "position BETWEEN 5 AND 24", true
	res, err := Run(f.ctx, f.cfg)
	if err != nil || res.Total != 20 || res.First != `["x","5"]` || res.Last != `["x","24"]` || res.Rows != 0 {
		t.Fatalf("dry run %+v, %v", res, err)
	}
	f.cfg.DryRun, f.cfg.TopicOverride, f.cfg.Rate, f.cfg.Batch = false, "over", 40, 10
	start := time.Now()
	if res, err = Run(f.ctx, f.cfg); err != nil || res.Rows != 20 {
		t.Fatalf("run %+v, %v", res, err)
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("20 rows at 40 a second, 10 a batch, took %s: want the second batch a quarter second after the first", took)
	}
	f.consume(t, "over", 20)
}

// TestBackfillRefusals: what a backfill refuses, before it publishes
// anything, with what to do: a predicate that writes, a mapping that does
// not fit the table (found by a dry run too), a table without a primary
// key.
func TestBackfillRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, events, `CREATE SEQUENCE s`, `CREATE TABLE nokey (event_id uuid, payload jsonb)`,
		`INSERT INTO events VALUES ('x', 1, 't', '{}')`)
	for _, tc := range []struct {
		name   string
		change func(*Config)
		is     error
		want   []string
	}{
		{"a writing predicate", func(c *Config) { c.Where = "nextval('s') > 0" }, nil, []string{"read-only transaction"}},
		{"a dry run of a mapping that does not fit", func(c *Config) { c.DryRun, c.Mapping.PayloadColumn = true, "nosuch" }, nil,
			[]string{`"public"."events"`, "nosuch"}},
		{"a table without a key", func(c *Config) { c.Mapping.Table = "nokey" }, ErrNoKey, []string{`ALTER TABLE "public"."nokey" ADD PRIMARY KEY (<a unique column>)`}},
		{"a table without a key, its event id column mapped", func(c *Config) { c.Mapping.Table, c.Mapping.IDColumn = "nokey", "event_id" }, ErrNoKey,
			[]string{`ALTER TABLE "public"."nokey" ADD PRIMARY KEY ("event_id")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.cfg
			tc.change(&cfg)
			err := whenFree(func() error { _, err := Run(f.ctx, cfg); return err })
			for _, w := range tc.want {
				if err == nil || tc.is != nil && !errors.Is(err, tc.is) || !strings.Contains(err.Error(), w) {
					t.Errorf("%v, want an error saying %q", err, w)
				}
			}
		})
	}
}

// TestBackfillPrivileges: a role that lacks a privilege a backfill needs
// is told which GRANT to ask for: TEMPORARY on the database (revoked from
// PUBLIC), SELECT on the table, SELECT on a table the predicate reads.
func TestBackfillPrivileges(t *testing.T) {
	t.Parallel()
	f := newFixture(t, events, `CREATE TABLE progress (position bigint)`, `INSERT INTO events VALUES ('x', 1, 't', '{}')`,
		`REVOKE TEMPORARY ON DATABASE {db} FROM PUBLIC`,
		`CREATE ROLE notemp_{db} LOGIN`, `GRANT SELECT ON events, progress TO notemp_{db}`,
		`CREATE ROLE noselect_{db} LOGIN`, `GRANT TEMPORARY ON DATABASE {db} TO noselect_{db}`,
		`CREATE ROLE nopredicate_{db} LOGIN`, `GRANT TEMPORARY ON DATABASE {db} TO nopredicate_{db}`, `GRANT SELECT ON events TO nopredicate_{db}`)
	for _, tc := range []struct {
		role, where string
		want        []string
	}{
		{"notemp", "true", []string{"create the table of selected keys", `GRANT TEMPORARY ON DATABASE "{db}" TO "{role}"`}},
		{"noselect", "true", []string{"permission denied for table events", `SELECT on "public"."events"`, `TO "{role}"`}},
		{"nopredicate", "position > (SELECT max(position) FROM progress)", []string{"permission denied for table progress",
			"every table its predicate reads", `GRANT SELECT ON <that table> TO "{role}"`}},
	} {
		t.Run(tc.role, func(t *testing.T) {
			role := tc.role + "_" + f.db
			cfg := f.cfg
			cfg.PostgresURL, cfg.Where, cfg.DryRun = strings.Replace(f.url, "postgres@", role+"@", 1), tc.where, true
			err := whenFree(func() error { _, err := Run(f.ctx, cfg); return err })
			for _, w := range tc.want {
				w = strings.NewReplacer("{db}", f.db, "{role}", role).Replace(w)
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%v, want an error saying %q", err, w)
				}
			}
		})
	}
}

// TestBackfillRowSecurity: a backfill run as a role that a row-level
// security policy lets see some rows of the table refuses, saying ALTER
// ROLE … BYPASSRLS, instead of publishing the rows it sees.
func TestBackfillRowSecurity(t *testing.T) {
	t.Parallel()
	f := newFixture(t, events, `INSERT INTO events VALUES ('x', 1, 't', '{}'), ('y', 1, 't', '{}')`,
		`CREATE ROLE tenant_{db} LOGIN`, `GRANT SELECT ON events TO tenant_{db}`,
		`ALTER TABLE events ENABLE ROW LEVEL SECURITY`, `CREATE POLICY x_only ON events USING (stream = 'x')`)
	cfg := f.cfg
	cfg.PostgresURL, cfg.DryRun = strings.Replace(f.url, "postgres@", "tenant_"+f.db+"@", 1), true
	err := whenFree(func() error { _, err := Run(f.ctx, cfg); return err })
	for _, w := range []string{"row-level security", `ALTER ROLE "tenant_` + f.db + `" BYPASSRLS`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%v, want an error saying %q", err, w)
		}
	}
}

// whenFree runs f until it returns other than ErrBusy, for 10 s at most:
// the server ends a backfill's session, and releases its lock, soon after
// the backfill closes it. It returns f's last error.
func whenFree(f func() error) error {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := f(); !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			return err
		}
	}
}

// TestBackfillOneAtATime: a second backfill of a table is refused while
// one runs, naming its session (all of it to the same role; its pid,
// application name and role to another, which may not see the rest), with the advice for a
// session that lingers; once the first ends, it runs. A predicate that
// releases its session's advisory locks does not release the backfill's.
func TestBackfillOneAtATime(t *testing.T) {
	t.Parallel()
	f := newFixture(t, events, `INSERT INTO events VALUES ('x', 1, 't', '{}')`, `CREATE ROLE other_{db} LOGIN`, `GRANT SELECT ON events TO other_{db}`)
	b, err := open(f.ctx, f.cfg.withDefaults(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	other := f.cfg
	other.PostgresURL = strings.Replace(f.url, "postgres@", "other_"+f.db+"@", 1)
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"same role", f.cfg, []string{"cdc-relay backfill, pid", "connected since", "pg_terminate_backend"}},
		{"another role", other, []string{"server process", "(cdc-relay backfill, pid", "of role postgres", "pg_terminate_backend"}},
	} {
		_, err := Run(f.ctx, tc.cfg)
		for _, w := range tc.want {
			if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), w) {
				t.Errorf("a second backfill, %s: %v, want ErrBusy saying %q", tc.name, err, w)
			}
		}
	}
	b.close()
	if err := whenFree(func() error { _, err := Run(f.ctx, f.cfg); return err }); err != nil {
		t.Errorf("once the first ended: %v", err)
	}

	unlocks := f.cfg
	unlocks.Where = "(SELECT true FROM (SELECT pg_advisory_unlock_all()) u)"
	unlocks.Progress = func(Progress) {
		if b, err := open(f.ctx, f.cfg.withDefaults(time.Now())); !errors.Is(err, ErrBusy) {
			t.Errorf("beside a backfill whose predicate unlocks: %v, want ErrBusy", err)
			if err == nil {
				b.close()
			}
		}
	}
	if err := whenFree(func() error { _, err := Run(f.ctx, unlocks); return err }); err != nil {
		t.Errorf("a predicate that unlocks: %v", err)
	}
}

// TestRowKeeperWritesAfterTheStop: once the backfill's context ended (a
// stop during produce), its row still records the progress and the stop;
// a failure other than a missing table or privilege does not stop the
// writes.
func TestRowKeeperWritesAfterTheStop(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	conn := f.conn(t)
	if _, err := migrations.Apply(f.ctx, conn, migrations.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	var problems []string
	k := &rowKeeper{conn: conn, table: migrations.BackfillTableName(migrations.DefaultConfig()), name: "public.events", runID: "r",
		problem: func(msg string, _ error) { problems = append(problems, msg) }}
	ctx, stop := context.WithCancel(f.ctx)
	k.start(ctx, "true", 10, "")
	stop()
	k.last = time.Time{}
	k.progress(ctx, Progress{Rows: 4, LastKey: "4"})
	k.end(ctx, StateStopped, Progress{Rows: 7, LastKey: "7"})
	var state, key string
	var rows int64
	if err := conn.QueryRow(f.ctx, "SELECT state, rows_published, last_key FROM cdc_relay_backfills WHERE table_name = 'public.events'").Scan(&state, &rows, &key); err != nil {
		t.Fatal(err)
	}
	if state != StateStopped || rows != 7 || key != "7" || len(problems) != 0 {
		t.Errorf("after the stop the row says %s, %d rows, last key %s (problems %q): want stopped, 7, 7", state, rows, key, problems)
	}
	k.exec(f.ctx, "SELECT 1/0")
	if k.table == "" || len(problems) != 1 {
		t.Errorf("a failed write stopped the writes (problems %q)", problems)
	}
}

// TestBackfillSelectsAsOfItsStart: rows committed while the keys are
// being selected are not selected, even with keys beyond the chunk being
// read: the selection reads one snapshot, taken when it began. The
// predicate sleeps on one row of the first chunk, and the test commits
// rows with later keys meanwhile.
func TestBackfillSelectsAsOfItsStart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, events, `INSERT INTO events SELECT 'x', p, 't', '{}' FROM generate_series(1, 25000) p`)
	f.cfg.Where, f.cfg.DryRun = "position <> 5000 OR pg_sleep(1) IS NOT NULL", true
	conn := f.conn(t)
	type result struct {
		res Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := Run(f.ctx, f.cfg)
		done <- result{res, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for sleeping := false; !sleeping; {
		if time.Now().After(deadline) {
			t.Fatal("the backfill's predicate never slept")
		}
		if err := conn.QueryRow(f.ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event = 'PgSleep')`).Scan(&sleeping); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(f.ctx, `INSERT INTO events SELECT 'x', p, 't', '{}' FROM generate_series(25001, 25010) p`); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.Total != 25000 || r.res.Last != `["x","25000"]` {
		t.Fatalf("selected %d rows up to %s (%v); want the 25,000 committed before the start, up to [\"x\",\"25000\"]", r.res.Total, r.res.Last, r.err)
	}
}
