package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
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
			if tc.outbox != "" {
				outbox = tc.outbox
			}
			grants := append([]grant{
				{status, "SELECT, INSERT, UPDATE, DELETE"}, {checkpoint, "SELECT, INSERT, UPDATE"}, {outbox, "SELECT, DELETE"},
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
