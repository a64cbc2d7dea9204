package migrations

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
)

func startPG(t *testing.T) *pgx.Conn {
	t.Helper()
	pg := pgtemp.StartT(t, pgtemp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestApplyIsIdempotent(t *testing.T) {
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
	if _, err := conn.Exec(ctx, "ALTER TABLE cdc_relay_checkpoint DROP COLUMN write_ahead"); err != nil {
		t.Fatal(err)
	}
	check("run `cdc-relay migrate`")
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
