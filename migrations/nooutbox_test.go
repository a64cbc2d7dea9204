package migrations

import (
	"context"
	"strings"
	"testing"
)

// messagesOnly is the relay's tables and publication with no outbox table.
func messagesOnly() Config {
	cfg := DefaultConfig()
	cfg.OutboxSchema, cfg.OutboxTable = "", ""
	return cfg
}

// TestApplyWithNoOutbox: with no outbox table named, Apply creates the
// relay's own tables and a publication of no table, and no outbox table;
// Check passes; a second Apply changes nothing. Check says what to run
// when the publication or the relay's tables are missing.
func TestApplyWithNoOutbox(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	cfg := messagesOnly()
	if err := Check(ctx, conn, cfg); err == nil || !strings.Contains(err.Error(), "run `cdc-relay migrate` first") {
		t.Errorf("Check before Apply: %v; want the relay's tables missing", err)
	}
	res, err := Apply(ctx, conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) == 0 || !res.CreatedPublication || res.CreatedOutbox || res.AddedToPublication {
		t.Fatalf("first run: %+v", res)
	}
	var outbox, relayTables, published int
	var pubInsert, pubUpdate bool
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_tables WHERE tablename = 'outbox'),
		(SELECT count(*) FROM pg_tables WHERE tablename IN ('outbox_delivery', 'cdc_relay_checkpoint', 'cdc_relay_paused_topics', 'cdc_relay_backfills')),
		(SELECT count(*) FROM pg_publication_tables WHERE pubname = 'cdc_relay'), pubinsert, pubupdate
		FROM pg_publication WHERE pubname = 'cdc_relay'`).Scan(&outbox, &relayTables, &published, &pubInsert, &pubUpdate)
	if err != nil {
		t.Fatal(err)
	}
	if outbox != 0 || relayTables != 4 || published != 0 || !pubInsert || pubUpdate {
		t.Errorf("outbox tables %d, relay tables %d, published tables %d, insert %v update %v; want 0, 4, 0, inserts only",
			outbox, relayTables, published, pubInsert, pubUpdate)
	}
	if err := Check(ctx, conn, cfg); err != nil {
		t.Errorf("Check after Apply: %v", err)
	}
	if res, err = Apply(ctx, conn, cfg); err != nil || len(res.Applied) != 0 || res.CreatedPublication || res.CreatedOutbox {
		t.Errorf("second run: %+v, %v; want nothing changed", res, err)
	}
	if _, err := conn.Exec(ctx, "DROP PUBLICATION cdc_relay"); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, conn, cfg); err == nil || !strings.Contains(err.Error(), `publication "cdc_relay" does not exist`) {
		t.Errorf("Check without the publication: %v", err)
	}
}

// TestApplyWithNoOutboxKeepsAPublication: a publication that exists,
// with tables, is left as it is.
func TestApplyWithNoOutboxKeepsAPublication(t *testing.T) {
	t.Parallel()
	conn := startPG(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TABLE app_events (id int PRIMARY KEY); CREATE PUBLICATION cdc_relay FOR TABLE app_events"); err != nil {
		t.Fatal(err)
	}
	res, err := Apply(ctx, conn, messagesOnly())
	if err != nil || res.CreatedPublication || res.AddedToPublication {
		t.Fatalf("res %+v, err %v; want the publication left alone", res, err)
	}
	var published int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_publication_tables WHERE pubname = 'cdc_relay'").Scan(&published); err != nil || published != 1 {
		t.Errorf("published tables %d (%v); want app_events still", published, err)
	}
	if err := Check(ctx, conn, messagesOnly()); err != nil {
		t.Error(err)
	}
}

// TestGrantsWithNoOutbox: with no outbox table, the grants name the
// relay's tables and no outbox table or its schema twice.
func TestGrantsWithNoOutbox(t *testing.T) {
	t.Parallel()
	sql := Grants(messagesOnly(), "relay", true)
	for _, w := range []string{`GRANT USAGE ON SCHEMA "public" TO "relay";`, `ON "public"."outbox_delivery" TO "relay";`, "ALTER ROLE \"relay\" WITH LOGIN REPLICATION;"} {
		if !strings.Contains(sql, w) {
			t.Errorf("the SQL lacks %q:\n%s", w, sql)
		}
	}
	for _, a := range []string{`"public"."outbox" `, `"".""`, "The outbox", "DELETE for retention"} {
		if strings.Contains(sql, a) {
			t.Errorf("the SQL has %q:\n%s", a, sql)
		}
	}
	if n := strings.Count(sql, "GRANT USAGE ON SCHEMA"); n != 1 {
		t.Errorf("%d USAGE grants; want 1:\n%s", n, sql)
	}
}
