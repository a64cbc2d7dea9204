package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestMigrateAdopt: `migrate --adopt` adopts the rows its predicate
// selects when it creates the slot and says how many; the flags that
// exclude it are usage errors, a bad predicate fails with PostgreSQL's
// message and creates nothing, as does one that selects no row, and a
// second run is refused.
func TestMigrateAdopt(t *testing.T) {
	ctx, url, conn := startDB(t,
		"CREATE TABLE events (position bigserial PRIMARY KEY, data json NOT NULL DEFAULT '{}')",
		"INSERT INTO events SELECT FROM generate_series(1, 10)",
		"CREATE TABLE publisher_progress (publisher text PRIMARY KEY, last_position bigint NOT NULL)",
		"INSERT INTO publisher_progress VALUES ('wallet-publisher', 4)")
	configFile := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(configFile, []byte("tables: [{table: events, id: position, value: data, topic: t}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"migrate", "--postgres-url", url, "--table", "events", "--skip-outbox", "--id-column", "position"}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		output string // each of its lines in stdout or stderr
	}{
		{"check-config", []string{"check-config", "--postgres-url", url, "--config", adoptConfig(t, "postion > 4")}, 1,
			`public.events: adopt: PostgreSQL refuses the predicate: ERROR: column "postion" does not exist`},
		{"with --no-slot", append(base, "--adopt", "position > 4", "--no-slot"), 2, "--adopt and --no-slot exclude each other"},
		{"with --config", []string{"migrate", "--postgres-url", url, "--config", configFile, "--adopt", "position > 4"}, 2, "set adopt: on the table in " + configFile},
		{"without an id column", append(base, "--adopt", "position > 4", "--id-column", ""), 2, "--adopt needs --id-column"},
		{"the default id column", []string{"migrate", "--postgres-url", url, "--table", "events", "--skip-outbox", "--adopt", "position > 4"}, 1,
			`name the table's id column with --id-column`},
		{"a typo", append(base, "--adopt", "postion > 4"), 1, `column "postion" does not exist`},
		{"a misspelt publisher selects nothing", append(base, "--adopt", "position > (SELECT last_position FROM publisher_progress WHERE publisher = 'walet-publisher')"), 1,
			"the predicate selects no row"},
		{"adopts", append(base, "--adopt", "position > (SELECT last_position FROM publisher_progress WHERE publisher = 'wallet-publisher')"), 0, "adopted 6 row(s) that adopt selected before the slot\n" +
			"next, with your table's column flags (--payload-column, --timestamp-column, …): cdc-relay run --postgres-url URL --table events --id-column position --retention 0s (--retention 0s: the table is yours"},
		{"again", append(base, "--adopt", "position > 4"), 1, `replication slot "cdc_relay" exists: adopt selects rows only when the relay creates its slot`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(ctx, tc.args, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			for _, want := range strings.Split(tc.output, "\n") {
				if code != tc.code || !strings.Contains(out, want) {
					t.Fatalf("exit %d, want %d with %q:\n%s", code, tc.code, want, out)
				}
			}
			var slots, adopted int
			var made bool
			if err := conn.QueryRow(ctx, `SELECT count(*), to_regclass('public.outbox_delivery') IS NOT NULL FROM pg_replication_slots WHERE database = current_database()`).Scan(&slots, &made); err != nil {
				t.Fatal(err)
			}
			if made {
				if err := conn.QueryRow(ctx, `SELECT count(*) FROM outbox_delivery WHERE reload`).Scan(&adopted); err != nil {
					t.Fatal(err)
				}
			}
			if done := tc.code == 0 || tc.name == "again"; done != (slots == 1 && adopted == 6) || !done && (slots > 0 || made) {
				t.Errorf("%d slot(s), status table made %v, %d row(s) adopted; want 1 and 6 once adopted, nothing made before", slots, made, adopted)
			}
		})
	}
}

// adoptConfig writes a config file of the table events with adopt: where.
func adoptConfig(t *testing.T, where string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "adopt.yaml")
	if err := os.WriteFile(path, []byte("tables: [{table: events, id: position, value: data, topic: t, adopt: "+where+"}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMigrateAdoptByRoute: with a config file whose routes have adopt
// predicates of their own, check-config names the route predicate
// PostgreSQL refuses, migrate refuses one that selects no row, naming
// the route, and creates nothing; then adopts, for each topic, the events
// after its own position, and says how many.
func TestMigrateAdoptByRoute(t *testing.T) {
	ctx, url, conn := startDB(t,
		"CREATE TABLE events (position bigserial PRIMARY KEY, data json NOT NULL DEFAULT '{}', tags text[] NOT NULL DEFAULT '{wallet_id=w,payment_id=p}')",
		"INSERT INTO events SELECT FROM generate_series(1, 10)",
		"CREATE TABLE outbox_topic_progress (topic text, publisher text, last_position bigint, PRIMARY KEY (topic, publisher))",
		"INSERT INTO outbox_topic_progress VALUES ('wallet-events', 'KafkaPublisher', 8), ('payment-events', 'KafkaPublisher', 6)")
	config := func(wallet, payment string) string {
		path := filepath.Join(t.TempDir(), "relay.yaml")
		yaml := "slot: route_adopt\ntables:\n  - table: events\n    id: position\n    value: data\n    tags_column: tags\n    routes:\n" +
			"      - {topic: wallet-events, required_tags: [wallet_id], adopt: \"" + wallet + "\"}\n" +
			"      - {topic: payment-events, any_of_tags: [payment_id], adopt: \"" + payment + "\"}\n"
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	progress := func(topic string) string {
		return "position > (SELECT last_position FROM outbox_topic_progress WHERE topic = '" + topic + "' AND publisher = 'KafkaPublisher')"
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		output string
	}{
		{"check-config", []string{"check-config", "--postgres-url", url, "--config", config(progress("wallet-events"), "postion > 6")}, 1,
			`public.events: routes[1].adopt (topic payment-events): PostgreSQL refuses the predicate: ERROR: column "postion" does not exist (SQLSTATE 42703): fix the route's adopt: in the config`},
		{"a misspelt topic selects nothing", []string{"migrate", "--postgres-url", url, "--config", config(progress("wallet_events"), progress("payment-events"))}, 1,
			"adopt the rows of public.events: routes[0].adopt (topic wallet-events) selects no row that the route sends to wallet-events"},
		{"adopts", []string{"migrate", "--postgres-url", url, "--config", config(progress("wallet-events"), progress("payment-events"))}, 0,
			"adopted 6 row(s) that adopt selected before the slot"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(ctx, tc.args, &stdout, &stderr)
		if out := stdout.String() + stderr.String(); code != tc.code || !strings.Contains(out, tc.output) {
			t.Fatalf("%s: exit %d, want %d with %q:\n%s", tc.name, code, tc.code, tc.output, out)
		}
	}
	rows, _ := conn.Query(ctx, `SELECT topic || ' ' || string_agg(event_id, ',' ORDER BY id) FROM outbox_delivery WHERE reload GROUP BY topic ORDER BY topic`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if want := "payment-events 7,8,9,10|wallet-events 9,10"; err != nil || strings.Join(got, "|") != want {
		t.Errorf("adopted %q (%v), want %q", got, err, want)
	}
}
