package migrations

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// pg is the package's PostgreSQL: each test migrates a database of its
// own on it.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// startPG connects to a new database of the test's own on the package's
// cluster. Its name (conn.Config().Database) is unique in the run: the
// test's replication slots and roles are named after it, since both are
// the cluster's.
func startPG(t *testing.T) *pgx.Conn {
	t.Helper()
	_, _, conn := pg.ConnectDB(t, 2*time.Minute)
	return conn
}

func TestApplyIsIdempotent(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	res, err := Apply(ctx, conn, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) == 0 || !res.CreatedPublication {
		t.Fatalf("first run: %+v", res)
	}
	res, err = Apply(ctx, conn, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != 0 || res.CreatedPublication || res.AddedToPublication {
		t.Fatalf("second run changed something: %+v", res)
	}
	var pubInsert, pubUpdate bool
	if err := conn.QueryRow(ctx, "SELECT pubinsert, pubupdate FROM pg_publication WHERE pubname = 'cdc_relay'").Scan(&pubInsert, &pubUpdate); err != nil {
		t.Fatal(err)
	}
	if !pubInsert || pubUpdate {
		t.Fatalf("publication publishes insert=%v update=%v; want inserts only", pubInsert, pubUpdate)
	}
	// The default outbox accepts the minimal insert of docs/DESIGN.md.
	if _, err := conn.Exec(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('a', 'b', 'c', '{}')`); err != nil {
		t.Fatal(err)
	}
}

func TestApplyMapsAnExistingTable(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	for _, sql := range []string{
		"CREATE SCHEMA app",
		"CREATE TABLE app.notification_outbox (id bigserial primary key, deal_id text, payload jsonb)",
		"CREATE PUBLICATION shared_pub FOR TABLE app.notification_outbox",
		"CREATE TABLE app.other (id int)",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.OutboxSchema, cfg.OutboxTable, cfg.SkipOutbox = "app", "notification_outbox", true
	cfg.Publication = "shared_pub"
	res, err := Apply(ctx, conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.CreatedPublication || res.AddedToPublication {
		t.Fatalf("publication already had the table: %+v", res)
	}
	// A publication without the table gets it added.
	if _, err := conn.Exec(ctx, "CREATE PUBLICATION other_pub FOR TABLE app.other"); err != nil {
		t.Fatal(err)
	}
	cfg.Publication = "other_pub"
	if res, err = Apply(ctx, conn, cfg); err != nil || !res.AddedToPublication {
		t.Fatalf("res %+v err %v; want the table added", res, err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_publication_tables WHERE pubname = 'other_pub'").Scan(&n); err != nil || n != 2 {
		t.Fatalf("other_pub has %d tables (err %v), want 2", n, err)
	}
	// SkipOutbox left the mapped table alone and created no default one.
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('public.outbox') IS NOT NULL").Scan(&exists); err != nil || exists {
		t.Fatalf("public.outbox exists=%v err %v", exists, err)
	}
}

func TestApplyReportsAMissingTable(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	cfg := DefaultConfig()
	cfg.OutboxTable, cfg.SkipOutbox = "orders_outbox", true
	_, err := Apply(context.Background(), conn, cfg)
	want := `outbox table "public"."orders_outbox" does not exist`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--skip-outbox") {
		t.Fatalf("error %v, want one saying %q and what to do", err, want)
	}
}

// TestCheck: the relay's start-up check names what is missing and what to
// run, step by step as migrate would create it.
func TestCheck(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	cfg := DefaultConfig()
	check := func(want string) {
		t.Helper()
		err := Check(ctx, conn, cfg)
		switch {
		case want == "" && err != nil:
			t.Fatalf("Check: %v, want nil", err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Fatalf("Check: %v, want an error containing %q", err, want)
		}
	}
	check(`outbox table "public"."outbox" does not exist`)
	if _, err := conn.Exec(ctx, "CREATE TABLE outbox (id uuid)"); err != nil {
		t.Fatal(err)
	}
	check("run `cdc-relay migrate` first")
	cfg.SkipOutbox = true
	if _, err := Apply(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	check("")
	// A relay newer than the tables: migrate has not run since the upgrade.
	if _, err := conn.Exec(ctx, "ALTER TABLE cdc_relay_checkpoint DROP COLUMN publication_marks"); err != nil {
		t.Fatal(err)
	}
	check("run `cdc-relay migrate`")
	if _, err := Apply(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	check("")
	// The pause table's publisher (migration 20) dropped, with its key.
	if _, err := conn.Exec(ctx, "ALTER TABLE cdc_relay_paused_topics DROP COLUMN publisher"); err != nil {
		t.Fatal(err)
	}
	check(`"public"."cdc_relay_paused_topics" lacks column "publisher" (migration 20)`)
	if _, err := Apply(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	check("")
	if _, err := conn.Exec(ctx, "ALTER PUBLICATION cdc_relay DROP TABLE outbox"); err != nil {
		t.Fatal(err)
	}
	check(`publication "cdc_relay" does not include "public"."outbox"`)
	if _, err := conn.Exec(ctx, "DROP PUBLICATION cdc_relay"); err != nil {
		t.Fatal(err)
	}
	check(`publication "cdc_relay" does not exist`)
}

// TestApplyConvergesOnTheNamedTables: a second relay's tables in the same
// schema are created though the history already lists every migration,
// and a dropped status table is created again.
func TestApplyConvergesOnTheNamedTables(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	first := DefaultConfig()
	second := DefaultConfig()
	second.StatusTable, second.CheckpointTable, second.Publication = "billing_delivery", "billing_checkpoint", "billing"
	for _, cfg := range []Config{first, second} {
		if _, err := Apply(ctx, conn, cfg); err != nil {
			t.Fatal(err)
		}
		if err := Check(ctx, conn, cfg); err != nil {
			t.Fatalf("after migrate with %s/%s: %v", cfg.StatusTable, cfg.CheckpointTable, err)
		}
	}
	if _, err := conn.Exec(ctx, "DROP TABLE outbox_delivery"); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, conn, first); err == nil || !strings.Contains(err.Error(), "run `cdc-relay migrate`") {
		t.Fatalf("Check with the status table dropped: %v", err)
	}
	if _, err := Apply(ctx, conn, first); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, conn, first); err != nil {
		t.Fatalf("migrate did not create the dropped status table again: %v", err)
	}
}

// TestPartitionedOutbox: a partitioned outbox table is published via its
// root, so its rows reach the relay under the table's name; migrate says
// how to fix a publication that publishes its partitions instead, and is
// idempotent on it.
func TestPartitionedOutbox(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE TABLE outbox (id uuid NOT NULL DEFAULT gen_random_uuid(), aggregate_type text NOT NULL, aggregate_id text NOT NULL,
			event_type text NOT NULL, topic text, payload jsonb NOT NULL, headers jsonb, created_at timestamptz NOT NULL DEFAULT now(),
			PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at)`,
		`CREATE TABLE outbox_2026_01 PARTITION OF outbox FOR VALUES FROM ('2026-01-01') TO ('2026-02-01')`,
		`CREATE TABLE outbox_default PARTITION OF outbox DEFAULT`,
		// A publication as an older migrate created it: the partitions are
		// published under their own names.
		`CREATE PUBLICATION old_pub FOR TABLE outbox WITH (publish = 'insert')`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.SkipOutbox = true
	for range 2 {
		res, err := Apply(ctx, conn, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.AddedToPublication {
			t.Fatalf("the publication was created with the table: %+v", res)
		}
		if err := Check(ctx, conn, cfg); err != nil {
			t.Fatalf("Check after migrate: %v", err)
		}
	}
	var viaRoot bool
	if err := conn.QueryRow(ctx, "SELECT pubviaroot FROM pg_publication WHERE pubname = 'cdc_relay'").Scan(&viaRoot); err != nil || !viaRoot {
		t.Fatalf("publish_via_partition_root = %v (err %v), want true", viaRoot, err)
	}

	cfg.Publication = "old_pub"
	want := `ALTER PUBLICATION "old_pub" SET (publish_via_partition_root = true)`
	if _, err := Apply(ctx, conn, cfg); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("migrate on a publication of the partitions: %v, want the fix %s", err, want)
	}
	if err := Check(ctx, conn, cfg); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Check on a publication of the partitions: %v, want the fix %s", err, want)
	}
	if _, err := conn.Exec(ctx, want); err != nil {
		t.Fatal(err)
	}
	if res, err := Apply(ctx, conn, cfg); err != nil || res.AddedToPublication || res.CreatedPublication {
		t.Fatalf("migrate after the fix: %+v, %v; want nothing to do", res, err)
	}
	if err := Check(ctx, conn, cfg); err != nil {
		t.Fatalf("Check after the fix: %v", err)
	}
}

// TestApplyDoesNotQueueBehindALongQuery: every migration takes its table's
// lock, so behind a long reader it would queue, and a running relay's
// writes would queue behind it. It gives up after lockTimeout instead.
func TestApplyDoesNotQueueBehindALongQuery(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := Apply(ctx, conn, DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	reader, err := pgx.Connect(ctx, conn.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close(ctx)
	tx, err := reader.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM outbox_delivery"); err != nil { // holds ACCESS SHARE until the end
		t.Fatal(err)
	}
	began := time.Now()
	_, err = Apply(ctx, conn, DefaultConfig())
	if err == nil || !strings.Contains(err.Error(), "run migrate again") {
		t.Fatalf("Apply behind a long reader: %v, want an error after the lock timeout", err)
	}
	if took := time.Since(began); took > 30*time.Second {
		t.Fatalf("Apply waited %s", took)
	}
}

// TestGrants: the printed SQL names the configured tables, quoted, and
// runs as is (twice: an existing role is altered, not created again).
func TestGrants(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.StatusSchema, cfg.StatusTable = "relay", "Delivery"
	if _, err := conn.Exec(ctx, "CREATE SCHEMA relay"); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	sql := Grants(cfg, "Relay Role", true)
	for _, want := range []string{`ALTER ROLE "Relay Role" WITH LOGIN REPLICATION`, `GRANT USAGE ON SCHEMA "relay" TO "Relay Role"`,
		`ON "relay"."Delivery" TO "Relay Role"`, `GRANT SELECT, DELETE ON "public"."outbox"`,
		"\nGRANT SELECT ON \"public\".\"cdc_relay_backfills\" TO \"Relay Role\";\n",
		"\n-- GRANT TEMPORARY ON DATABASE <database> TO \"Relay Role\";\n",
		"\n-- GRANT INSERT, UPDATE ON \"public\".\"cdc_relay_backfills\" TO \"Relay Role\";\n"} {
		if !strings.Contains(sql, want) {
			t.Errorf("grants lack %q:\n%s", want, sql)
		}
	}
	for range 2 {
		if _, err := conn.PgConn().Exec(ctx, sql).ReadAll(); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	var seq bool
	if err := conn.QueryRow(ctx, `SELECT has_sequence_privilege('Relay Role', pg_get_serial_sequence('"relay"."Delivery"', 'id'), 'USAGE')`).Scan(&seq); err != nil || !seq {
		t.Fatalf("the role may not use the status table's id sequence: %v %v", seq, err)
	}
}

// versionsAfter lists the embedded versions newer than version, in order.
func versionsAfter(t *testing.T, version int) []int {
	t.Helper()
	ms, err := versioned()
	if err != nil {
		t.Fatal(err)
	}
	var vs []int
	for _, m := range ms {
		if m.version > version {
			vs = append(vs, m.version)
		}
	}
	return vs
}

// applyUpTo prepares cfg's tables as the migrate of version did: the
// versioned migrations up to it, with their history rows.
func applyUpTo(ctx context.Context, t *testing.T, conn *pgx.Conn, cfg Config, version int) {
	t.Helper()
	ms, err := versioned()
	if err != nil {
		t.Fatal(err)
	}
	var old []migration
	for _, m := range ms {
		if m.version <= version {
			old = append(old, m)
		}
	}
	if _, err := applyVersioned(ctx, conn, old, placeholders(cfg), historyTable(cfg), builds{}); err != nil {
		t.Fatal(err)
	}
}

// TestSourceTableMigration: a status table of version 5 gains source_table,
// nullable text, and its rows keep NULL; the relay's check asks for
// migrate until then; migrate again changes nothing.
func TestSourceTableMigration(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TABLE outbox (id uuid)"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, schema, table string }{
		{"the default status table", "public", "outbox_delivery"},
		{"names to quote", "Relay Tables", "Delivery"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SkipOutbox = true
			cfg.StatusSchema, cfg.StatusTable, cfg.CheckpointSchema = tt.schema, tt.table, tt.schema
			status := pgx.Identifier{tt.schema, tt.table}.Sanitize()
			if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{tt.schema}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			applyUpTo(ctx, t, conn, cfg, 5)
			if _, err := conn.Exec(ctx, "INSERT INTO "+status+" (event_id, topic, last_error, commit_lsn) VALUES ('old', 'orders', 'MESSAGE_TOO_LARGE', '0/10')"); err != nil {
				t.Fatal(err)
			}
			if err := Check(ctx, conn, cfg); err == nil || !strings.Contains(err.Error(), `lacks column "reload" (migration 7)`) {
				t.Fatalf("Check of a version 5 status table: %v, want it to ask for migrate", err)
			}
			res, err := Apply(ctx, conn, cfg)
			if err != nil || !slices.Equal(res.Applied, versionsAfter(t, 5)) {
				t.Fatalf("migrate over version 5: %+v, %v; want versions %v applied", res, err, versionsAfter(t, 5))
			}
			column := func() (typ string, nullable bool, attnum int, oldRow *string) {
				t.Helper()
				err := conn.QueryRow(ctx, "SELECT format_type(atttypid, atttypmod), NOT attnotnull, attnum FROM pg_attribute"+
					" WHERE attrelid = $1::regclass AND attname = 'source_table' AND NOT attisdropped", status).Scan(&typ, &nullable, &attnum)
				if err != nil {
					t.Fatalf("source_table of %s: %v", status, err)
				}
				if err := conn.QueryRow(ctx, "SELECT source_table FROM "+status+" WHERE event_id = 'old'").Scan(&oldRow); err != nil {
					t.Fatal(err)
				}
				return typ, nullable, attnum, oldRow
			}
			typ, nullable, attnum, oldRow := column()
			if typ != "text" || !nullable || oldRow != nil {
				t.Fatalf("source_table is %s, nullable %v, the old row's %v; want nullable text, NULL", typ, nullable, oldRow)
			}
			if err := Check(ctx, conn, cfg); err != nil {
				t.Fatalf("Check after migrate: %v", err)
			}
			res, err = Apply(ctx, conn, cfg)
			if err != nil || len(res.Applied) != 0 {
				t.Fatalf("migrate again: %+v, %v; want nothing applied", res, err)
			}
			if typ2, nullable2, attnum2, oldRow2 := column(); typ2 != typ || nullable2 != nullable || attnum2 != attnum || oldRow2 != nil {
				t.Fatalf("migrate again changed source_table: %s %v %d %v", typ2, nullable2, attnum2, oldRow2)
			}
		})
	}
}

// checkOldDeadReleased fails t unless the DEAD row of status, parked
// before migration 10, has skipped_at = updated_at and its last_error, and
// no other row has skipped_at.
func checkOldDeadReleased(ctx context.Context, t *testing.T, conn *pgx.Conn, status string) {
	t.Helper()
	var marked, others int
	err := conn.QueryRow(ctx, "SELECT count(*) FILTER (WHERE status = 'DEAD' AND skipped_at = updated_at AND last_error = 'x'),"+
		" count(*) FILTER (WHERE status <> 'DEAD' AND skipped_at IS NOT NULL) FROM "+status).Scan(&marked, &others)
	if err != nil || marked != 1 || others != 0 {
		t.Fatalf("after the upgrade: %d old DEAD rows marked as not holding, %d other rows with skipped_at (%v); want 1 and 0", marked, others, err)
	}
}

// TestOrderMigration: a status table made by migrations 1 to 9, with rows
// in every state and a CHECK of the user's own on status, gains the states
// WAITING and PAUSED under a validated constraint of the relay's name (the
// inline one of 0001 is gone, the user's kept), skipped_at, the order index
// and the pause table; its DEAD rows no longer hold their keys (skipped_at
// is their updated_at, last_error kept); the relay's check asks for migrate
// until then; migrate again changes nothing, not a DEAD row parked since.
func TestOrderMigration(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TABLE outbox (id uuid)"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, schema, table string }{
		{"the default status table", "public", "outbox_delivery"},
		{"names to quote", "Relay's Tables", "Deli'very"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SkipOutbox = true
			cfg.StatusSchema, cfg.StatusTable, cfg.CheckpointSchema = tt.schema, tt.table, tt.schema
			status := pgx.Identifier{tt.schema, tt.table}.Sanitize()
			if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{tt.schema}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			applyUpTo(ctx, t, conn, cfg, 9)
			if _, err := conn.Exec(ctx, "ALTER TABLE "+status+" ADD CONSTRAINT users_own CHECK (length(status) < 20)"); err != nil {
				t.Fatal(err)
			}
			for _, state := range []string{"FAILED", "DELIVERED", "DEAD"} {
				if _, err := conn.Exec(ctx, "INSERT INTO "+status+" (event_id, topic, last_error, status) VALUES ($1, 'orders', 'x', $1)", state); err != nil {
					t.Fatal(err)
				}
			}
			if err := Check(ctx, conn, cfg); err == nil || !strings.Contains(err.Error(), `lacks column "skipped_at" (migration 10)`) {
				t.Fatalf("Check of a version 9 status table: %v, want it to ask for migrate", err)
			}
			for i := 0; i < 2; i++ {
				res, err := Apply(ctx, conn, cfg)
				if want := versionsAfter(t, 9); err != nil || i == 0 && !slices.Equal(res.Applied, want) || i == 1 && len(res.Applied) != 0 {
					t.Fatalf("migrate %d over version 9: %+v, %v; want versions %v applied the first time only", i+1, res, err, want)
				}
				var checks []string
				rows, _ := conn.Query(ctx, "SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'c'", status)
				checks, err = pgx.CollectRows(rows, pgx.RowTo[string])
				slices.Sort(checks)
				if err != nil || !slices.Equal(checks, []string{tt.table + "_state_check", "users_own"}) {
					t.Fatalf("checks of %s after migrate %d: %v, %v; want %s_state_check and users_own", status, i+1, checks, err, tt.table)
				}
				var valid bool
				if err := conn.QueryRow(ctx, "SELECT convalidated FROM pg_constraint WHERE conrelid = $1::regclass AND conname = $2",
					status, tt.table+"_state_check").Scan(&valid); err != nil || !valid {
					t.Fatalf("%s_state_check validated %v (%v) after migrate %d, want true", tt.table, valid, err, i+1)
				}
				if i == 0 {
					checkOldDeadReleased(ctx, t, conn, status)
					if _, err := conn.Exec(ctx, "INSERT INTO "+status+" (event_id, topic, last_error, status) VALUES ('DEAD since', 'orders', 'x', 'DEAD')"); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := Check(ctx, conn, cfg); err != nil {
				t.Fatalf("Check after migrate: %v", err)
			}
			for state, ok := range map[string]bool{"WAITING": true, "PAUSED": true, "BOGUS": false} {
				_, err := conn.Exec(ctx, "INSERT INTO "+status+" (event_id, topic, last_error, status) VALUES ($1, 'orders', 'x', $1)", state)
				if ok != (err == nil) {
					t.Errorf("insert a %s row: %v; want accepted %v", state, err, ok)
				}
			}
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+status+" WHERE skipped_at IS NULL").Scan(&n); err != nil || n != 5 {
				t.Fatalf("%d rows with skipped_at NULL (%v), want the 5 but the DEAD row parked before the upgrade", n, err)
			}
			if _, err := conn.Exec(ctx, "INSERT INTO "+PauseTableName(cfg)+" (slot_name, topic) VALUES ('s', 'orders')"); err != nil {
				t.Fatalf("pause table: %v", err)
			}
		})
	}
}

// TestOriginalTopicMigration: a status table of version 10 gains
// original_topic, nullable text, and its rows keep NULL; the relay's check
// asks for migrate until then; migrate again changes nothing.
func TestOriginalTopicMigration(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TABLE outbox (id uuid)"); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.SkipOutbox = true
	applyUpTo(ctx, t, conn, cfg, 10)
	if _, err := conn.Exec(ctx, "INSERT INTO outbox_delivery (event_id, topic, last_error, commit_lsn) VALUES ('old', 'bad topic!', 'illegal', '0/10')"); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, conn, cfg); err == nil || !strings.Contains(err.Error(), `lacks column "original_topic" (migration 11)`) {
		t.Fatalf("Check of a version 10 status table: %v, want it to ask for migrate", err)
	}
	for _, want := range [][]int{versionsAfter(t, 10), nil} {
		res, err := Apply(ctx, conn, cfg)
		if err != nil || !slices.Equal(res.Applied, want) {
			t.Fatalf("migrate: %+v, %v; want versions %v applied", res, err, want)
		}
		var (
			typ      string
			nullable bool
			oldRow   *string
		)
		if err := conn.QueryRow(ctx, "SELECT format_type(atttypid, atttypmod), NOT attnotnull FROM pg_attribute"+
			" WHERE attrelid = 'outbox_delivery'::regclass AND attname = 'original_topic' AND NOT attisdropped").Scan(&typ, &nullable); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, "SELECT original_topic FROM outbox_delivery WHERE event_id = 'old'").Scan(&oldRow); err != nil {
			t.Fatal(err)
		}
		if typ != "text" || !nullable || oldRow != nil {
			t.Fatalf("original_topic is %s, nullable %v, the old row's %v; want nullable text, NULL", typ, nullable, oldRow)
		}
		if err := Check(ctx, conn, cfg); err != nil {
			t.Fatalf("Check after migrate: %v", err)
		}
	}
}

// TestSourceCopyMigration: a status table of version 13, with a row
// parked before sources were recorded (source_table NULL) and one of a
// table, gets the index of a parked event's identity with its source
// (migration 14, and its publisher since 21) in place of the old one; the
// relay's check asks for migrate until then. After it, the park's ON
// CONFLICT recognises both old rows sent again, and takes the same id,
// commit and topic of another source. Migrate again changes nothing (the
// index is not built again, the old ones not created again). Also for
// names to quote, and for a status table whose name leaves no room for
// the suffixes.
func TestSourceCopyMigration(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TABLE outbox (id uuid)"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, schema, table string }{
		{"the default status table", "public", "outbox_delivery"},
		{"names to quote", "Relay's Tables", `Deli"very`},
		{"a long name", "long", strings.Repeat("d", 60)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SkipOutbox = true
			cfg.StatusSchema, cfg.StatusTable, cfg.CheckpointSchema = tt.schema, tt.table, tt.schema
			status := pgx.Identifier{tt.schema, tt.table}.Sanitize()
			if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{tt.schema}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			applyUpTo(ctx, t, conn, cfg, 13)
			if _, err := conn.Exec(ctx, "INSERT INTO "+status+" (event_id, topic, last_error, commit_lsn, source_table, status)"+
				" VALUES ('1', 'orders', 'x', '0/10', NULL, 'PAUSED'), ('1', 'orders', 'x', '0/20', 'public.outbox', 'PAUSED')"); err != nil {
				t.Fatal(err)
			}
			// The newer columns (migrations 15 and 20) added ahead, so that
			// Check finds the status table's index the one missing.
			for _, add := range []string{
				"ALTER TABLE " + pgx.Identifier{tt.schema, cfg.CheckpointTable}.Sanitize() + " ADD COLUMN publication_marks jsonb",
				"ALTER TABLE " + status + " ADD COLUMN publisher text NOT NULL DEFAULT 'kafka'",
				"ALTER TABLE " + PauseTableName(cfg) + " ADD COLUMN publisher text NOT NULL DEFAULT 'kafka'",
			} {
				if _, err := conn.Exec(ctx, add); err != nil {
					t.Fatal(err)
				}
			}
			if err := Check(ctx, conn, cfg); err == nil || !strings.Contains(err.Error(), "(migration 21") || !strings.Contains(err.Error(), "cdc-relay migrate") {
				t.Fatalf("Check of a version 13 status table: %v, want it to ask for migrate", err)
			}
			var firstOID uint32
			for i, want := range [][]int{versionsAfter(t, 13), nil} {
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
				if err := Check(ctx, conn, cfg); err != nil {
					t.Fatalf("Check after migrate %d: %v", i+1, err)
				}
			}
			park := "INSERT INTO " + status + " (event_id, topic, last_error, commit_lsn, source_table, status) VALUES ('1', 'orders', 'x', $1, $2, 'PAUSED')" +
				" ON CONFLICT (commit_lsn, event_id, topic, coalesce(source_table, ''), publisher) WHERE event_id IS NOT NULL DO NOTHING"
			for _, p := range []struct {
				lsn    string
				source any
				want   int64
			}{
				{"0/10", nil, 0}, {"0/20", "public.outbox", 0}, {"0/20", "app.outbox", 1}, {"0/10", "public.outbox", 1},
			} {
				tag, err := conn.Exec(ctx, park, p.lsn, p.source)
				if err != nil || tag.RowsAffected() != p.want {
					t.Errorf("park of id 1 at %s from %v: %v rows, %v; want %d", p.lsn, p.source, tag.RowsAffected(), err, p.want)
				}
			}
			// The park of a relay of an earlier version names the old index:
			// PostgreSQL refuses it (class 42, which stops that relay) rather
			// than dropping an event.
			var pgErr *pgconn.PgError
			_, err := conn.Exec(ctx, "INSERT INTO "+status+" (event_id, topic, last_error, commit_lsn) VALUES ('1', 'orders', 'x', '0/30')"+
				" ON CONFLICT (commit_lsn, event_id, topic) WHERE event_id IS NOT NULL DO NOTHING")
			if !errors.As(err, &pgErr) || pgErr.Code != "42P10" {
				t.Errorf("the park of an earlier version after migrate: %v, want SQLSTATE 42P10", err)
			}
		})
	}
}

// copyIndexes returns the oid of status's valid index name (0 when there
// is none), and how many unique indexes status has whose first columns
// are commit_lsn and event_id (the old copy index, the new one).
func copyIndexes(ctx context.Context, t *testing.T, conn *pgx.Conn, status, name string) (oid uint32, unique int) {
	t.Helper()
	err := conn.QueryRow(ctx, `SELECT coalesce(max(c.oid) FILTER (WHERE c.relname = $2 AND i.indisvalid), 0),
			count(*) FILTER (WHERE i.indisunique AND i.indkey[0] = a1.attnum AND i.indkey[1] = a2.attnum)
		FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid,
			pg_attribute AS a1, pg_attribute AS a2
		WHERE i.indrelid = $1::regclass AND a1.attrelid = i.indrelid AND a1.attname = 'commit_lsn'
			AND a2.attrelid = i.indrelid AND a2.attname = 'event_id'`, status, name).Scan(&oid, &unique)
	if err != nil {
		t.Fatal(err)
	}
	return oid, unique
}

// TestSoloIndexesRebuiltWhenInvalid: the status table's claim indexes are
// built concurrently, outside a transaction; one that an interrupted build
// left invalid is dropped and built again by the next Apply, and a valid
// one is kept. Also for a status table whose name leaves no room for the
// indexes' suffixes in PostgreSQL's 63 bytes.
func TestSoloIndexesRebuiltWhenInvalid(t *testing.T) {
	t.Parallel()
	for _, table := range []string{
		`Delivery "Q"`, // a name the statements must quote
		strings.Repeat("d", 60),
	} {
		t.Run(table, func(t *testing.T) { testSoloIndexesRebuilt(t, table) })
	}
}

func testSoloIndexesRebuilt(t *testing.T, table string) {
	conn := startPG(t)
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.StatusTable = table
	if _, err := Apply(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	solo, keyed := indexName(cfg.StatusTable, "_solo_idx"), indexName(cfg.StatusTable, "_keyed_idx")
	indexes := func() map[string]string { // name: oid, and whether valid
		rows, _ := conn.Query(ctx, `SELECT c.relname, c.oid::text || ' ' || i.indisvalid FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
			WHERE i.indrelid = to_regclass($1) AND c.relname IN ($2, $3)`,
			pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize(), solo, keyed)
		m, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kv [2]string, err error) { return kv, r.Scan(&kv[0], &kv[1]) })
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, kv := range m {
			out[kv[0]] = kv[1]
		}
		return out
	}
	before := indexes()
	if len(before) != 2 || !strings.HasSuffix(before[solo], " true") || !strings.HasSuffix(before[keyed], " true") {
		t.Fatalf("indexes after the first Apply: %v, want both valid", before)
	}
	// What an interrupted CREATE INDEX CONCURRENTLY leaves.
	if _, err := conn.Exec(ctx, "UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass($1)",
		pgx.Identifier{cfg.StatusSchema, solo}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	after := indexes()
	if !strings.HasSuffix(after[solo], " true") || after[solo] == before[solo] || after[keyed] != before[keyed] {
		t.Errorf("indexes after an Apply over an invalid one: %v (before %v), want the invalid one built again, the valid one kept", after, before)
	}
}

// TestIndexName: a name that fits is the table's name and the suffix, as
// PostgreSQL keeps it; a longer one fits 63 bytes, keeps its suffix, and
// differs by suffix and by table.
func TestIndexName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("d", 60)
	tests := []struct {
		table, suffix, want string
	}{
		{"outbox_delivery", "_solo_idx", "outbox_delivery_solo_idx"},
		{strings.Repeat("d", 54), "_solo_idx", strings.Repeat("d", 54) + "_solo_idx"},
		{long, "_solo_idx", ""},
		{long, "_keyed_idx", ""},
		{strings.Repeat("é", 30), "_keyed_idx", ""},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		got := indexName(tt.table, tt.suffix)
		if tt.want != "" && got != tt.want {
			t.Errorf("indexName(%q, %q) = %q, want %q", tt.table, tt.suffix, got, tt.want)
		}
		if len(got) > maxIdentifier || !strings.HasSuffix(got, tt.suffix) || !utf8.ValidString(got) || seen[got] {
			t.Errorf("indexName(%q, %q) = %q (%d bytes): want at most %d bytes, valid UTF-8, ending %q, unlike the others", tt.table, tt.suffix, got, len(got), maxIdentifier, tt.suffix)
		}
		seen[got] = true
	}
	if indexName(long, "_solo_idx") == indexName(long[:59]+"e", "_solo_idx") {
		t.Error("two long tables whose names differ past the cut have one index name")
	}
}

// TestClaimIndexesBuiltBesideWrites: the claim indexes' build waits for a
// transaction older than it, on any table, past the 5 s lock timeout of
// the other migrations, and the status table takes writes meanwhile; the
// indexes are valid once the transaction ends.
func TestClaimIndexesBuiltBesideWrites(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	cfg := DefaultConfig()
	applyUpTo(ctx, t, conn, cfg, 11) // before the claim indexes
	other, writer := connectAgain(t, conn), connectAgain(t, conn)
	tx, err := other.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM pg_class"); err != nil { // holds its snapshot until the end
		t.Fatal(err)
	}
	applied := make(chan error, 1)
	go func() {
		_, err := Apply(ctx, conn, cfg)
		applied <- err
	}()
	waitForBuild(ctx, t, writer)
	time.Sleep(6 * time.Second) // the build waits past the 5 s lock timeout: the transaction stays open this long on purpose
	writeCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := writer.Exec(writeCtx, `INSERT INTO outbox_delivery (event_id, topic, record_value, last_error, status) VALUES ('e', 't', '{}', 'x', 'FAILED')`); err != nil {
		t.Errorf("a write to the status table during the build: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-applied; err != nil {
		t.Fatalf("Apply beside a transaction open for 6 s: %v", err)
	}
	var valid int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_index WHERE indisvalid AND indexrelid IN
		('outbox_delivery_solo_idx'::regclass, 'outbox_delivery_keyed_idx'::regclass)`).Scan(&valid); err != nil || valid != 2 {
		t.Fatalf("%d valid claim indexes (%v), want 2", valid, err)
	}
}

// connectAgain is another connection to conn's database, closed when the
// test ends.
func connectAgain(t *testing.T, conn *pgx.Conn) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), conn.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// waitForBuild waits until a CREATE INDEX CONCURRENTLY waits for a lock
// (an older transaction), as q sees the server's sessions.
func waitForBuild(ctx context.Context, t *testing.T, q *pgx.Conn) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var waiting bool
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%CREATE INDEX CONCURRENTLY%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no CREATE INDEX CONCURRENTLY waited for the older transaction within 30 s")
		}
	}
}

// TestClaimIndexesBuiltUnderAStatementTimeout: a database whose
// statement_timeout (300 ms) is shorter than the claim indexes' build (it
// waits 1 s for an older transaction) still gets them, valid: the build
// runs without the timeout, says beforehand that it may take minutes, and
// the session has its timeout back afterwards.
func TestClaimIndexesBuiltUnderAStatementTimeout(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	cfg := DefaultConfig()
	applyUpTo(ctx, t, conn, cfg, 11) // before the claim indexes
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{conn.Config().Database}.Sanitize()+" SET statement_timeout = '300ms'"); err != nil {
		t.Fatal(err)
	}
	mig, other := connectAgain(t, conn), connectAgain(t, conn)
	tx, err := other.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM pg_class"); err != nil { // holds its snapshot until the end
		t.Fatal(err)
	}
	var notices []string
	cfg.Notice = func(line string) { notices = append(notices, line) }
	cfg.NoticeFrom = 1 // the table is small: announced all the same
	applied := make(chan error, 1)
	go func() {
		_, err := Apply(ctx, mig, cfg)
		applied <- err
	}()
	waitForBuild(ctx, t, conn)
	time.Sleep(time.Second) // the build waits past the 300 ms timeout: the transaction stays open this long on purpose
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-applied; err != nil {
		t.Fatalf("Apply under a 300 ms statement_timeout: %v", err)
	}
	var valid int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_index WHERE indisvalid AND indexrelid IN
		('outbox_delivery_solo_idx'::regclass, 'outbox_delivery_keyed_idx'::regclass)`).Scan(&valid); err != nil || valid != 2 {
		t.Fatalf("%d valid claim indexes (%v), want 2", valid, err)
	}
	if len(notices) != 5 || !strings.Contains(notices[0], "outbox_delivery_solo_idx") || !strings.Contains(notices[0], "may take minutes") ||
		!strings.Contains(notices[2], "outbox_delivery_copy_source_idx") || !strings.Contains(notices[3], "outbox_delivery_dead_idx") ||
		!strings.Contains(notices[4], "outbox_delivery_copy_publisher_idx") {
		t.Errorf("notices %q, want one per index build, saying it may take minutes", notices)
	}
	var timeout string
	if err := mig.QueryRow(ctx, "SHOW statement_timeout").Scan(&timeout); err != nil || timeout != "300ms" {
		t.Errorf("statement_timeout after Apply: %q (%v), want the database's 300ms back", timeout, err)
	}
}

// TestMigrationLockHolderNamed: a session holding the migration lock (a
// migrate stopped while its statement goes on) makes Apply give up after
// the lock timeout, naming that session and how to end it.
func TestMigrationLockHolderNamed(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	holder := connectAgain(t, conn)
	if _, err := holder.Exec(ctx, "SET application_name = 'stopped migrate'"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(lockKey)); err != nil {
		t.Fatal(err)
	}
	pid := holder.PgConn().PID()
	_, err := Apply(ctx, conn, DefaultConfig())
	for _, want := range []string{fmt.Sprintf("pid %d,", pid), "'stopped migrate'", "state idle", "pg_terminate_backend(pid)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Apply while another session holds the migration lock: %v, want it to say %q", err, want)
		}
	}
}

// TestApplyGivesTheSessionItsLockTimeoutBack: Apply bounds its own lock
// waits, then leaves the session's lock_timeout as it was, whether it
// took the migration lock or not: migrate creates the slot next on the
// same session, which waits for the transactions running then and must
// not be cut at the migrations' few seconds (it failed so in CI under
// parallel tests, with lock_timeout's SQLSTATE 55P03).
func TestApplyGivesTheSessionItsLockTimeoutBack(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "SET lock_timeout = '42s'"); err != nil {
		t.Fatal(err)
	}
	lockTimeout := func() string {
		var v string
		if err := conn.QueryRow(ctx, "SHOW lock_timeout").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if _, err := Apply(ctx, conn, DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if got := lockTimeout(); got != "42s" {
		t.Errorf("lock_timeout after Apply = %s, want the session's 42s", got)
	}
	holder := connectAgain(t, conn)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(lockKey)); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, conn, DefaultConfig()); err == nil {
		t.Fatal("Apply took the migration lock another session holds")
	}
	if got := lockTimeout(); got != "42s" {
		t.Errorf("lock_timeout after Apply refused the migration lock = %s, want the session's 42s", got)
	}
}
