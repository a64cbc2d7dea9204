package preflight

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// schema is the database of the tests: two tables that fit their config
// (orders_outbox writes back into an enum column and a varchar(6), with
// an attempts and a next-attempt column), a
// table with a timestamp column of type text, one not in the publication,
// a view and a publication that does not publish inserts. (The slots of
// TestCheckDatabase are its own: slots are the cluster's.)
var schema = []string{
	`CREATE TYPE state AS ENUM ('NEW', 'SENT', 'FAILED')`,
	`CREATE TABLE orders_outbox (id bigserial PRIMARY KEY, order_id text, body jsonb NOT NULL, kind text NOT NULL,
		at timestamptz NOT NULL DEFAULT now(), state state NOT NULL DEFAULT 'NEW', sent_at timestamptz, note varchar(6),
		tries smallint NOT NULL DEFAULT 0, next_at timestamp)`,
	`CREATE TABLE ledger (seq bigserial PRIMARY KEY, body bytea NOT NULL, labels text[] NOT NULL)`,
	`CREATE TABLE notes (id uuid, body text, at text)`,
	`CREATE TABLE unpublished (id uuid, body text)`,
	`CREATE VIEW a_view AS SELECT 'x'::text AS body`,
	`CREATE PUBLICATION cdc_relay FOR TABLE orders_outbox, ledger, notes WITH (publish = 'insert')`,
	`CREATE PUBLICATION deletes_only FOR TABLE ledger WITH (publish = 'delete')`,
}

// orders maps orders_outbox as it fits.
const orders = `
  - table: orders_outbox
    id: id
    key: order_id
    value: body
    topic: "orders.{kind}"
    timestamp: at
    write_back: {status_column: state, delivered: SENT, failed: FAILED, delivered_at_column: sent_at}
`

// names are the relay's names in the tests: the default status table.
var names = Names{Publication: "cdc_relay", StatusSchema: "public", StatusTable: "outbox_delivery", ConfigPath: "relay.yaml"}

// noResetTrigger is the problem of a table with pending values that
// migrate has not given its reset trigger.
const noResetTrigger = "has pending values but no reset trigger: run `cdc-relay migrate --config relay.yaml` as the table's owner"

// pg is the package's PostgreSQL.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// startDB gives the test a database of its own with schema.
func startDB(t *testing.T) (context.Context, *pgx.Conn) {
	t.Helper()
	ctx, _, conn := pg.ConnectDB(t, 2*time.Minute, schema...)
	return ctx, conn
}

// tables parses the tables of a config file. (Only the tests read a
// config file: preflight takes outbox tables, however they were built.)
func tables(t *testing.T, yaml string) []outbox.Table {
	t.Helper()
	f, err := config.Parse("relay.yaml", []byte("tables:"+yaml))
	if err != nil {
		t.Fatal(err)
	}
	return f.Tables
}

// problemStrings is each problem as "table|column|message".
func problemStrings(problems []Problem) []string {
	var out []string
	for _, p := range problems {
		out = append(out, p.Table+"|"+p.Column+"|"+p.Msg)
	}
	return out
}

func TestCheckTable(t *testing.T) {
	t.Parallel()
	ctx, conn := startDB(t)
	tests := []struct {
		name      string
		yaml      string
		want      []string // each problem, in order: "table|column|" and the start of its message
		fit       bool
		by, order string
	}{
		{name: "fits", yaml: orders, fit: true, by: "at", order: `"at" DESC NULLS LAST`},
		{name: "fits, no timestamp: by the id", yaml: "\n  - {table: ledger, id: seq, value: body, tags_column: labels, routes: [{topic: t, any_of_tags: [a]}]}\n",
			fit: true, by: "seq", order: `"seq" DESC NULLS LAST`},
		{name: "fits, no timestamp or id: by the physical order", yaml: "\n  - {table: ledger, value: body, topic: t}\n", fit: true, order: "ctid DESC"},
		{name: "missing columns", yaml: strings.NewReplacer("timestamp: at", "timestamp: created", "{kind}", "{type}").Replace(orders), want: []string{
			`public.orders_outbox|type|has no column "type" (topic): fix the template in topic, or add the column`,
			`public.orders_outbox|created|has no column "created" (timestamp): fix timestamp, or add the column`,
		}, by: "created", order: `"created" DESC NULLS LAST`},
		{name: "types", yaml: "\n  - {table: ledger, value: body, tags_column: body, headers_column: labels, routes: [{topic: t, any_of_tags: [a]}]}\n", want: []string{
			`public.ledger|labels|column "labels" (headers_column) has type text[]; want json or jsonb (an object)`,
			`public.ledger|body|column "body" (tags_column) has type bytea; want text[], varchar[], json or jsonb`,
		}, order: "ctid DESC"},
		{name: "write-back values", yaml: strings.NewReplacer("status_column: state, delivered: SENT", "status_column: state, delivered: DONE",
			"delivered_at_column: sent_at", "delivered_at_column: sent_at, error_column: note").Replace(orders), want: []string{
			`public.orders_outbox|state|write_back.delivered "DONE" is not a value of the column's enum type state (NEW, SENT, FAILED): change write_back.delivered, or the column`,
		}, by: "at", order: `"at" DESC NULLS LAST`},
		{name: "write-back's dead, pending, attempts and next attempt", yaml: strings.Replace(orders, "delivered_at_column: sent_at",
			"delivered_at_column: sent_at, dead: FAILED, pending: [NEW], attempts_column: tries, next_attempt_column: next_at", 1),
			want: []string{`public.orders_outbox|state|` + noResetTrigger}, fit: true, by: "at", order: `"at" DESC NULLS LAST`},
		{name: "write-back's new keys wrong", yaml: strings.Replace(orders, "delivered_at_column: sent_at",
			"dead: DEAD, pending: [NEW, QUEUED], attempts_column: note, next_attempt_column: tries", 1), want: []string{
			`public.orders_outbox|note|column "note" (write_back.attempts_column) has type character varying(6); want smallint, integer, bigint or numeric: change the column's type, or name another column in write_back.attempts_column`,
			`public.orders_outbox|tries|column "tries" (write_back.next_attempt_column) has type smallint; want timestamptz or timestamp`,
			`public.orders_outbox|state|write_back.dead "DEAD" is not a value of the column's enum type state (NEW, SENT, FAILED): change write_back.dead, or the column`,
			`public.orders_outbox|state|write_back.pending "QUEUED" is not a value of the column's enum type state (NEW, SENT, FAILED): change write_back.pending, or the column`,
			`public.orders_outbox|state|` + noResetTrigger,
		}, by: "at", order: `"at" DESC NULLS LAST`},
		{name: "a pending value longer than the column", yaml: "\n  - {table: orders_outbox, id: id, value: body, topic: t, write_back: {status_column: note, delivered: SENT, failed: FAIL, dead: GONE, pending: [NEW, WAITING]}}\n", want: []string{
			`public.orders_outbox|note|write_back.pending "WAITING" is longer than the column's type character varying(6) allows`,
			`public.orders_outbox|note|` + noResetTrigger,
		}, by: "id", order: `"id" DESC NULLS LAST`},
		{name: "a value longer than the column", yaml: "\n  - {table: orders_outbox, id: id, value: body, topic: t, write_back: {status_column: note, delivered: DELIVERED, failed: FAIL}}\n", want: []string{
			`public.orders_outbox|note|write_back.delivered "DELIVERED" is longer than the column's type character varying(6) allows`,
		}, by: "id", order: `"id" DESC NULLS LAST`},
		{name: "not in the publication", yaml: "\n  - {table: unpublished, value: body, topic: t}\n", fit: true, want: []string{
			`public.unpublished||publication "cdc_relay" does not include the table: ALTER PUBLICATION "cdc_relay" ADD TABLE "public"."unpublished"`,
		}, order: "ctid DESC"},
		{name: "a view", yaml: "\n  - {table: a_view, value: body, topic: t}\n", want: []string{`public.a_view||is not a table (relkind v)`}},
		{name: "no such table", yaml: "\n  - {table: app.nosuch, value: v, topic: t}\n", want: []string{`app.nosuch||the table does not exist`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := CheckTable(ctx, conn, names, tables(t, tc.yaml)[0])
			if err != nil {
				t.Fatal(err)
			}
			got := problemStrings(res.Problems)
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d: %q, want %q…", i, got[i], w)
				}
			}
			if res.Fit != tc.fit || res.By != tc.by || res.Order != tc.order {
				t.Errorf("Fit %v, By %q, Order %q; want %v, %q, %q", res.Fit, res.By, res.Order, tc.fit, tc.by, tc.order)
			}
		})
	}
}

// TestCheckTables checks the tables as run does at start: each problem
// names its table and column, in the order of the tables, and a missing
// publication is said once.
func TestCheckTables(t *testing.T) {
	t.Parallel()
	ctx, conn := startDB(t)
	all := tables(t, orders+`
  - {table: ledger, value: body, topic: t}
  - {table: notes, value: body, key: nosuch, topic: t}
  - {table: unpublished, value: body, topic: t}
`)
	problems, err := CheckTables(ctx, conn, names, all)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.Table+"|"+p.Column)
	}
	if want := "public.notes|nosuch public.unpublished|"; strings.Join(got, " ") != want {
		t.Errorf("problems (table|column) = %q, want %q: %v", got, want, problems)
	}
	problems, err = CheckTables(ctx, conn, Names{Publication: "nosuch"}, all[:2])
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || problems[0].Table != "" || !strings.Contains(problems[0].Msg, `publication "nosuch" does not exist`) {
		t.Errorf("with a missing publication: %v", problems)
	}
}

func TestCheckDatabase(t *testing.T) {
	t.Parallel()
	ctx, db, conn := pg.ConnectDB(t, 2*time.Minute, schema...)
	// A logical and a physical slot, named for the test's database: slots
	// are the cluster's. The physical slot has no database to go with.
	relaySlot, physicalSlot := db.Name+"_relay", db.Name+"_physical"
	for _, sql := range []string{
		"SELECT pg_create_physical_replication_slot('" + physicalSlot + "')",
		"SELECT pg_create_logical_replication_slot('" + relaySlot + "', 'pgoutput')",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "SELECT pg_drop_replication_slot($1)", physicalSlot)
	})
	for _, tc := range []struct {
		name, slot, publication string
		want                    []string
	}{
		{name: "a pgoutput slot", slot: relaySlot, publication: "cdc_relay"},
		{name: "no slot yet", slot: "nosuch", publication: "cdc_relay"},
		{name: "a physical slot, a missing publication", slot: physicalSlot, publication: "nosuch", want: []string{
			`replication slot "` + physicalSlot + `" uses physical, the relay reads pgoutput: name another slot (slot: in the file, or --slot), or drop this one (SELECT pg_drop_replication_slot('` + physicalSlot + `')) if nothing else reads it`,
			`publication "nosuch" does not exist: create it for the tables, as CREATE PUBLICATION "nosuch" FOR TABLE ... WITH (publish = 'insert')`,
		}},
		{name: "a publication without inserts", slot: relaySlot, publication: "deletes_only", want: []string{
			`publication "deletes_only" does not publish inserts, which are all the relay reads: ALTER PUBLICATION "deletes_only" SET (publish = 'insert')`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems, err := CheckDatabase(ctx, conn, tc.slot, tc.publication)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestCheckAdopt: a predicate PostgreSQL plans on the table is no
// problem; one it refuses is, with its message, naming a route's, and a
// publisher's own with its publisher.
func TestCheckAdopt(t *testing.T) {
	t.Parallel()
	ctx, conn := startDB(t)
	for _, tc := range []struct{ yaml, want string }{
		{"\n  - {table: ledger, id: seq, value: body, tags_column: labels, routes: [{topic: t, any_of_tags: [a]}], adopt: seq > (SELECT 1)}\n", ""},
		{"\n  - {table: ledger, id: seq, value: body, topic: t}\n", ""},
		{"\n  - {table: ledger, id: seq, value: body, topic: t, adopt: sq > 1}\n",
			`public.ledger||adopt: PostgreSQL refuses the predicate: ERROR: column "sq" does not exist (SQLSTATE 42703): fix adopt: in the config`},
		{"\n  - {table: ledger, id: seq, value: body, tags_column: labels, routes: [{topic: t, any_of_tags: [a], adopt: seq > (SELECT 1)}]}\n", ""},
		{"\n  - {table: ledger, id: seq, value: body, tags_column: labels, routes: [{topic: t, any_of_tags: [a]}, {topic: u, any_of_tags: [b], adopt: sq > 1}], adopt: seq > 1}\n",
			`public.ledger||routes[1].adopt (topic u): PostgreSQL refuses the predicate: ERROR: column "sq" does not exist (SQLSTATE 42703): fix the route's adopt: in the config`},
		{"\n  - {table: ledger, id: seq, value: body, tags_column: labels, routes: [{topic: t, any_of_tags: [a]}, {topic: u, any_of_tags: [b], adopt: seq > 1}], adopt: sq > 1}\n",
			`public.ledger||adopt: PostgreSQL refuses the predicate: ERROR: column "sq" does not exist (SQLSTATE 42703): fix adopt: in the config`},
		{"\n  - {table: ledger, id: seq, value: body, topic: t, adopt: {kafka: sq > 1}}\n",
			`public.ledger||adopt.kafka: PostgreSQL refuses the predicate: ERROR: column "sq" does not exist (SQLSTATE 42703): fix the kafka entry of adopt: in the config`},
		{"\n  - {table: ledger, id: seq, value: body, tags_column: labels, routes: [{topic: t, any_of_tags: [a], adopt: {kafka: false}}, {topic: u, any_of_tags: [b], adopt: {kafka: sq > 1}}]}\n",
			`public.ledger||routes[1].adopt.kafka (topic u): PostgreSQL refuses the predicate: ERROR: column "sq" does not exist (SQLSTATE 42703): fix the kafka entry of the route's adopt: in the config`},
	} {
		p, err := CheckAdopt(ctx, conn, tables(t, tc.yaml)[0])
		got := ""
		if p != nil {
			got = problemStrings([]Problem{*p})[0]
		}
		if err != nil || got != tc.want {
			t.Errorf("CheckAdopt(%s) = %q, %v; want %q", strings.TrimSpace(tc.yaml), got, err, tc.want)
		}
	}
}

// TestCheckTablePublishedInPart: a row filter, or a column list leaving
// out a mapped column, is a problem with the statement that publishes the
// whole table; a column list of every mapped column is none.
func TestCheckTablePublishedInPart(t *testing.T) {
	t.Parallel()
	ctx, _, conn := pg.ConnectDB(t, 2*time.Minute)
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 150000 {
		t.Skipf("PostgreSQL %d has no row filters or column lists", version)
	}
	for _, sql := range []string{
		`CREATE TABLE filtered (id bigserial PRIMARY KEY, kind text NOT NULL, body jsonb NOT NULL)`,
		`CREATE TABLE narrow (id bigserial PRIMARY KEY, kind text NOT NULL, body jsonb NOT NULL, note text)`,
		`CREATE TABLE enough (id bigserial PRIMARY KEY, kind text NOT NULL, body jsonb NOT NULL, note text)`,
		`CREATE PUBLICATION cdc_relay FOR TABLE filtered WHERE (kind <> 'X'), narrow (kind, body, note), enough (id, kind, body) WITH (publish = 'insert')`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, tc := range []struct{ table, want string }{
		{"filtered", `public.filtered||publication "cdc_relay" publishes the table with a row filter, WHERE (kind <> 'X'::text): the rows it leaves out would never reach Kafka; ` +
			`publish the whole table: BEGIN; ALTER PUBLICATION "cdc_relay" DROP TABLE "public"."filtered"; ALTER PUBLICATION "cdc_relay" ADD TABLE "public"."filtered"; COMMIT`},
		{"narrow", `public.narrow|id|publication "cdc_relay" publishes only some of the table's columns (a column list), leaving out id, which the config maps`},
		{"enough", ""},
	} {
		res, err := CheckTable(ctx, conn, names, tables(t, "\n  - {table: "+tc.table+", id: id, value: body, topic: \"t.{kind}\"}\n")[0])
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(problemStrings(res.Problems), "\n")
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: problems %q, want %q…", tc.table, got, tc.want)
		}
	}
}
