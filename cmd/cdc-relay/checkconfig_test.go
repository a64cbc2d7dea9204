package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/preflight"
	"github.com/cdc-relay/cdc-relay/relay"
)

// checkConfigSchema is the database of TestCheckConfig: two outbox tables
// in the publication, with rows; one with a timestamp column of type text;
// one not in the publication; for write-back, a table whose CHECK takes
// some status values, one whose trigger refuses one, and an empty one; a
// physical slot.
var checkConfigSchema = []string{
	`CREATE TYPE delivery_status AS ENUM ('PENDING', 'DELIVERED', 'FAILED')`,
	`CREATE TABLE notification_outbox (
		id bigserial PRIMARY KEY,
		deal_id text,
		payload jsonb NOT NULL,
		template text NOT NULL,
		recipient_id bigint,
		created_at timestamptz NOT NULL DEFAULT now(),
		status delivery_status NOT NULL DEFAULT 'PENDING',
		processed_at timestamptz,
		error varchar(500))`,
	`INSERT INTO notification_outbox (deal_id, payload, template, recipient_id, created_at)
		VALUES ('deal-1', '{"n": 1}', 'reminder', 6, '2025-01-02 03:04:05+00'),
		       ('deal-2', '{"n": 2}', 'welcome', 7, '2025-01-02 03:04:06.5+00'),
		       ('deal-3', '{"n": 3}', 'old', 8, '2024-12-31 00:00:00+00')`,
	`CREATE TABLE events (position bigserial PRIMARY KEY, data bytea NOT NULL, tags text[] NOT NULL)`,
	`INSERT INTO events (data, tags) VALUES ('\x0a0b', '{old}'), ('\x0001ff', '{wallet_id=w-1,payment_id=p-1}')`,
	`CREATE TABLE slim_progress (topic text, publisher text, last_position bigint NOT NULL DEFAULT 0, status text NOT NULL DEFAULT 'ACTIVE', PRIMARY KEY (topic, publisher))`,
	`CREATE TABLE texty (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), body text, created_at text)`,
	`CREATE TABLE audit (id uuid, body text)`,
	`CREATE TABLE plain (body text, kind text)`,
	`INSERT INTO plain VALUES ('first', 'a'), ('hello', NULL)`,
	`CREATE TABLE checked_outbox (id bigserial PRIMARY KEY, payload text NOT NULL,
		status varchar(20) NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SENT', 'FAILED')), sent_at timestamptz)`,
	`INSERT INTO checked_outbox (payload) VALUES ('a'), ('b')`,
	`CREATE TABLE guarded_outbox (id bigserial PRIMARY KEY, payload text NOT NULL, status text NOT NULL DEFAULT 'PENDING', retries int NOT NULL DEFAULT 0)`,
	`CREATE FUNCTION never_failed() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.status = 'FAILED' THEN RAISE EXCEPTION 'outbox rows are retried, never FAILED' USING ERRCODE = 'RR001'; END IF;
			RETURN NEW;
		END$$`,
	`CREATE TRIGGER never_failed BEFORE UPDATE ON guarded_outbox FOR EACH ROW EXECUTE FUNCTION never_failed()`,
	`INSERT INTO guarded_outbox (payload) VALUES ('a')`,
	`CREATE TABLE empty_outbox (id bigserial PRIMARY KEY, payload text NOT NULL, status text NOT NULL DEFAULT 'PENDING')`,
	`CREATE PUBLICATION cdc_relay FOR TABLE notification_outbox, events, texty, plain, checked_outbox, guarded_outbox, empty_outbox WITH (publish = 'insert')`,
	`SELECT pg_create_physical_replication_slot('physical_slot')`,
	`CREATE ROLE checker LOGIN`,
}

const (
	goodNotifications = `
  - table: public.notification_outbox
    id: id
    key: deal_id
    value: payload
    topic: "notifications.{template}"
    headers: {template: template, recipient: recipient_id}
    timestamp: created_at
    write_back: {status_column: status, delivered: DELIVERED, failed: FAILED, delivered_at_column: processed_at, error_column: error}
`
	goodEvents = `
  - table: events
    id: position
    value: data
    tags_column: tags
    routes:
      - {topic: wallet-events, required_tags: [wallet_id]}
      - {topic: payment-events, any_of_tags: [payment_id, transfer_id]}
`
)

func TestCheckConfig(t *testing.T) {
	ctx, url, conn := startDB(t, checkConfigSchema...)
	dir := t.TempDir()
	before := writeBackTables(ctx, t, conn)

	tests := []struct {
		name   string
		yaml   string   // the config file; "" for none
		args   []string // after check-config --config FILE (if yaml is set)
		code   int
		stdout []string // each must be in stdout, in this order
		stderr []string // each must be in stderr
		absent []string // in neither
	}{
		{name: "a good config, its URL in the file", yaml: "postgres_url: " + url + "\ntables:" + goodNotifications + goodEvents, code: 0,
			stdout: []string{
				"relay.yaml: 2 tables, slot cdc_relay, publication cdc_relay\n",
				"\npublic.notification_outbox: ok\n",
				"  ordering: key (the default): a parked event holds the later events of its topic and record key; events without a key are never held\n",
				"  what each row says (write_back):\n",
				"    delivered (Kafka has the event): status = 'DELIVERED'",
				"    refused, to be tried again (until run --max-attempts gives up): status = 'FAILED'",
				"    given up on (the last attempt, a row that cannot become a record, failed purge or skip): status = 'FAILED'",
				`  write_back values the table takes (tried on one row, rolled back): delivered "DELIVERED", failed "FAILED"` + "\n",
				"  sample record, from the newest row (by created_at):\n",
				"    topic      notifications.welcome\n",
				"    key        deal-2\n",
				"    value      {\"n\": 2}\n",
				"    headers    id: 2\n",
				"               template: welcome\n",
				"               recipient: 7\n",
				"    timestamp  2025-01-02T03:04:06.5Z\n",
				"\npublic.events: ok\n",
				"  sample record, from the newest row (by position):\n",
				"    topics     wallet-events, payment-events (one copy each, by its tags)\n",
				"    tags       {wallet_id=w-1,payment_id=p-1}\n",
				"wallet-events when the tags have all of [wallet_id]\n",
				"payment-events when the tags have any of [payment_id, transfer_id]\n",
				"    key        (none: no key column",
				"    value      hex 0001ff (3 bytes, not UTF-8)\n",
				"    headers    id: 2\n",
				"    timestamp  (none: the producer stamps the record)\n",
				"\nno problems in ",
			},
			absent: []string{"1 problem", "problems\n", "would be parked"}},
		{name: "a progress table: what it says, the columns it lacks",
			yaml: "tables:" + goodEvents + "    progress: {table: slim_progress, publisher: KafkaPublisher}\n",
			args: []string{"--postgres-url", url}, code: 0,
			stdout: []string{
				"\npublic.events: ok\n",
				"  what public.slim_progress says (progress, publisher KafkaPublisher):\n",
				"    last_position: the highest position up to which every event of the topic is delivered",
				"    status PAUSED or FAILED: the topic is paused for publisher KafkaPublisher; any other value: it flows",
				"    not written, the table has no such column: error_count (progress.error_count_column), last_error (progress.last_error_column)",
			}},
		{name: "a progress table that is missing",
			yaml: "tables:" + goodEvents + "    progress: {table: missing_progress, publisher: KafkaPublisher}\n",
			args: []string{"--postgres-url", url}, code: 1,
			stdout: []string{
				"\npublic.events: 1 problem\n",
				"  public.events: progress table public.missing_progress does not exist: create it",
			}},
		{name: "two routes naming one topic: a warning, not a problem",
			yaml: "tables:" + goodEvents + "      - {topic: wallet-events, any_of_tags: [transfer_id]}\n",
			args: []string{"--postgres-url", url}, code: 0,
			stdout: []string{
				"relay.yaml: 1 table, slot cdc_relay, publication cdc_relay\n",
				`relay.yaml:9: tables[0] (public.events): routes[2]: topic "wallet-events" is routes[0]'s too: an event that matches both is sent to it once` + "\n",
				"\npublic.events: ok\n",
				"\nno problems in ",
			},
			absent: []string{"problem\n", "problems\n"}},
		{name: "a missing column", yaml: "tables:" + strings.Replace(goodNotifications, "timestamp: created_at", "timestamp: created", 1),
			args: []string{"--postgres-url", url}, code: 1,
			stdout: []string{
				"public.notification_outbox: 1 problem\n",
				`  public.notification_outbox: has no column "created" (timestamp): fix timestamp, or add the column` + "\n",
			},
			stderr: []string{"cdc-relay check-config: 1 problem in "},
			absent: []string{"sample record"}},
		{name: "a missing header column, a missing template input", yaml: "tables:" +
			strings.NewReplacer("recipient: recipient_id", "recipient: recipient", "{template}", "{kind}").Replace(goodNotifications),
			args: []string{"--postgres-url", url}, code: 1,
			stdout: []string{
				"public.notification_outbox: 2 problems\n",
				`has no column "kind" (topic): fix the template in topic, or add the column`,
				`has no column "recipient" (headers.recipient): fix the column of header "recipient" under headers, or add the column`,
			}},
		{name: "a timestamp column of type text, an empty table not in the publication", yaml: `
tables:
  - {table: texty, id: id, value: body, topic: texts, timestamp: created_at}
  - {table: public.audit, value: body, topic: audit}
`, args: []string{"--postgres-url", url}, code: 1,
			stdout: []string{
				"public.texty: 1 problem\n",
				`  public.texty: column "created_at" (timestamp) has type text; want timestamptz, timestamp or bigint (epoch milliseconds): change the column's type, or name another column in timestamp` + "\n",
				"public.audit: 1 problem\n",
				`  public.audit: publication "cdc_relay" does not include the table: ALTER PUBLICATION "cdc_relay" ADD TABLE "public"."audit"` + "\n",
				"  no rows yet: no sample\n",
			},
			stderr: []string{"2 problems in "}},
		{name: "types and values of write-back, tags and headers", yaml: `
tables:
  - table: notification_outbox
    id: id
    value: payload
    topic: x
    headers_column: template
    write_back: {status_column: status, delivered: SENT, failed: FAILED, delivered_at_column: deal_id, error_column: recipient_id}
  - table: events
    value: data
    tags_column: data
    routes: [{topic: t, any_of_tags: [a]}]
`, args: []string{"--postgres-url", url}, code: 1,
			stdout: []string{
				"public.notification_outbox: 4 problems\n",
				`column "template" (headers_column) has type text; want json or jsonb (an object)`,
				`column "deal_id" (write_back.delivered_at_column) has type text; want timestamptz or timestamp`,
				`column "recipient_id" (write_back.error_column) has type bigint; want text, varchar, char or an enum`,
				`write_back.delivered "SENT" is not a value of the column's enum type delivery_status (PENDING, DELIVERED, FAILED): change write_back.delivered, or the column`,
				"public.events: 1 problem\n",
				`column "data" (tags_column) has type bytea; want text[], varchar[], json or jsonb`,
			}},
		{name: "a CHECK refuses the delivered and the dead value, not the next", yaml: `
tables:
  - table: checked_outbox
    id: id
    value: payload
    topic: checked
    write_back: {status_column: status, delivered: DELIVERED, failed: FAILED, dead: DEAD, pending: [PENDING], delivered_at_column: sent_at}
`, args: []string{"--postgres-url", url}, code: 1,
			stdout: []string{
				"public.checked_outbox: 3 problems\n",
				"  public.checked_outbox: has pending values but no reset trigger: run `cdc-relay migrate --config " + filepath.Join(dir, "relay.yaml") + "` as the table's owner",
				`  public.checked_outbox: the table refuses write_back.delivered "DELIVERED" (tried on one row, rolled back): ERROR: new row for relation "checked_outbox" violates check constraint "checked_outbox_status_check" (SQLSTATE 23514): change write_back.delivered, or the table's constraint or trigger` + "\n",
				`  public.checked_outbox: the table refuses write_back.dead "DEAD" (tried on one row, rolled back): ERROR: new row for relation "checked_outbox" violates check constraint "checked_outbox_status_check" (SQLSTATE 23514): change write_back.dead, or the table's constraint or trigger` + "\n",
				`  write_back values the table takes (tried on one row, rolled back): failed "FAILED"` + "\n",
				"  sample record, from the newest row (by id):\n",
			},
			stderr: []string{"3 problems in "}},
		{name: "a trigger refuses the failed value", yaml: `
tables:
  - {table: guarded_outbox, id: id, value: payload, topic: guarded,
     write_back: {status_column: status, delivered: SENT, failed: FAILED, attempts_column: retries}}
`, args: []string{"--postgres-url", url}, code: 1,
			stdout: []string{
				"public.guarded_outbox: 1 problem\n",
				`  public.guarded_outbox: the table refuses write_back.failed "FAILED" (tried on one row, rolled back): ERROR: outbox rows are retried, never FAILED (SQLSTATE RR001): change write_back.failed, or the table's constraint or trigger` + "\n",
				`  write_back values the table takes (tried on one row, rolled back): delivered "SENT"` + "\n",
			}},
		{name: "an empty table's values are not tried", yaml: `
tables:
  - {table: empty_outbox, id: id, value: payload, topic: empty, write_back: {status_column: status, delivered: SENT, failed: FAILED}}
`, args: []string{"--postgres-url", url}, code: 0,
			stdout: []string{
				"public.empty_outbox: ok\n",
				"  write_back values not tried against the table's constraints and triggers: the table has no row to try them on\n",
				"  no rows yet: no sample\n",
				"no problems in ",
			},
			absent: []string{"takes"}},
		{name: "a row that would be parked, no id or timestamp", yaml: "tables:\n  - {table: plain, value: body, topic: 'x.{kind}'}\n",
			args: []string{"--postgres-url", url}, code: 0,
			stdout: []string{
				"public.plain: ok\n",
				"  sample record, from the newest row (by its physical place, the table having no timestamp or id column):\n",
				"    topic      \n",
				"    key        (none: no key column; Kafka spreads the records over the partitions)\n",
				"    value      hello\n",
				"    headers    (none)\n",
				"  this row would be parked in the status table, not produced: topic template input column \"kind\" is NULL\n",
				"no problems in ",
			}},
		{name: "a table the role may not read", yaml: "tables:\n  - {table: plain, value: body, topic: t}\n",
			args: []string{"--postgres-url", strings.Replace(url, "postgres@", "checker@", 1)}, code: 1,
			stdout: []string{
				"public.plain: 1 problem\n",
				`  public.plain: read the newest row: ERROR: permission denied for table plain (SQLSTATE 42501): GRANT SELECT ON "public"."plain" TO the relay's role`,
			},
			absent: []string{"ok\n", "sample record"}},
		{name: "a write-back table the role may not read", yaml: "tables:\n  - {table: checked_outbox, id: id, value: payload, topic: t, write_back: {status_column: status, delivered: SENT, failed: FAILED}}\n",
			args: []string{"--postgres-url", strings.Replace(url, "postgres@", "checker@", 1)}, code: 1,
			stdout: []string{
				"public.checked_outbox: 1 problem\n",
				`  public.checked_outbox: read the newest row: ERROR: permission denied for table checked_outbox (SQLSTATE 42501)`,
				"  write_back values not tried against the table's constraints and triggers: this role may not read the table\n",
			}},
		{name: "a table that does not exist", yaml: "tables:\n  - {table: app.nosuch, value: v, topic: t}\n", args: []string{"--postgres-url", url}, code: 1,
			stdout: []string{"app.nosuch: 1 problem\n", "  app.nosuch: the table does not exist (or this role may not see it): fix table: in the config, or create the table\n"}},
		{name: "a missing publication, a physical slot", yaml: "tables:" + goodEvents,
			args: []string{"--postgres-url", url, "--publication", "nosuch", "--slot", "physical_slot"}, code: 1,
			stdout: []string{
				`  replication slot "physical_slot" uses physical, the relay reads pgoutput`,
				`  publication "nosuch" does not exist: create it for the tables, as CREATE PUBLICATION "nosuch" FOR TABLE ... WITH (publish = 'insert')` + "\n",
				"\npublic.events: ok\n",
			},
			stderr: []string{"2 problems in "}},
		{name: "the file's mistakes, with their lines", yaml: "tables:\n  - {table: x, value: v, topic: t}\n  - {tabel: y}\n", args: []string{"--postgres-url", url}, code: 1,
			stderr: []string{"cdc-relay check-config: ", `relay.yaml:3: unknown key "tabel" in tables[1] (did you mean "table"?)`}},
		{name: "message sources only", yaml: "messages:\n  - {prefix: outbox, topic: orders.events, allowed_topics: 'orders\\..*'}\n" +
			"  - {prefix: \"it's\", payload_only: true, topic: audit.events, key_field: account_id}\n",
			args: []string{"--postgres-url", url}, code: 0,
			stdout: []string{
				"relay.yaml: 2 message sources, slot cdc_relay, publication cdc_relay\n",
				"\nmessage:outbox: ok\n",
				`  transactional messages with prefix "outbox" (pg_logical_emit_message(true, 'outbox', content)) become records:` + "\n",
				"    content    an envelope: a JSON object of topic, key, id, headers and payload\n",
				"    topic      the envelope's topic, else orders.events\n",
				"    key        the envelope's key (none without one)\n",
				"    id         the envelope's id, else the message's WAL position",
				`    topics     those that match orders\..*; a message for another is parked` + "\n",
				"    timestamp  the transaction's commit time\n",
				"\nmessage:it's: ok\n",
				`(pg_logical_emit_message(true, 'it''s', content))`,
				"    content    the record value, whole (payload_only)\n",
				"    topic      audit.events\n",
				`    key        the content's member "account_id" (a string or a number)` + "\n",
				"    id         the message's WAL position",
				"\nno problems in ",
			},
			absent: []string{"table", "sample record", "problems\n"}},
		{name: "a table and a message source, the file's allowed_topics", yaml: "allowed_topics: 'wallet-.*|payment-.*|notes'\ntables:" + goodEvents +
			"messages:\n  - prefix: notes\n",
			args: []string{"--postgres-url", url}, code: 0,
			stdout: []string{
				"relay.yaml: 1 table, 1 message source, slot cdc_relay, publication cdc_relay\n",
				"\npublic.events: ok\n",
				"\nmessage:notes: ok\n",
				"    topic      the envelope's topic; a message that names none is parked\n",
				"    topics     those that match wallet-.*|payment-.*|notes; a message for another is parked\n",
				"\nno problems in ",
			}},
		{name: "a message source's mistake, with its line", yaml: "messages:\n  - prefix: outbox\n    key_field: id\n", args: []string{"--postgres-url", url}, code: 1,
			stderr: []string{"cdc-relay check-config: ", "relay.yaml:3: messages[0] (outbox): key_field is for payload_only content"}},
		{name: "no --config", code: 2, stderr: []string{"--config (or CDC_RELAY_CONFIG) is required"}},
		{name: "no URL", yaml: "tables:" + goodEvents, code: 2, stderr: []string{"no PostgreSQL URL: set postgres_url in "}},
		{name: "no password shown", yaml: "postgres_url: postgres://relay:s3cret@127.0.0.1:1/app?connect_timeout=5\ntables:" + goodEvents, code: 1,
			stderr: []string{"connect to PostgreSQL at 127.0.0.1:1"}, absent: []string{"s3cret"}},
		{name: "the flag wins over the file's URL", yaml: "postgres_url: postgres://relay:s3cret@127.0.0.1:1/app\ntables:" + goodEvents,
			args: []string{"--postgres-url", url}, code: 0, stdout: []string{"public.events: ok"}, absent: []string{"s3cret"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"check-config"}
			if tc.yaml != "" {
				path := filepath.Join(dir, "relay.yaml")
				if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", path)
			}
			args = append(args, tc.args...)
			var stdout, stderr bytes.Buffer
			code := Main(ctx, args, &stdout, &stderr)
			out, errOut := stdout.String(), stderr.String()
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			rest := out
			for _, s := range tc.stdout {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Errorf("stdout lacks %q (in this order):\n%s", s, out)
					continue
				}
				rest = rest[i+len(s):]
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(out+errOut, s) {
					t.Errorf("output has %q:\nstdout:\n%s\nstderr:\n%s", s, out, errOut)
				}
			}
		})
	}

	// run's start-up check only reads: it does not try the values, so a
	// value only the table's CHECK refuses passes it.
	refused, err := config.Parse("relay.yaml", []byte(`tables:
  - {table: checked_outbox, id: id, value: payload, topic: checked, write_back: {status_column: status, delivered: DELIVERED, failed: FAILED}}
`))
	if err != nil {
		t.Fatal(err)
	}
	rc := relay.DefaultConfig()
	rc.PostgresURL = url
	if err := checkAtStart(ctx, rc, "relay.yaml", refused, slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("run's start-up check: %v, want none (it does not try write-back values)", err)
	}

	// check-config changes nothing: no slot was created, no row changed.
	if after := writeBackTables(ctx, t, conn); after != before {
		t.Errorf("check-config changed the tables:\nbefore %s\nafter  %s", before, after)
	}
	var slots, pending int
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'cdc_relay' AND database = current_database()), (SELECT count(*) FROM notification_outbox WHERE status = 'PENDING')").Scan(&slots, &pending); err != nil {
		t.Fatal(err)
	}
	if slots != 0 || pending != 3 {
		t.Errorf("after check-config: %d slots cdc_relay, %d PENDING rows; want 0 and 3", slots, pending)
	}
}

// writeBackTables is every row of the tables check-config tries
// write-back values on, as text.
func writeBackTables(ctx context.Context, t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var s string
	err := conn.QueryRow(ctx, `SELECT concat_ws(' | ',
		(SELECT string_agg(o::text, ',' ORDER BY id) FROM notification_outbox o),
		(SELECT string_agg(o::text, ',' ORDER BY id) FROM checked_outbox o),
		(SELECT string_agg(o::text, ',' ORDER BY id) FROM guarded_outbox o),
		(SELECT count(*)::text FROM empty_outbox))`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCheckConfigUsage: the help fits 80 columns and shows the file's
// shape.
func TestCheckConfigUsage(t *testing.T) {
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"help", "check-config"}, &out, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	for _, s := range []string{"Usage: cdc-relay check-config --config relay.yaml", "write_back:", "routes:", "messages:", "CDC_RELAY_CONFIG"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("help lacks %q", s)
		}
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if len(line) > 80 {
			t.Errorf("help line longer than 80 columns: %q", line)
		}
	}
	// The shape it shows is a good config.
	_, shape, _ := strings.Cut(checkConfigUsage, "The config file's shape:\n\n")
	shape, _, _ = strings.Cut(shape, "\n\n")
	f, err := config.Parse("usage", []byte(strings.ReplaceAll("\n"+shape, "\n  ", "\n")))
	if err != nil || len(f.Tables) != 2 || f.Tables[0].WriteBack == nil || len(f.Tables[1].Mapping.Routes) != 2 || len(f.Messages) != 2 || !f.Messages[1].PayloadOnly {
		t.Errorf("the help's config: %v, %v", f, err)
	}
}

// TestCheckConfigMessagesByServer: a message source is a problem on a
// server before PostgreSQL 14, whose pgoutput sends no messages, and ok
// from 14 on; the problem is under each source, saying what to do. Run
// with PG_BINDIR at PostgreSQL 13's binaries to see the refusal.
func TestCheckConfigMessagesByServer(t *testing.T) {
	ctx, url, conn := startDB(t, `CREATE PUBLICATION cdc_relay WITH (publish = 'insert')`)
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	t.Logf("server_version_num %d", version)
	path := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(path, []byte("messages: [{prefix: outbox}, {prefix: audit, payload_only: true, topic: audit}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main(ctx, []string{"check-config", "--config", path, "--postgres-url", url}, &stdout, &stderr)
	out := stdout.String()
	want, wantCode := []string{"\nmessage:outbox: ok\n", "\nmessage:audit: ok\n", "\nno problems in "}, 0
	if version < preflight.MessagesMinVersion {
		refused := "  messages need PostgreSQL 14 or later (pgoutput's messages option), and this server is "
		want, wantCode = []string{"\nmessage:outbox: 1 problem\n" + refused, "\nmessage:audit: 1 problem\n" + refused}, 1
		if !strings.Contains(stderr.String(), "2 problems in ") {
			t.Errorf("stderr lacks the count of problems:\n%s", stderr.String())
		}
	}
	if code != wantCode {
		t.Errorf("server %d: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", version, code, wantCode, out, stderr.String())
	}
	for _, s := range want {
		if !strings.Contains(out, s) {
			t.Errorf("server %d: stdout lacks %q:\n%s", version, s, out)
		}
	}
}

// TestConfigOfMessagesOnly: a config file of messages only prepares a
// database with migrate (the relay's tables, the publication, and
// cdc_relay.emit writing the file's first prefix; no outbox table), and
// check-config then finds it fit.
func TestConfigOfMessagesOnly(t *testing.T) {
	ctx, url, conn := startDB(t)
	path := filepath.Join(t.TempDir(), "relay.yaml")
	yaml := "postgres_url: " + url + "\nmessages:\n  - {prefix: app_events, topic: app}\n  - {prefix: audit, payload_only: true, topic: audit}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		args []string
		want []string
	}{
		{[]string{"migrate", "--config", path, "--no-slot"}, nil},
		{[]string{"check-config", "--config", path}, []string{
			"relay.yaml: 2 message sources, slot cdc_relay, publication cdc_relay\n",
			"\nmessage:app_events: ok\n", "\nmessage:audit: ok\n", "\nno problems in ",
		}},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(ctx, step.args, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", step.args[0], code, stdout.String(), stderr.String())
		}
		for _, s := range step.want {
			if !strings.Contains(stdout.String(), s) {
				t.Errorf("%s: stdout lacks %q:\n%s", step.args[0], s, stdout.String())
			}
		}
	}
	var outboxes int
	var body string
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM pg_tables WHERE tablename = 'outbox'), prosrc FROM pg_proc WHERE oid = 'cdc_relay.emit(text, text, jsonb, jsonb, text)'::regprocedure").
		Scan(&outboxes, &body); err != nil {
		t.Fatal(err)
	}
	if outboxes != 0 || !strings.Contains(body, "'app_events'") {
		t.Errorf("after migrate: %d outbox tables, want 0; emit's body, want the prefix 'app_events':\n%s", outboxes, body)
	}
}
