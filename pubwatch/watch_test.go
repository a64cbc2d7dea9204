package pubwatch

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// The table watch against a real PostgreSQL: each case changes the outbox
// table or the publication under a watch, as an operator would.

// watchDB is a test's database (newWatchDB: pdb) prepared by migrate,
// with a watch on its outbox table.
type watchDB struct {
	t       *testing.T
	conn    *pgx.Conn
	w       *tableWatch
	stopped bool
}

func newWatchDB(t *testing.T, pdb *pgtemptest.DB, setup ...string) *watchDB {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	db := &watchDB{t: t, conn: conn}
	for _, sql := range setup {
		db.exec(sql)
	}
	cfg := testConfig(nil)
	tables := migrations.DefaultConfig()
	tables.SkipOutbox = len(setup) > 0
	if _, err := migrations.Apply(ctx, conn, tables); err != nil {
		t.Fatal(err)
	}
	// A pool, as in the relay: the periodic check runs beside the test.
	pool, err := pgxpool.New(ctx, pdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db.w, err = watchTable(ctx, pool, cfg, 0, 0, nil, func() { db.stopped = true })
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func (db *watchDB) exec(sql string) {
	db.t.Helper()
	if _, err := db.conn.Exec(context.Background(), sql); err != nil {
		db.t.Fatalf("%s: %v", sql, err)
	}
}

func (db *watchDB) walLSN() pglogrepl.LSN {
	db.t.Helper()
	var s string
	if err := db.conn.QueryRow(context.Background(), "SELECT pg_current_wal_lsn()::text").Scan(&s); err != nil {
		db.t.Fatal(err)
	}
	lsn, err := pglogrepl.ParseLSN(s)
	if err != nil {
		db.t.Fatal(err)
	}
	return lsn
}

// pgVersion is pg's server_version_num.
func pgVersion(t *testing.T, pg *pgtemp.Cluster) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v int
	if err := conn.QueryRow(context.Background(), "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// outboxOfDefaultLayout is the outbox table migrate creates.
const outboxOfDefaultLayout = `CREATE TABLE outbox (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), aggregate_type text NOT NULL,
	aggregate_id text NOT NULL, event_type text NOT NULL, topic text, payload jsonb NOT NULL, headers jsonb,
	created_at timestamptz NOT NULL DEFAULT now())`

const partitionedOutbox = `CREATE TABLE outbox (id uuid NOT NULL DEFAULT gen_random_uuid(), aggregate_type text NOT NULL,
	aggregate_id text NOT NULL, event_type text NOT NULL, topic text, payload jsonb NOT NULL, headers jsonb,
	created_at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (created_at)`

func TestTableWatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  []string // instead of migrate's outbox table
		change []string
		want   string // in the error; "" when the table stays published
	}{
		{"unchanged", nil, []string{"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('a', 'k', 'e', '{}')"}, ""},
		{"removed from the publication", nil, []string{"ALTER PUBLICATION cdc_relay DROP TABLE outbox"}, `was removed from publication "cdc_relay"`},
		{"dropped", nil, []string{"DROP TABLE outbox"}, "no longer exists (dropped or renamed)"},
		{"renamed", nil, []string{"ALTER TABLE outbox RENAME TO outbox_old"}, "no longer exists (dropped or renamed)"},
		// Even added back at once: inserts in between were not published.
		{"dropped and created again", nil, []string{"DROP TABLE outbox", "CREATE TABLE outbox (id int)", "ALTER PUBLICATION cdc_relay ADD TABLE outbox"}, "was dropped and created again"},
		// Creating it again is not enough: the slot must be created again.
		{"publication dropped", nil, []string{"DROP PUBLICATION cdc_relay"}, `publication "cdc_relay" no longer exists`},
		{"publication renamed", nil, []string{"ALTER PUBLICATION cdc_relay RENAME TO cdc_relay_tmp"}, "`cdc-relay recover --recreate-slot --since "},
		{"partitioned, published via the root", []string{partitionedOutbox, "CREATE TABLE outbox_all PARTITION OF outbox DEFAULT"},
			[]string{"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('a', 'k', 'e', '{}')"}, ""},
		{"partitioned, partitions published by name", []string{partitionedOutbox, "CREATE TABLE outbox_all PARTITION OF outbox DEFAULT"},
			[]string{"ALTER PUBLICATION cdc_relay SET (publish_via_partition_root = false)"}, "SET (publish_via_partition_root = true)"},
		{"inserts not published", nil, []string{"ALTER PUBLICATION cdc_relay SET (publish = 'update')"}, `"cdc_relay" no longer publishes inserts`},
		{"inserts not published, then again", nil, []string{"ALTER PUBLICATION cdc_relay SET (publish = 'update')", "ALTER PUBLICATION cdc_relay SET (publish = 'insert')"},
			"changed since the last check, although it looks right again"},
		{"removed and added back", nil, []string{"ALTER PUBLICATION cdc_relay DROP TABLE outbox", "ALTER PUBLICATION cdc_relay ADD TABLE outbox"},
			"changed since the last check"},
		{"another table added", nil, []string{"CREATE TABLE other (n int)", "ALTER PUBLICATION cdc_relay ADD TABLE other"}, ""},
		// A connector's publication narrowed to the outbox table (Debezium's
		// filtered mode publishes every table of its include list): the
		// table's entry stays as it was.
		{"narrowed to the table", nil, []string{"CREATE TABLE other (n int)", "ALTER PUBLICATION cdc_relay ADD TABLE other",
			"ALTER PUBLICATION cdc_relay SET TABLE outbox"}, ""},
		// Debezium's default publication, which the relay may take over
		// with the connector's slot.
		{"a publication FOR ALL TABLES", []string{outboxOfDefaultLayout, "CREATE PUBLICATION cdc_relay FOR ALL TABLES"},
			[]string{"CREATE TABLE other (n int PRIMARY KEY)", "INSERT INTO other VALUES (1)", "UPDATE other SET n = 2",
				"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('a', 'k', 'e', '{}')"}, ""},
		{"a row filter", nil, []string{"ALTER PUBLICATION cdc_relay SET TABLE outbox WHERE (event_type <> 'X')"},
			"with a row filter, WHERE (event_type <> 'X'::text)"},
		{"a row filter, then none", nil, []string{"ALTER PUBLICATION cdc_relay SET TABLE outbox WHERE (event_type <> 'X')", "ALTER PUBLICATION cdc_relay SET TABLE outbox"},
			"changed since the last check"},
		{"a column list without the id and the key", nil, []string{"ALTER PUBLICATION cdc_relay SET TABLE outbox (aggregate_type, event_type, topic, payload, headers, created_at)"},
			"leaving out id, aggregate_id, which the relay reads"},
		// At start, a column list of the mapped columns is fine.
		{"a column list of the mapped columns", []string{`CREATE TABLE outbox (id uuid NOT NULL DEFAULT gen_random_uuid(), aggregate_type text NOT NULL,
	aggregate_id text NOT NULL, event_type text NOT NULL, topic text, payload jsonb NOT NULL, headers jsonb, note text, created_at timestamptz NOT NULL DEFAULT now())`,
			"CREATE PUBLICATION cdc_relay FOR TABLE outbox (id, aggregate_type, aggregate_id, event_type, topic, payload, headers, created_at) WITH (publish = 'insert')"},
			[]string{"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('a', 'k', 'e', '{}')"}, ""},
	}
	needs15 := map[string]bool{"a row filter": true, "a row filter, then none": true,
		"a column list without the id and the key": true, "a column list of the mapped columns": true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pdb := sharedPG.DB(t)
			if needs15[tt.name] && pgVersion(t, pdb.Cluster) < 150000 {
				t.Skip("no row filters or column lists before PostgreSQL 15")
			}
			db := newWatchDB(t, pdb, tt.setup...)
			if err := db.w.check(ctx); err != nil {
				t.Fatalf("check before the change: %v", err)
			}
			before := db.walLSN()
			vouched := db.w.Vouched()
			var changed time.Time // before the change committed
			if err := db.conn.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&changed); err != nil {
				t.Fatal(err)
			}
			for _, sql := range tt.change {
				db.exec(sql)
			}
			err := db.w.check(ctx)
			if tt.want == "" {
				if err != nil || db.w.Vouched() <= vouched || db.stopped {
					t.Fatalf("check: %v, vouched %s after %s; want a newer position and no stop", err, db.w.Vouched(), vouched)
				}
				// The time of the position: read after the change, no
				// transaction after the position committed before it.
				if at := db.w.VouchedAt().CommitTime; at.Before(changed) {
					t.Fatalf("vouched at %v, before the change committed (after %v)", at, changed)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "cdc-relay recover") {
				t.Fatalf("check: %v; want an error saying %q and how to recover", err, tt.want)
			}
			// The command republishes from before the last good check.
			if since, ok := printedSince(err.Error()); !ok || since.After(db.w.VouchedAt().CommitTime.Add(-RecoverMargin)) || since.Before(changed.Add(-RecoverMargin-time.Minute)) {
				t.Fatalf("recover --since %v (%v), want the check's time %v less %s:\n%v", since, ok, db.w.VouchedAt().CommitTime, RecoverMargin, err)
			}
			if !db.stopped || db.w.Err() == nil {
				t.Fatalf("stopped %v, Err %v: want the stream stopped and the error kept", db.stopped, db.w.Err())
			}
			db.exec("INSERT INTO cdc_relay_checkpoint VALUES ('more WAL', '0/0')")
			if err := db.w.check(ctx); err == nil || db.w.Vouched() > before {
				t.Fatalf("a later check: %v, vouched %s; want the error and nothing past %s", err, db.w.Vouched(), before)
			}
		})
	}
}

// printedSince is the time of the `cdc-relay recover --since` command in
// msg.
func printedSince(msg string) (time.Time, bool) {
	m := regexp.MustCompile("`cdc-relay recover (?:--recreate-slot )?--since (\\S+)`").FindStringSubmatch(msg)
	if m == nil {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339, m[1])
	return at, err == nil
}

// TestWatchTableRefusesAtStart: a publication that hides inserts or mapped
// columns when the session starts is refused, with the fix.
func TestWatchTableRefusesAtStart(t *testing.T) {
	t.Parallel()
	if pgVersion(t, sharedPG.DB(t).Cluster) < 150000 {
		t.Skip("no row filters or column lists before PostgreSQL 15")
	}
	tests := []struct {
		name, change, want string
	}{
		{"no inserts", "ALTER PUBLICATION cdc_relay SET (publish = 'update, delete')", "ALTER PUBLICATION \"cdc_relay\" SET (publish = 'insert')"},
		{"a row filter", "ALTER PUBLICATION cdc_relay SET TABLE outbox WHERE (event_type <> 'X')",
			`BEGIN; ALTER PUBLICATION "cdc_relay" DROP TABLE "public"."outbox"; ALTER PUBLICATION "cdc_relay" ADD TABLE "public"."outbox"; COMMIT`},
		{"a column list without the payload", "ALTER PUBLICATION cdc_relay SET TABLE outbox (id, aggregate_type, aggregate_id, event_type, topic, headers, created_at)",
			"leaving out payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := newWatchDB(t, sharedPG.DB(t))
			db.exec(tt.change)
			_, err := watchTable(ctx, db.conn, testConfig(nil), 0, 0, nil, func() {})
			if err == nil || !fatal.Is(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("watchTable: %v; want a fatal error saying %q", err, tt.want)
			}
		})
	}
}

func TestTableWatchRelation(t *testing.T) {
	t.Parallel()
	missingKey := &decoder.MappingError{Table: "public.outbox", Missing: "aggregate_id", Err: errors.New(`has no column "aggregate_id"`)}
	tests := []struct {
		name   string
		change []string
		rels   func(oid uint32) []decoder.Relation
		want   string // in the error of the last Relation; "" for none
		fatal  bool   // the watch fails (stops vouching)
	}{
		{"the table's own", nil, func(oid uint32) []decoder.Relation { return []decoder.Relation{{OID: oid}, {OID: oid}} }, "", false},
		{"another table after it", nil, func(oid uint32) []decoder.Relation { return []decoder.Relation{{OID: oid}, {OID: oid + 1}} },
			"was dropped and created again", true},
		{"an earlier table, replayed", nil, func(oid uint32) []decoder.Relation { return []decoder.Relation{{OID: oid - 1}, {OID: oid}} }, "", false},
		{"an earlier table, then the table was re-created", []string{"DROP TABLE outbox", "CREATE TABLE outbox (id int)"},
			func(oid uint32) []decoder.Relation { return []decoder.Relation{{OID: oid - 1}} }, "was dropped and created again", true},
		{"a key column missing then, back now", nil,
			func(oid uint32) []decoder.Relation { return []decoder.Relation{{OID: oid, Unfit: missingKey}} }, "", false},
		{"a key column missing then and now", []string{"ALTER TABLE outbox RENAME aggregate_id TO agg_id"},
			func(oid uint32) []decoder.Relation { return []decoder.Relation{{OID: oid, Unfit: missingKey}} }, `no column "aggregate_id" (the record key)`, false},
		{"a timestamp column of type text now", []string{"ALTER TABLE outbox ALTER COLUMN created_at TYPE text"},
			func(oid uint32) []decoder.Relation {
				return []decoder.Relation{{OID: oid, Unfit: &decoder.MappingError{Table: "public.outbox", Err: errors.New("timestamp column")}}}
			}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := newWatchDB(t, sharedPG.DB(t))
			for _, sql := range tt.change {
				db.exec(sql)
			}
			rels := tt.rels(db.w.oid)
			var err error
			for _, rel := range rels {
				if err = db.w.relation(ctx, rel); err != nil {
					break
				}
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("relation: %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("relation: %v, want an error saying %q", err, tt.want)
			case tt.want != "" && !fatal.Is(err) && !tt.fatal:
				t.Fatalf("relation: %v is not fatal", err)
			}
			if tt.want != "" && strings.Contains(tt.want, "record key") && !strings.Contains(err.Error(), "--key-column") {
				t.Errorf("the error does not name the flag: %v", err)
			}
			if got := db.w.Err() != nil; got != tt.fatal || db.stopped != tt.fatal {
				t.Fatalf("watch failed %v, stream stopped %v; want %v", got, db.stopped, tt.fatal)
			}
		})
	}
}

// TestTableWatchChecksEveryInterval: the periodic check stops the stream
// without any message from it.
func TestTableWatchChecksEveryInterval(t *testing.T) {
	t.Parallel()
	db := newWatchDB(t, sharedPG.DB(t))
	stopped := make(chan struct{})
	db.w.stop = func() { close(stopped) }
	stop := db.w.start(20 * time.Millisecond)
	defer stop()
	db.exec("ALTER PUBLICATION cdc_relay DROP TABLE outbox")
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not stop the stream within 10s of the table leaving the publication")
	}
}

// TestTableWatchNextSession: a session that resumes at or before where
// the last session's watch vouched holds the publication to that watch's
// mark, so a change made and undone between two sessions (a reconnect)
// stops the relay; one that resumes past it (another relay led meanwhile)
// starts afresh.
func TestTableWatchNextSession(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change []string
		past   bool // the next session resumes past the mark
		want   string
	}{
		{"unchanged", nil, false, ""},
		{"inserts not published, then again", []string{"ALTER PUBLICATION cdc_relay SET (publish = 'update')", "ALTER PUBLICATION cdc_relay SET (publish = 'insert')"},
			false, "changed since the last check"},
		{"dropped and created again", []string{"DROP TABLE outbox", "CREATE TABLE outbox (id int)", "ALTER PUBLICATION cdc_relay ADD TABLE outbox"},
			false, "was dropped and created again"},
		{"changed, resumed past the mark", []string{"ALTER PUBLICATION cdc_relay DROP TABLE outbox", "ALTER PUBLICATION cdc_relay ADD TABLE outbox"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := newWatchDB(t, sharedPG.DB(t))
			if err := db.w.check(ctx); err != nil {
				t.Fatal(err)
			}
			mark := Watches{db.w}.Marks()
			for _, sql := range tt.change {
				db.exec(sql)
			}
			start := mark[0].at.LSN
			if tt.past {
				start = db.walLSN()
			}
			_, err := watchTables(ctx, db.conn, testConfig(nil), start, mark, func() {})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("next session: %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("next session: %v, want an error saying %q", err, tt.want)
			case tt.want != "":
				if since, ok := printedSince(err.Error()); !ok || !since.Equal(mark[0].at.CommitTime.Add(-RecoverMargin).Truncate(time.Second)) {
					t.Fatalf("recover --since %v, want the mark's time %v less %s", since, mark[0].at.CommitTime, RecoverMargin)
				}
			}
		})
	}
}
