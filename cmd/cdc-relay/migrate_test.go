package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/relay"
)

// TestPrintGrantsHostileNames pipes `migrate --print-grants` into psql, as
// the README shows, for roles, schemas, tables and columns whose names hold
// what could end a quoted name, a literal, a dollar-quoted DO body or a
// comment. No such name may run a statement of its own (each tries to drop
// the table victim), and the role gets what it should on the tables.
func TestPrintGrantsHostileNames(t *testing.T) {
	psql := psqlPath(t)
	const drop = "; DROP TABLE victim; --"
	ctx, url, conn := startDB(t,
		`CREATE SCHEMA "q""s$$`+drop+`"`,
		`CREATE TABLE app_events (id bigint PRIMARY KEY, payload jsonb, "st'a$$`+drop+`" text, "at""$x$`+drop+`" timestamptz)`,
		`CREATE TABLE "q""s$$`+drop+`".second (id bigint, payload jsonb)`)
	dir := t.TempDir()
	configFile := filepath.Join(dir, "relay.yaml")
	yaml := `tables:
  - table: app_events
    id: id
    value: payload
    topic: t
    write_back: {status_column: "st'a$$` + drop + `", delivered: D, failed: F, delivered_at_column: "at\"$x$` + drop + `",
                 pending: ['P''e\$$` + drop + `', NEW]}
  - table: 'q"s$$` + drop + `.second'
    value: payload
    topic: t
`
	if err := os.WriteFile(configFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}

	type grant struct{ object, privilege string }
	tests := []struct {
		name   string
		role   string
		tables []string    // migrate's table flags, or --config
		outbox string      // the quoted outbox table of a config file
		grants []grant     // has_table_privilege of the role, beside those of every case
		cols   [][3]string // has_column_privilege of the role: table, column, privilege
		reset  string      // the quoted table migrate gave a reset trigger, which the SQL notes
	}{
		{name: "$$ in the status table", role: "relay_a",
			tables: []string{"--status-table", "public.x$$" + drop, "--checkpoint-table", "public.ck_a"}},
		{name: "$$ in the role", role: "r$$" + drop,
			tables: []string{"--status-table", "public.st_b", "--checkpoint-table", "public.ck_b"}},
		{name: "quotes", role: `a'b"c`,
			tables: []string{"--table", `q"s$$` + drop + `.o'b`, "--status-table", `public.s"t'a`, "--checkpoint-table", `public.c'k"`}},
		{name: "a dollar tag", role: "$do$" + drop,
			tables: []string{"--status-table", "public.$tag$" + drop, "--checkpoint-table", "public.$do$"}},
		{name: "a line break", role: "n\nDROP TABLE victim; --",
			tables: []string{"--status-table", "public.l\nDROP TABLE victim; --", "--checkpoint-table", "public.ck\r\nDROP TABLE victim; --"}},
		{name: "a backslash", role: `b\'` + drop,
			tables: []string{"--status-table", `public.b\'` + drop, "--checkpoint-table", `public.ck\`}},
		{name: "a config file's tables and write-back columns", role: "w$$" + drop,
			tables: []string{"--config", configFile, "--status-table", "public.st_w", "--checkpoint-table", "public.ck_w"},
			outbox: `"public"."app_events"`,
			grants: []grant{{`"q""s$$` + drop + `"."second"`, "SELECT"}},
			cols:   [][3]string{{`"public"."app_events"`, "st'a$$" + drop, "UPDATE"}, {`"public"."app_events"`, `at"$x$` + drop, "UPDATE"}},
			reset:  `"public"."app_events"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS victim (id int)"); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			args := append([]string{"migrate", "--postgres-url", url, "--no-slot"}, tc.tables...)
			if code := Main(ctx, args, &out, &errOut); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out.String(), errOut.String())
			}
			out.Reset()
			args = append([]string{"migrate", "--print-grants", tc.role}, tc.tables...)
			if code := Main(ctx, args, &out, &errOut); code != 0 {
				t.Fatalf("migrate --print-grants: exit %d\n%s", code, errOut.String())
			}
			sql := out.String()
			if tc.reset != "" {
				if !strings.Contains(sql, "-- "+tc.reset+" lists pending values: `cdc-relay migrate` keeps its reset trigger") {
					t.Errorf("the SQL does not say that migrate needs the owner of %s:\n%s", tc.reset, sql)
				}
				var triggers int
				if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_trigger WHERE tgname = 'cdc_relay_reset' AND tgrelid = to_regclass($1)", tc.reset).Scan(&triggers); err != nil || triggers != 1 {
					t.Errorf("%d reset triggers on %s (%v), want 1", triggers, tc.reset, err)
				}
			}
			cmd := exec.CommandContext(ctx, psql, "-X", "-q", "-d", url)
			cmd.Stdin = strings.NewReader(sql)
			got, err := cmd.CombinedOutput()
			if err != nil || len(got) > 0 {
				t.Errorf("psql: %v\n%s\nthe SQL:\n%s", err, got, sql)
			}
			var victim bool
			if err := conn.QueryRow(ctx, "SELECT to_regclass('public.victim') IS NOT NULL").Scan(&victim); err != nil {
				t.Fatal(err)
			}
			if !victim {
				t.Fatalf("the printed SQL dropped table victim:\n%s", sql)
			}
			status, checkpoint, outbox := migrateTables(t, tc.tables)
			outboxPrivilege := "SELECT, DELETE" // retention, on by default
			if tc.outbox != "" {
				// A config file's table: the relay deletes none of its rows
				// unless run is given --retention.
				outbox, outboxPrivilege = tc.outbox, "SELECT"
				var del bool
				if err := conn.QueryRow(ctx, "SELECT has_table_privilege($1::name, $2::text, 'DELETE')", tc.role, outbox).Scan(&del); err != nil || del {
					t.Errorf("role %q may delete from the config file's table %s (%v): retention is off for it", tc.role, outbox, err)
				}
			}
			grants := append([]grant{
				{status, "SELECT, INSERT, UPDATE, DELETE"}, {checkpoint, "SELECT, INSERT, UPDATE"}, {outbox, outboxPrivilege},
			}, tc.grants...)
			for _, g := range grants {
				var ok bool
				if err := conn.QueryRow(ctx, "SELECT has_table_privilege($1::name, $2::text, $3::text)", tc.role, g.object, g.privilege).Scan(&ok); err != nil || !ok {
					t.Errorf("role %q lacks %s on %s: %v", tc.role, g.privilege, g.object, err)
				}
			}
			for _, c := range tc.cols {
				var ok bool
				if err := conn.QueryRow(ctx, "SELECT has_column_privilege($1::name, $2::text, $3::text, $4::text)", tc.role, c[0], c[1], c[2]).Scan(&ok); err != nil || !ok {
					t.Errorf("role %q lacks %s on %s column %q: %v", tc.role, c[2], c[0], c[1], err)
				}
			}
			var seq, attrs bool
			if err := conn.QueryRow(ctx, `SELECT has_sequence_privilege($1::name, pg_get_serial_sequence($2::text, 'id'), 'USAGE'),
				(SELECT rolcanlogin AND rolreplication FROM pg_roles WHERE rolname = $1)`, tc.role, status).Scan(&seq, &attrs); err != nil || !seq || !attrs {
				t.Errorf("role %q: USAGE on the status table's sequence %v, LOGIN REPLICATION %v: %v", tc.role, seq, attrs, err)
			}
		})
	}
}

// migrateTables returns the quoted status, checkpoint and outbox tables
// that migrate's args name.
func migrateTables(t *testing.T, args []string) (status, checkpoint, outbox string) {
	t.Helper()
	names := map[string]string{"--table": "public.outbox"}
	for i := 0; i+1 < len(args); i += 2 {
		names[args[i]] = args[i+1]
	}
	quote := func(s string) string {
		schema, table, _ := strings.Cut(s, ".")
		return pgx.Identifier{schema, table}.Sanitize()
	}
	return quote(names["--status-table"]), quote(names["--checkpoint-table"]), quote(names["--table"])
}

// psqlPath returns psql beside the server binaries the test cluster runs
// from, or on $PATH.
func psqlPath(t *testing.T) string {
	t.Helper()
	if bin, err := pgtemp.FindBin(); err == nil {
		if p := filepath.Join(bin, "psql"); fileExists(p) {
			return p
		}
	}
	p, err := exec.LookPath("psql")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestMigrateResetTrigger: migrate --config creates the reset trigger of a
// table with pending values and says so, keeps it when it is current,
// replaces it when the values change and drops it when they are gone;
// check-config and run's start-up check find a table without its current
// trigger, and name the status table's function.
func TestMigrateResetTrigger(t *testing.T) {
	ctx, url, _ := startDB(t,
		"CREATE TABLE app_outbox (id bigint PRIMARY KEY, payload jsonb NOT NULL, status text NOT NULL DEFAULT 'PENDING')",
		`INSERT INTO app_outbox (id, payload) VALUES (1, '{}')`)
	dir := t.TempDir()
	configFile := filepath.Join(dir, "relay.yaml")
	yaml := func(pending string) string {
		return `postgres_url: ` + url + `
tables:
  - table: app_outbox
    id: id
    value: payload
    topic: app
    write_back: {status_column: status, delivered: SENT, failed: FAILED` + pending + `}
`
	}
	migrate := []string{"migrate", "--config", configFile, "--no-slot"}
	check := []string{"check-config", "--config", configFile}
	const does = ": setting status back to PENDING, PROCESSING sends the event again\n"
	tests := []struct {
		name    string
		pending string // write_back's pending key, after a comma
		args    []string
		code    int
		stdout  []string // each in stdout, in this order
		absent  []string
		atStart string // run's start-up check's error, if it has one
	}{
		{name: "check-config before migrate", pending: ", pending: [PENDING, PROCESSING]", args: check, code: 1,
			stdout:  []string{"public.app_outbox: has pending values but no reset trigger: run `cdc-relay migrate --config " + configFile + "` as the table's owner"},
			atStart: "has pending values but no reset trigger"},
		{name: "migrate creates it", pending: ", pending: [PENDING, PROCESSING]", args: migrate,
			stdout: []string{"reset trigger created on public.app_outbox" + does}},
		{name: "check-config after migrate", pending: ", pending: [PENDING, PROCESSING]", args: check, stdout: []string{"public.app_outbox: ok\n"}},
		{name: "migrate again keeps it", pending: ", pending: [PENDING, PROCESSING]", args: migrate,
			stdout: []string{"reset trigger on public.app_outbox is current" + does}, absent: []string{"created"}},
		{name: "check-config with another status table", pending: ", pending: [PENDING, PROCESSING]", args: append(check, "--status-table", "ops.delivery"), code: 1,
			stdout: []string{`has pending values but a reset trigger that calls public.outbox_delivery_note_reset() instead of "ops"."delivery_note_reset"()`}},
		{name: "other values: check-config", pending: ", pending: [PENDING]", args: check, code: 1,
			stdout:  []string{"has pending values but a reset trigger that was created for another status column or other pending values: run `cdc-relay migrate"},
			atStart: "a reset trigger that was created for another status column or other pending values"},
		{name: "other values: migrate replaces it", pending: ", pending: [PENDING]", args: migrate,
			stdout: []string{"reset trigger created on public.app_outbox: setting status back to PENDING sends the event again\n"}},
		{name: "no pending values: migrate drops it", args: migrate,
			stdout: []string{"reset trigger dropped from public.app_outbox: its write_back lists no pending values\n"}},
		{name: "and again: nothing to say", args: migrate, absent: []string{"reset trigger"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(configFile, []byte(yaml(tc.pending)), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := Main(ctx, tc.args, &stdout, &stderr)
			out := stdout.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, stderr.String())
			}
			rest := out
			for _, s := range tc.stdout {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("stdout lacks %q (in this order):\n%s", s, out)
				}
				rest = rest[i+len(s):]
			}
			for _, s := range tc.absent {
				if strings.Contains(out, s) {
					t.Errorf("stdout has %q:\n%s", s, out)
				}
			}
			file, err := config.Load(configFile)
			if err != nil {
				t.Fatal(err)
			}
			rc := relay.DefaultConfig()
			rc.PostgresURL = url
			err = checkAtStart(ctx, rc, configFile, file, slog.New(slog.DiscardHandler))
			if tc.atStart == "" && err != nil || tc.atStart != "" && (err == nil || !strings.Contains(err.Error(), tc.atStart)) {
				t.Errorf("run's start-up check: %v, want %q", err, tc.atStart)
			}
		})
	}
}

// TestMigrateWantsCheckpointTopic: migrate creates the checkpoint topic for
// exactly-once delivery with brokers only; at-least-once never.
func TestMigrateWantsCheckpointTopic(t *testing.T) {
	for _, tc := range []struct {
		delivery, brokers string
		want, usage       bool
	}{
		{delivery: atLeastOnce, brokers: "k:9092"},
		{delivery: atLeastOnce},
		{delivery: exactlyOnce, brokers: "k:9092", want: true},
		{delivery: exactlyOnce},
		{delivery: "exactly_once", brokers: "k:9092", usage: true},
	} {
		c := &MigrateCommand{delivery: tc.delivery, brokers: tc.brokers}
		got, err := c.wantsCheckpointTopic()
		if got != tc.want || errors.As(err, new(usageError)) != tc.usage {
			t.Errorf("delivery %q brokers %q: got %v, %v; want %v, usage error %v", tc.delivery, tc.brokers, got, err, tc.want, tc.usage)
		}
	}
}

// TestMigrateAnnouncesNoBuildOnANewTable: migrate says on stderr that an
// index build may take minutes only on a large table (64 MiB or more:
// migrations' TestClaimIndexesBuiltUnderAStatementTimeout), not on the
// status table it has just created, empty.
func TestMigrateAnnouncesNoBuildOnANewTable(t *testing.T) {
	ctx, url, _ := startDB(t)
	report := runMain(ctx, t, []string{"migrate", "--postgres-url", url, "--no-slot"}, 0, []string{"migrated"}, nil)
	if strings.Contains(report, "building index") {
		t.Errorf("migrate of a new database announced an index build:\n%s", report)
	}
}
