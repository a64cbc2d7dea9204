package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// checkConfigSchema is the database of TestCheckConfig: two outbox tables
// in the publication, with rows; one with a timestamp column of type text;
// one not in the publication; a physical slot.
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
	`CREATE TABLE texty (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), body text, created_at text)`,
	`CREATE TABLE audit (id uuid, body text)`,
	`CREATE TABLE plain (body text, kind text)`,
	`INSERT INTO plain VALUES ('first', 'a'), ('hello', NULL)`,
	`CREATE PUBLICATION cdc_relay FOR TABLE notification_outbox, events, texty, plain WITH (publish = 'insert')`,
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
	pg := pgtemptest.StartT(t, pgtemp.Options{})
	url := pg.URL("postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	clearEnv(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range checkConfigSchema {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	dir := t.TempDir()

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
			absent: []string{"1 problem", "problems\n", "parked"}},
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

	// check-config changes nothing: no slot was created, no row changed.
	var slots, pending int
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'cdc_relay'), (SELECT count(*) FROM notification_outbox WHERE status = 'PENDING')").Scan(&slots, &pending); err != nil {
		t.Fatal(err)
	}
	if slots != 0 || pending != 3 {
		t.Errorf("after check-config: %d slots cdc_relay, %d PENDING rows; want 0 and 3", slots, pending)
	}
}

// TestCheckTables calls checkTables as run does at start: each problem
// names its table and column.
func TestCheckTables(t *testing.T) {
	pg := pgtemptest.StartT(t, pgtemp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range checkConfigSchema {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	f, err := config.Parse("relay.yaml", []byte("tables:"+goodNotifications+goodEvents+`
  - {table: texty, value: body, key: nosuch, topic: t}
  - {table: audit, value: body, topic: t}
`))
	if err != nil {
		t.Fatal(err)
	}
	problems, err := checkTables(ctx, conn, "cdc_relay", f.Tables)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, fmt.Sprintf("%s|%s", p.table, p.column))
	}
	if want := "public.texty|nosuch public.audit|"; strings.Join(got, " ") != want {
		t.Errorf("problems (table|column) = %q, want %q: %v", got, want, problems)
	}
	problems, err = checkTables(ctx, conn, "nosuch", f.Tables[:1])
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || problems[0].table != "" || !strings.Contains(problems[0].msg, `publication "nosuch" does not exist`) {
		t.Errorf("with a missing publication: %v", problems)
	}
}

// TestCheckConfigUsage: the help fits 80 columns and shows the file's
// shape.
func TestCheckConfigUsage(t *testing.T) {
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"help", "check-config"}, &out, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	for _, s := range []string{"Usage: cdc-relay check-config --config relay.yaml", "write_back:", "routes:", "CDC_RELAY_CONFIG"} {
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
	if err != nil || len(f.Tables) != 2 || f.Tables[0].WriteBack() == nil || len(f.Tables[1].Routes) != 2 {
		t.Errorf("the help's config: %v, %v", f, err)
	}
}
