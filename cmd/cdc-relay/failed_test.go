package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// failedFixture is the status table of every case of TestFailedCommand,
// ids 1 to 5, as "status attempts" by id.
var failedFixture = map[int64]string{1: "FAILED 2", 2: "DEAD 5", 3: "DEAD 5", 4: "DELIVERED 1", 5: "FAILED 0"}

// resetFailed empties the status table and, unless empty, records the
// rows of failedFixture.
func resetFailed(ctx context.Context, t *testing.T, conn *pgx.Conn, empty bool) {
	t.Helper()
	stmts := []string{"TRUNCATE outbox_delivery RESTART IDENTITY"}
	if !empty {
		stmts = append(stmts,
			`INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, headers, record_timestamp,
			  status, attempts, last_error, next_attempt_at, commit_lsn, source_table) VALUES ('e-1', 'orders', 'order-1',
			  '{"total": 99.5, "note": "<&>"}', '[{"key": "event_type", "value": "OrderPlaced"}, {"key": "trace", "value": null}]',
			  '2025-01-02 03:04:05+00', 'FAILED', 2,
			  'UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition, and the broker did not create it: check auto.create.topics.enable',
			  now() + interval '1 hour', '0/1A2B3C', 'public.outbox')`,
			`INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, status, attempts, last_error, updated_at)
			  VALUES ('e-2', 'orders', 'order-2', 'plain text', 'DEAD', 5, 'MESSAGE_TOO_LARGE', now() - interval '40 days')`,
			`INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, status, attempts, last_error, updated_at)
			  VALUES ('e-3', 'payments', NULL, '\xfffe00', 'DEAD', 5, 'MESSAGE_TOO_LARGE', now() - interval '1 hour')`,
			`INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, status, attempts, last_error, updated_at, delivered_at, source_table)
			  VALUES ('e-4', 'payments', 'p-4', '{}', 'DELIVERED', 1, 'TOPIC_AUTHORIZATION_FAILED', now() - interval '1 day', now() - interval '1 day', 'billing.payment_outbox')`,
			`INSERT INTO outbox_delivery (topic, last_error) VALUES ('bad topic!*', E'illegal topic name:\n\tcontains "!*"')`,
		)
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
}

// failedState reads "status attempts" and updated_at by id.
func failedState(ctx context.Context, t *testing.T, conn *pgx.Conn) (map[int64]string, map[int64]time.Time) {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT id, status || ' ' || attempts, updated_at FROM outbox_delivery")
	if err != nil {
		t.Fatal(err)
	}
	states, updated := map[int64]string{}, map[int64]time.Time{}
	var (
		id int64
		s  string
		u  time.Time
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &s, &u}, func() error {
		states[id], updated[id] = s, u
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return states, updated
}

func TestFailedCommand(t *testing.T) {
	ctx, url, conn := startDB(t)
	var stdout, stderr bytes.Buffer
	if code := Main(ctx, []string{"migrate", "--postgres-url", url}, &stdout, &stderr); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr.String())
	}
	// A status table as an older version left it, before source_table.
	if _, err := conn.Exec(ctx, "CREATE TABLE old_delivery (LIKE outbox_delivery INCLUDING ALL); ALTER TABLE old_delivery DROP COLUMN source_table"); err != nil {
		t.Fatal(err)
	}

	const (
		topHelp  = "Usage: cdc-relay failed <subcommand> [flags]"
		listHelp = "Usage: cdc-relay failed list"
		notFound = `id 99 not found in "public"."outbox_delivery" ('cdc-relay failed list' shows the ids`
	)
	tests := []struct {
		name   string
		args   []string // after "failed"
		env    map[string]string
		noURL  bool // CDC_RELAY_POSTGRES_URL unset
		empty  bool // the status table is empty
		code   int
		stdout []string // each must be in stdout; nil: stdout must be empty
		stderr []string // each must be in stderr; nil: stderr must be empty
		absent []string // in neither
		lines  int      // stdout's lines, when not 0
		after  map[int64]string
		// json checks stdout, a JSON document.
		json func(t *testing.T, doc any)
	}{
		// Help and mistakes on the command line.
		{name: "no subcommand", code: 2, stderr: []string{"cdc-relay failed: want a subcommand: list, show, retry, skip or purge"}},
		{name: "-h", args: []string{"-h"}, code: 0, stdout: []string{topHelp, "retry  ID... | --all", "Exit status"}},
		{name: "help list", args: []string{"help", "list"}, code: 0, stdout: []string{listHelp, "CDC_RELAY_STATUS_TABLE", "--limit n"}, absent: []string{topHelp}},
		{name: "list -h", args: []string{"list", "-h"}, code: 0, stdout: []string{listHelp, "--postgres-url URL", "value_encoding"}, absent: []string{topHelp}},
		{name: "retry --help after ids", args: []string{"retry", "1", "--help"}, code: 0, stdout: []string{"Usage: cdc-relay failed retry", "--all"}},
		{name: "purge -h", args: []string{"purge", "-h"}, code: 0, stdout: []string{"Usage: cdc-relay failed purge", "--older-than duration", "(command line only)", "CDC_RELAY_POSTGRES_URL"}},
		{name: "show -h", args: []string{"show", "-h"}, code: 0, stdout: []string{"Usage: cdc-relay failed show ID"}},
		{name: "misspelled subcommand", args: []string{"lsit"}, code: 2, stderr: []string{`unknown subcommand "lsit" (did you mean list?)`, "Run 'cdc-relay failed -h'"}},
		{name: "unknown subcommand", args: []string{"frob"}, code: 2, stderr: []string{`unknown subcommand "frob": want list, show, retry, skip or purge`}},
		{name: "help of an unknown subcommand", args: []string{"help", "purg"}, code: 2, stderr: []string{"(did you mean purge?)"}},
		{name: "flag before the subcommand", args: []string{"--status", "DEAD", "list"}, code: 2, stderr: []string{"flags go after it"}},
		{name: "mistyped flag", args: []string{"list", "--topics", "x"}, code: 2, stderr: []string{"list: flag provided but not defined: -topics (did you mean --topic?)"}},
		{name: "no postgres URL", args: []string{"list"}, noURL: true, code: 2, stderr: []string{"list: --postgres-url (or CDC_RELAY_POSTGRES_URL) is required"}},
		{name: "list with an operand", args: []string{"list", "3"}, code: 2, stderr: []string{`unexpected argument "3"`}},
		{name: "list with a word", args: []string{"list", "dead"}, code: 2, stderr: []string{`unexpected argument "dead"`}},
		{name: "list of a state that is not one", args: []string{"list", "--status", "lost"}, code: 2, stderr: []string{`--status "lost": want FAILED, DEAD, WAITING, PAUSED or DELIVERED`}},
		{name: "negative limit", args: []string{"list", "--limit", "-1"}, code: 2, stderr: []string{"--limit -1"}},
		{name: "show without id", args: []string{"show"}, code: 2, stderr: []string{"show: want one id, got 0"}},
		{name: "show two ids", args: []string{"show", "1", "2"}, code: 2, stderr: []string{"want one id, got 2"}},
		{name: "not an id", args: []string{"retry", "abc"}, code: 2, stderr: []string{`"abc" is not an id`}},
		{name: "retry nothing named", args: []string{"retry"}, code: 2, stderr: []string{"name the events to retry by id, or pass --all"}},
		{name: "retry ids and --all", args: []string{"retry", "1", "--all"}, code: 2, stderr: []string{"give ids or --all, not both"}, after: failedFixture},
		{name: "purge --dead is never read from the environment", args: []string{"purge"}, env: map[string]string{"CDC_RELAY_DEAD": "true"}, code: 2,
			stderr: []string{"name the events to purge by id, or pass --dead"}, after: failedFixture},
		{name: "retry --status without --all", args: []string{"retry", "2", "--status", "dead"}, code: 2, stderr: []string{"--status narrows --all"}},
		{name: "retry --all DELIVERED", args: []string{"retry", "--all", "--status", "delivered"}, code: 2, stderr: []string{"delivered events are never retried"}},
		{name: "purge nothing named", args: []string{"purge"}, code: 2, stderr: []string{"name the events to purge by id, or pass --dead"}},
		{name: "purge ids and --dead", args: []string{"purge", "--dead", "2"}, code: 2, stderr: []string{"give ids or --dead, not both"}, after: failedFixture},
		{name: "purge --older-than without --dead", args: []string{"purge", "2", "--older-than", "1d"}, code: 2, stderr: []string{"--older-than narrows --dead"}},
		{name: "purge --older-than without a unit", args: []string{"purge", "--dead", "--older-than", "30"}, code: 2, stderr: []string{"a duration needs a unit"}},
		{name: "bad status table", args: []string{"list", "--status-table", "a.b.c"}, code: 2, stderr: []string{`--status-table "a.b.c"`}},

		// Errors: exit 1, never a password.
		{name: "cannot connect", args: []string{"list", "--postgres-url", "postgres://relay:s3cret@127.0.0.1:1/app?connect_timeout=5"}, code: 1,
			stderr: []string{"cdc-relay failed: connect to PostgreSQL at 127.0.0.1:1"}, absent: []string{"s3cret"}},
		{name: "unparsable URL", args: []string{"list", "--postgres-url", "postgres://relay:s3cret@db:notaport/app"}, code: 1,
			stderr: []string{"cdc-relay failed: parse PostgreSQL URL"}, absent: []string{"s3cret"}},
		{name: "no status table", args: []string{"list", "--status-table", "public.nosuch"}, code: 1, stderr: []string{"run 'cdc-relay migrate'"}},
		{name: "a status table of an older version", args: []string{"list", "--status-table", "public.old_delivery"}, code: 1,
			stderr: []string{`column "source_table" does not exist`, "run 'cdc-relay migrate' of this version first"}},

		// list
		{name: "list", args: []string{"list"}, code: 0, lines: 6,
			stdout: []string{"ID  STATUS     ATTEMPTS  TABLE                   TOPIC        EVENT ID", "NEXT ATTEMPT  LAST ERROR",
				"1   FAILED     2         public.outbox           orders", "in 1h", "UNKNOWN_TOPIC_OR_PARTITION: This", "…",
				"4   DELIVERED  1         billing.payment_outbox  payments", "5   FAILED     0         -                       bad topic!*  -", "due",
				`illegal topic name:  contains "!*"`}},
		{name: "list by status, any case", args: []string{"list", "--status", "dead"}, code: 0, lines: 3, stdout: []string{"\n3   DEAD", "\n2   DEAD"}, absent: []string{"FAILED"}},
		{name: "list by --state, the API's word", args: []string{"list", "--state", "DEAD"}, code: 0, lines: 3, stdout: []string{"\n3   DEAD", "\n2   DEAD"}, absent: []string{"FAILED"}},
		{name: "list by topic", args: []string{"list", "--topic", "payments"}, code: 0, lines: 3, stdout: []string{"\n4 ", "\n3 "}},
		{name: "list filters are never read from the environment", args: []string{"list"}, env: map[string]string{"CDC_RELAY_STATUS": "DELIVERED"}, code: 0, lines: 6,
			stdout: []string{"FAILED", "DEAD", "DELIVERED"}},
		{name: "list limit", args: []string{"list", "--limit", "2"}, code: 0, lines: 3, stdout: []string{"\n5 ", "\n4 "},
			stderr: []string{"(the newest 2; --limit 0 lists them all)"}},
		{name: "list limit, no more", args: []string{"list", "--limit", "5"}, code: 0, lines: 6, stdout: []string{"\n1 "}},
		{name: "list nothing", args: []string{"list", "--topic", "nosuch"}, code: 0, stdout: []string{`no events for topic "nosuch" in public.outbox_delivery`}},
		{name: "list --json", args: []string{"list", "--json"}, code: 0, json: func(t *testing.T, doc any) {
			rows := doc.([]any)
			if len(rows) != 5 {
				t.Fatalf("%d rows, want 5", len(rows))
			}
			want := []map[string]any{
				{"id": 5.0, "event_id": nil, "source_table": nil, "key": nil, "value": nil, "headers": []any{}, "timestamp": nil, "commit_lsn": "0/0"},
				{"id": 4.0, "status": "DELIVERED", "source_table": "billing.payment_outbox", "value": map[string]any{}, "value_encoding": "json"},
				{"id": 3.0, "key": nil, "value": "//4A", "value_encoding": "base64", "delivered_at": nil},
				{"id": 2.0, "value": "plain text", "value_encoding": "text", "key": "order-2", "key_encoding": "text"},
				{"id": 1.0, "status": "FAILED", "attempts": 2.0, "source_table": "public.outbox", "topic": "orders", "event_id": "e-1", "key": "order-1",
					"value":     map[string]any{"total": 99.5, "note": "<&>"},
					"headers":   []any{map[string]any{"key": "event_type", "value": "OrderPlaced"}, map[string]any{"key": "trace", "value": nil}},
					"timestamp": "2025-01-02T03:04:05Z", "commit_lsn": "0/1A2B3C"},
			}
			for i, w := range want {
				row := rows[i].(map[string]any)
				for k, v := range w {
					if got, ok := row[k]; !ok || fmt.Sprint(got) != fmt.Sprint(v) {
						t.Errorf("row %d: %s = %#v, want %#v", i, k, got, v)
					}
				}
				if _, ok := row["value_encoding"]; ok != (row["value"] != nil) {
					t.Errorf("row %d: value_encoding must be there exactly when value is not null: %v", i, row)
				}
			}
		}},
		{name: "list --json, nothing", args: []string{"list", "--json"}, empty: true, code: 0, stdout: []string{"[]\n"}},

		// show
		{name: "show", args: []string{"show", "1"}, code: 0,
			stdout: []string{"id:            1\n", "status:        FAILED\n", "next attempt:  20", "(in 1h", "table:         public.outbox\n", "topic:         orders\n", "key:           order-1\n",
				"event id:      e-1\n", "timestamp:     2025-01-02T03:04:05Z\n", "commit lsn:    0/1A2B3C\n", "delivered:     -\n",
				"headers:\n  event_type: OrderPlaced\n  trace: (null)\n", "value:\n  {\n    \"total\": 99.5,\n    \"note\": \"<&>\"\n  }\n",
				"last error:    UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition, and the broker did not create it: check auto.create.topics.enable\n"}},
		{name: "show bytes, no table", args: []string{"show", "3"}, code: 0, stdout: []string{"table:         -\n", "key:           (null)\n", "value:\n  (3 bytes, not UTF-8; base64:)\n  //4A\n", "headers: -\n"}},
		{name: "show --json", args: []string{"show", "--json", "2"}, code: 0, json: func(t *testing.T, doc any) {
			row := doc.(map[string]any)
			if row["id"] != 2.0 || row["status"] != "DEAD" || row["value"] != "plain text" || row["last_error"] != "MESSAGE_TOO_LARGE" || row["source_table"] != nil {
				t.Errorf("show --json: %v", row)
			}
		}},
		{name: "show a missing id", args: []string{"show", "99"}, code: 1, stderr: []string{"cdc-relay failed: " + notFound}},

		// retry
		{name: "retry by id", args: []string{"retry", "2", "3"}, code: 0, stdout: []string{"retried 2 events: 2 3\n"}, after: map[int64]string{2: "FAILED 0", 3: "FAILED 0"}},
		{name: "retry ids with commas, around flags", args: []string{"retry", "3,1", "--status-table", "public.outbox_delivery", "5"}, code: 0,
			stdout: []string{"retried 3 events: 1 3 5\n"}, after: map[int64]string{1: "FAILED 0", 3: "FAILED 0", 5: "FAILED 0"}},
		{name: "retry --all", args: []string{"retry", "--all"}, code: 0, stdout: []string{"retried 4 events: 1 2 3 5\n"},
			after: map[int64]string{1: "FAILED 0", 2: "FAILED 0", 3: "FAILED 0", 5: "FAILED 0"}},
		{name: "retry --all DEAD", args: []string{"retry", "--all", "--status", "DEAD"}, code: 0, stdout: []string{"retried 2 events: 2 3\n"},
			after: map[int64]string{2: "FAILED 0", 3: "FAILED 0"}},
		{name: "retry a delivered event", args: []string{"retry", "4"}, code: 1, stderr: []string{"not retried: id 4 already delivered at 20", "retry sends FAILED and DEAD events only"}},
		{name: "retry a missing id and another", args: []string{"retry", "99", "2", "4"}, code: 1, stdout: []string{"retried 1 event: 2\n"},
			stderr: []string{"not retried: id 99 not found", "; id 4 already delivered", "'cdc-relay failed list' shows the ids"}, after: map[int64]string{2: "FAILED 0"}},
		{name: "retry --all, nothing to retry", args: []string{"retry", "--all"}, empty: true, code: 1, stderr: []string{"nothing to retry: no FAILED or DEAD events in public.outbox_delivery"}},

		// purge
		{name: "purge by id", args: []string{"purge", "1", "4"}, code: 0, stdout: []string{"purged 2 events: 1 4; 1 was FAILED, never delivered\n"},
			after: map[int64]string{1: "", 4: ""}},
		{name: "purge two FAILED", args: []string{"purge", "5", "1", "2"}, code: 0, stdout: []string{"purged 3 events: 1 2 5; 1 5 were FAILED, never delivered\n"},
			after: map[int64]string{1: "", 2: "", 5: ""}},
		{name: "purge --dead", args: []string{"purge", "--dead"}, code: 0, stdout: []string{"purged 2 events: 2 3\n"}, after: map[int64]string{2: "", 3: ""}},
		{name: "purge --dead --older-than", args: []string{"purge", "--dead", "--older-than", "30d"}, code: 0, stdout: []string{"purged 1 event: 2\n"}, after: map[int64]string{2: ""}},
		{name: "purge --dead, none that old", args: []string{"purge", "--dead", "--older-than=60d"}, code: 1,
			stderr: []string{"nothing to purge: no events in public.outbox_delivery marked DEAD more than 60d ago"}},
		{name: "purge a missing id", args: []string{"purge", "99"}, code: 1, stderr: []string{"not purged: " + notFound}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("COLUMNS", "120")
			if !tt.noURL {
				t.Setenv("CDC_RELAY_POSTGRES_URL", url)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			resetFailed(ctx, t, conn, tt.empty)
			_, updatedBefore := failedState(ctx, t, conn)
			var stdout, stderr bytes.Buffer
			code := Main(ctx, append([]string{"failed"}, tt.args...), &stdout, &stderr)
			report := "stdout:\n" + stdout.String() + "\nstderr:\n" + stderr.String()
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; %s", code, tt.code, report)
			}
			if tt.json != nil {
				var doc any
				if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
					t.Fatalf("stdout is not JSON: %v; %s", err, report)
				}
				tt.json(t, doc)
			} else {
				checkOutput(t, "stdout", stdout.String(), tt.stdout, report)
			}
			checkOutput(t, "stderr", stderr.String(), tt.stderr, report)
			for _, a := range tt.absent {
				if strings.Contains(stdout.String()+stderr.String(), a) {
					t.Errorf("output has %q; %s", a, report)
				}
			}
			if n := strings.Count(stdout.String(), "\n"); tt.lines != 0 && n != tt.lines {
				t.Errorf("stdout has %d lines, want %d; %s", n, tt.lines, report)
			}
			if tt.empty {
				return
			}
			// The rows not named are as they were; the named ones as said.
			states, updated := failedState(ctx, t, conn)
			for id, was := range failedFixture {
				want, changed := tt.after[id]
				if !changed {
					want = was
				}
				got, ok := states[id]
				switch {
				case want == "" && ok:
					t.Errorf("row %d is still there (%s), want it deleted", id, got)
				case want != "" && got != want:
					t.Errorf("row %d is %q, want %q", id, got, want)
				case !changed && ok && !updated[id].Equal(updatedBefore[id]):
					t.Errorf("row %d was not named, but its updated_at changed", id)
				}
			}
		})
	}
}

func checkOutput(t *testing.T, name, got string, want []string, report string) {
	t.Helper()
	if want == nil && got != "" {
		t.Errorf("%s should be empty; %s", name, report)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q; %s", name, w, report)
		}
	}
}

// TestFailedUsage checks that each subcommand's usage shows every flag
// once, in a section, within 80 columns.
func TestFailedUsage(t *testing.T) {
	for _, sub := range failedSubcommands {
		c := &FailedCommand{}
		fs := c.flags(sub)
		seen := map[string]bool{}
		for _, s := range failedSections(sub) {
			for _, name := range s.names {
				if fs.Lookup(name) == nil {
					t.Errorf("%s: section %q lists --%s, which is not a flag", sub, s.title, name)
				}
				seen[name] = true
			}
		}
		fs.VisitAll(func(f *flag.Flag) {
			if !seen[f.Name] {
				t.Errorf("%s: --%s is in no section", sub, f.Name)
			}
		})
		if failedTable[sub].head == "" {
			t.Errorf("%s has no usage text", sub)
		}
		c.sub = sub
		var out bytes.Buffer
		c.Usage(&out)
		for _, line := range strings.Split(out.String()+failedUsage, "\n") {
			if len([]rune(line)) > 80 {
				t.Errorf("%s: usage line longer than 80 columns: %q", sub, line)
			}
		}
	}
}

// TestFailedCommandOrder: what list and show say of the events held behind
// their key's first, what retry refuses, and what skip and purge release.
func TestFailedCommandOrder(t *testing.T) {
	ctx, url, conn := startDB(t)
	var stdout, stderr bytes.Buffer
	if code := Main(ctx, []string{"migrate", "--postgres-url", url}, &stdout, &stderr); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr.String())
	}
	fixture := []string{
		"TRUNCATE outbox_delivery RESTART IDENTITY",
		`INSERT INTO outbox_delivery (event_id, topic, record_key, status, attempts, last_error) VALUES
		  ('e-1', 'orders', 'k', 'DEAD', 10, 'MESSAGE_TOO_LARGE'),
		  ('e-2', 'orders', 'k', 'WAITING', 0, 'waits for event 1 of its key'),
		  ('e-3', 'payments', 'p', 'PAUSED', 0, 'its topic is paused'),
		  ('e-4', 'orders', 'k', 'WAITING', 0, 'waits for event 1 of its key')`,
	}
	tests := []struct {
		name           string
		args           []string // after "failed"
		code           int
		stdout, stderr []string // each must be in it
		after          map[int64]string
	}{
		{name: "list", args: []string{"list"}, stdout: []string{"ID  STATUS   WAITS FOR  ATTEMPTS", "\n4   WAITING  1 ", "\n3   PAUSED   -  ", "\n1   DEAD     -  "}},
		{name: "list WAITING", args: []string{"list", "--status", "waiting"}, stdout: []string{"\n4   WAITING", "\n2   WAITING"}},
		{name: "show", args: []string{"show", "2"}, stdout: []string{"status:        WAITING\n", "waits for:     1\n"}},
		{name: "show --json", args: []string{"show", "4", "--json"}, stdout: []string{`"waits_for": 1,`, `"skipped_at": null`}},
		{name: "retry a WAITING event", args: []string{"retry", "2"}, code: 1,
			stderr: []string{"not retried: id 2 is WAITING, held behind id 1 of its key: retry, skip or purge id 1"}},
		{name: "retry a PAUSED event", args: []string{"retry", "3"}, code: 1, stderr: []string{`resume topic "payments" (cdc-relay resume --topic)`}},
		{name: "retry --all WAITING", args: []string{"retry", "--all", "--status", "waiting"}, code: 2, stderr: []string{"--status WAITING: such events are not retried"}},
		{name: "skip nothing named", args: []string{"skip"}, code: 2, stderr: []string{"skip: name the events to skip by id"}},
		{name: "skip the head", args: []string{"skip", "1"}, stdout: []string{"skipped 1 event: 1 (now DEAD, skipped;", "1 released 2 events of its key waiting behind it"},
			after: map[int64]string{1: "DEAD 10", 2: "WAITING 0"}},
		{name: "skip a WAITING event", args: []string{"skip", "2", "1"}, code: 1, stdout: []string{"skipped 1 event: 1"},
			stderr: []string{"not skipped: id 2 is WAITING: skip gives up FAILED and DEAD events only"}},
		{name: "purge the head", args: []string{"purge", "1"}, stdout: []string{"purged 1 event: 1\n", "1 released 2 events of its key"}, after: map[int64]string{1: ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("COLUMNS", "120")
			t.Setenv("CDC_RELAY_POSTGRES_URL", url)
			for _, sql := range fixture {
				if _, err := conn.Exec(ctx, sql); err != nil {
					t.Fatal(err)
				}
			}
			runMain(ctx, t, append([]string{"failed"}, tt.args...), tt.code, tt.stdout, tt.stderr)
			states, _ := failedState(ctx, t, conn)
			for id, want := range tt.after {
				if states[id] != want {
					t.Errorf("id %d is %q, want %q", id, states[id], want)
				}
			}
		})
	}
}
