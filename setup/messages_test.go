package setup

import (
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// TestMigrateMessagesOnly: a config of messages and no table gets the
// relay's tables, a publication of no table, no outbox table, the slot,
// and cdc_relay.emit writing the first message source's prefix; a second
// run changes nothing but the helper, which it leaves in place; a run with
// another first prefix replaces it.
func TestMigrateMessagesOnly(t *testing.T) {
	t.Parallel()
	ctx, db, conn := pg.ConnectDB(t, 2*time.Minute)
	url := db.URL()
	rc := defaultConfig()
	rc.Slot = db.Name // slots are the cluster's
	rc.Tables = nil
	rc.Messages = []decoder.MessageMapping{{Prefix: "outbox"}, {Prefix: "audit", Topic: "audit", PayloadOnly: true}}

	res, err := Migrate(ctx, url, rc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) == 0 || res.CreatedOutbox || !res.CreatedPublication || len(res.Published) != 0 || !res.Slot.Created || res.SlotErr != nil || res.Emit != "outbox" {
		t.Errorf("first run: %+v", res)
	}
	res, err = Migrate(ctx, url, rc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != 0 || res.CreatedPublication || res.Slot.Created || res.Emit != "outbox" {
		t.Errorf("second run: %+v", res)
	}
	var outboxes int
	var body string
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM pg_tables WHERE tablename = 'outbox'), prosrc FROM pg_proc WHERE oid = 'cdc_relay.emit(text, text, jsonb, jsonb, text)'::regprocedure").
		Scan(&outboxes, &body); err != nil {
		t.Fatal(err)
	}
	if outboxes != 0 || !strings.Contains(body, "pg_catalog.pg_logical_emit_message(true, 'outbox', ") {
		t.Errorf("outbox tables %d; emit's body:\n%s", outboxes, body)
	}
	// emit writes envelopes: for the first envelope source, past a
	// payload-only one, and for none when every source is payload-only.
	rc.Messages = []decoder.MessageMapping{rc.Messages[1], {Prefix: "events"}}
	if res, err = Migrate(ctx, url, rc, Options{NoSlot: true}); err != nil || res.Emit != "events" {
		t.Fatalf("with another prefix: %+v, %v", res, err)
	}
	if err := conn.QueryRow(ctx, "SELECT prosrc FROM pg_proc WHERE oid = 'cdc_relay.emit(text, text, jsonb, jsonb, text)'::regprocedure").Scan(&body); err != nil ||
		!strings.Contains(body, "'events'") {
		t.Errorf("emit's body after the prefix changed (%v):\n%s", err, body)
	}
	rc.Messages = rc.Messages[:1]
	if res, err = Migrate(ctx, url, rc, Options{NoSlot: true}); err != nil || res.Emit != "" {
		t.Fatalf("with payload-only messages alone: %+v, %v", res, err)
	}
}

// TestGrantsForMessages: with messages and no table, the SQL grants the
// relay's tables and no outbox table, says the relay's role needs nothing
// more for messages, and gives the application's grant commented out;
// with tables and no messages it says nothing of messages.
func TestGrantsForMessages(t *testing.T) {
	t.Parallel()
	rc := defaultConfig()
	plain := Grants(rc, "relay")
	rc.Tables = nil
	rc.Messages = []decoder.MessageMapping{{Prefix: "outbox"}}
	sql := Grants(rc, "relay")
	for _, w := range []string{`ON "public"."outbox_delivery" TO "relay";`, `-- Messages: "relay" needs nothing more for them`,
		"-- GRANT USAGE ON SCHEMA cdc_relay TO <application role>;\n"} {
		if !strings.Contains(sql, w) {
			t.Errorf("the SQL lacks %q:\n%s", w, sql)
		}
	}
	if strings.Contains(sql, `"public"."outbox" `) {
		t.Errorf("the SQL grants on an outbox table:\n%s", sql)
	}
	if strings.Contains(plain, "Messages") {
		t.Errorf("the SQL for tables only mentions messages:\n%s", plain)
	}
}
