package migrations

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestPublisherMigration: a status table and a pause table of version 19,
// with rows, gain the publisher (migration 20: every old row Kafka's, the
// status table not rewritten, the column analyzed) and the index of a
// parked event's identity with its publisher (21) in place of 0014's, and
// the pause table's key gains the publisher; the relay's check asks for
// migrate until then.
// After it, the same event parks once per publisher, a topic pauses once
// per publisher, and a park of a relay of version 19 (the old ON CONFLICT
// target) is refused rather than dropped. Migrate again changes nothing:
// no index is built again (neither 0014's nor 0002's, nor 21's). Also
// for names to quote, and for a status table whose name leaves no room
// for the suffixes.
func TestPublisherMigration(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TABLE outbox (id uuid)"); err != nil {
		t.Fatal(err)
	}
	built := indexesBuilt(ctx, t, conn)
	for _, tt := range []struct{ name, schema, table string }{
		{"the default status table", "public", "outbox_delivery"},
		{"names to quote", "Relay's Tables", `Deli"very`},
		{"a long name", "long", strings.Repeat("d", 60)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SkipOutbox = true
			cfg.StatusSchema, cfg.StatusTable, cfg.CheckpointSchema = tt.schema, tt.table, tt.schema
			status, pauses := pgx.Identifier{tt.schema, tt.table}.Sanitize(), PauseTableName(cfg)
			if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{tt.schema}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			applyUpTo(ctx, t, conn, cfg, 19)
			for _, sql := range []string{
				"INSERT INTO " + status + " (event_id, topic, last_error, commit_lsn, source_table, status)" +
					" VALUES ('1', 'orders', 'x', '0/10', 'public.outbox', 'FAILED'), (NULL, 'orders', 'x', '0/10', 'public.outbox', 'DEAD')",
				"INSERT INTO " + pauses + " (slot_name, topic) VALUES ('s', 'orders')",
			} {
				if _, err := conn.Exec(ctx, sql); err != nil {
					t.Fatal(err)
				}
			}
			file := relFile(ctx, t, conn, status)
			if err := Check(ctx, conn, cfg); err == nil || !strings.Contains(err.Error(), `lacks column "publisher" (migration 20)`) {
				t.Fatalf("Check of a version 19 status table: %v, want it to ask for migrate", err)
			}
			var firstOID uint32
			for i, want := range [][]int{versionsAfter(t, 19), nil} {
				built()
				res, err := Apply(ctx, conn, cfg)
				if err != nil || !slices.Equal(res.Applied, want) {
					t.Fatalf("migrate %d: %+v, %v; want versions %v applied", i+1, res, err, want)
				}
				oid, unique := copyIndexes(ctx, t, conn, status, PublisherCopyIndex(cfg))
				if oid == 0 || unique != 1 || i == 1 && oid != firstOID {
					t.Fatalf("migrate %d: index %s oid %d (the first migrate's %d), %d unique indexes on the park's columns; "+
						"want it valid, alone, built once", i+1, PublisherCopyIndex(cfg), oid, firstOID, unique)
				}
				firstOID = oid
				if b := built(); i == 0 && len(b) != 1 || i == 1 && len(b) != 0 {
					t.Errorf("migrate %d built indexes of a parked event's identity %q; want 21's, then none", i+1, b)
				}
				if f := relFile(ctx, t, conn, status); f != file {
					t.Errorf("migrate %d rewrote %s (file %d, was %d): a constant default adds the column in the catalog only", i+1, status, f, file)
				}
				if err := Check(ctx, conn, cfg); err != nil {
					t.Fatalf("Check after migrate %d: %v", i+1, err)
				}
			}
			var analyzed bool
			if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stats WHERE schemaname = $1 AND tablename = $2 AND attname = 'publisher')",
				tt.schema, tt.table).Scan(&analyzed); err != nil || !analyzed {
				t.Errorf("statistics of %s's publisher after migrate: %v (%v), want them (the planner's estimate of publisher = 'kafka')", status, analyzed, err)
			}
			checkOldRowsKafkas(ctx, t, conn, status, pauses)
			checkParkedPerPublisher(ctx, t, conn, status, pauses)
		})
	}
}

// indexesBuilt makes conn's database log each index created (an event
// trigger), and returns what reads the definitions of the indexes of a
// parked event's identity (on commit_lsn: 0002's, 0014's, 21's) logged
// since its last call (or since it was made), oldest first. (The others
// are left out: with a status table's name of 60 bytes or more, 0011's
// corrected index and 0002's copy index have one name once PostgreSQL
// cuts them to 63 bytes, so 0014's drop of the copy index drops the
// corrected index, and 0011 builds it again at every migrate, as before
// version 20.)
func indexesBuilt(ctx context.Context, t *testing.T, conn *pgx.Conn) func() []string {
	t.Helper()
	for _, sql := range []string{
		"CREATE TABLE cdc_relay_test_built (id bigserial, name text)",
		`CREATE FUNCTION cdc_relay_test_log_built() RETURNS event_trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.cdc_relay_test_built (name) SELECT pg_get_indexdef(objid) FROM pg_event_trigger_ddl_commands() WHERE object_type = 'index';
		END $$`,
		"CREATE EVENT TRIGGER cdc_relay_test_built ON ddl_command_end WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION cdc_relay_test_log_built()",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	return func() []string {
		rows, _ := conn.Query(ctx, "WITH d AS (DELETE FROM cdc_relay_test_built RETURNING id, name) SELECT name FROM d WHERE name LIKE '%commit_lsn%' ORDER BY id")
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
}

// relFile is table's file (pg_relation_filenode): a rewrite changes it.
func relFile(ctx context.Context, t *testing.T, conn *pgx.Conn, table string) uint32 {
	t.Helper()
	var f uint32
	if err := conn.QueryRow(ctx, "SELECT pg_relation_filenode($1::regclass)", table).Scan(&f); err != nil {
		t.Fatal(err)
	}
	return f
}

// checkOldRowsKafkas checks that the rows of status and pauses from
// before migration 20 are Kafka's, and that the pause table's key is
// (slot_name, topic, publisher).
func checkOldRowsKafkas(ctx context.Context, t *testing.T, conn *pgx.Conn, status, pauses string) {
	t.Helper()
	var statusRows, pauseRows []string
	var key string
	err := conn.QueryRow(ctx, "SELECT ARRAY(SELECT publisher FROM "+status+" ORDER BY id), ARRAY(SELECT publisher FROM "+pauses+"),"+
		" (SELECT string_agg(a.attname, ', ' ORDER BY k.n) FROM pg_constraint AS c, unnest(c.conkey) WITH ORDINALITY AS k(attnum, n), pg_attribute AS a"+
		" WHERE c.conrelid = $1::regclass AND c.contype = 'p' AND a.attrelid = c.conrelid AND a.attnum = k.attnum)", pauses).
		Scan(&statusRows, &pauseRows, &key)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(statusRows, []string{"kafka", "kafka"}) || !slices.Equal(pauseRows, []string{"kafka"}) || key != "slot_name, topic, publisher" {
		t.Errorf("after migrate: status rows' publishers %v, pauses' %v, the pause table's key (%s); want every old row Kafka's, the key with the publisher",
			statusRows, pauseRows, key)
	}
}

// checkParkedPerPublisher checks, on migrated tables holding event 1 of
// 0/10 parked and topic orders paused for Kafka, that a park and a pause
// are once per publisher, and that a park naming the identity of version
// 14 (a relay of version 19) is refused.
func checkParkedPerPublisher(ctx context.Context, t *testing.T, conn *pgx.Conn, status, pauses string) {
	t.Helper()
	park := "INSERT INTO " + status + " (event_id, topic, last_error, commit_lsn, source_table, status, publisher)" +
		" VALUES ('1', 'orders', 'x', '0/10', 'public.outbox', 'FAILED', $1)" +
		" ON CONFLICT (commit_lsn, event_id, topic, coalesce(source_table, ''), publisher) WHERE event_id IS NOT NULL DO NOTHING"
	pause := "INSERT INTO " + pauses + " (slot_name, topic, publisher) VALUES ('s', 'orders', $1) ON CONFLICT (slot_name, topic, publisher) DO NOTHING"
	for _, step := range []struct {
		sql, publisher string
		want           int64
	}{
		{park, "kafka", 0}, {park, "partner", 1}, {park, "partner", 0},
		{pause, "kafka", 0}, {pause, "partner", 1}, {pause, "partner", 0},
	} {
		tag, err := conn.Exec(ctx, step.sql, step.publisher)
		if err != nil || tag.RowsAffected() != step.want {
			t.Errorf("%s… for %s: %d rows, %v; want %d", step.sql[:40], step.publisher, tag.RowsAffected(), err, step.want)
		}
	}
	var pgErr *pgconn.PgError
	_, err := conn.Exec(ctx, "INSERT INTO "+status+" (event_id, topic, last_error, commit_lsn) VALUES ('1', 'orders', 'x', '0/30')"+
		" ON CONFLICT (commit_lsn, event_id, topic, coalesce(source_table, '')) WHERE event_id IS NOT NULL DO NOTHING")
	if !errors.As(err, &pgErr) || pgErr.Code != "42P10" {
		t.Errorf("the park of a relay of version 19 after migrate: %v, want SQLSTATE 42P10", err)
	}
}

// TestReplacedIndex: a statement marked replaced by an index's
// placeholder is skipped once that index is valid, and only then; an
// unknown placeholder is an error, and a statement without the mark
// always runs.
func TestReplacedIndex(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	cfg := DefaultConfig()
	names := placeholders(cfg)
	marked := "-- cdc-relay: replaced by index status_publisher_copy_index_qualified\nSELECT 1;\n"
	tests := []struct {
		name, stmt string
		migrated   bool // after Apply
		want       bool
		err        string
	}{
		{name: "no mark", stmt: "SELECT 1;\n"},
		{name: "an unknown placeholder", stmt: "-- cdc-relay: replaced by index nosuch\nSELECT 1;\n", err: "no such placeholder"},
		{name: "the index missing", stmt: marked},
		{name: "the index valid", stmt: marked, migrated: true, want: true},
	}
	for _, tt := range tests {
		if tt.migrated {
			if _, err := Apply(ctx, conn, cfg); err != nil {
				t.Fatal(err)
			}
		}
		got, err := replacedIndex(ctx, conn, tt.stmt, names)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: replaced %v, %v; want %v, an error with %q", tt.name, got, err, tt.want, tt.err)
		}
	}
}
