package preflight

import (
	"strings"
	"testing"
	"time"
)

// TestCheckPrivileges: a role with some grants lacks the others, named per
// table with the GRANT that gives them to the role; a role granted
// through another role has them; a missing table is passed over.
//
// The roles are the test's own (named after its database): roles are the
// cluster's.
func TestCheckPrivileges(t *testing.T) {
	t.Parallel()
	ctx, db, conn := pg.ConnectDB(t, 2*time.Minute, schema...)
	partial, writers, member := db.Name+"_partial", db.Name+"_writers", db.Name+"_member"
	for _, sql := range []string{
		`CREATE ROLE ` + partial, `GRANT SELECT ON ledger TO ` + partial,
		`CREATE ROLE ` + writers, `GRANT SELECT, INSERT, UPDATE ON ledger, notes TO ` + writers,
		`CREATE ROLE ` + member + ` IN ROLE ` + writers,
		`CREATE TABLE parked (id bigserial PRIMARY KEY)`,
		`GRANT USAGE ON SEQUENCE parked_id_seq TO ` + writers,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	needs := []Privilege{
		{Table: `"public"."ledger"`, What: "the status table", Need: []string{"SELECT", "INSERT", "UPDATE"}},
		{Table: `"public"."notes"`, What: "the checkpoint table", Need: []string{"SELECT", "UPDATE"}},
		{Table: `"public"."nosuch"`, What: "the pause table", Need: []string{"SELECT"}},
		{Table: `"public"."parked"`, What: "the sequence of the status table's id", SerialColumn: "id", Need: []string{"USAGE"}},
		{Table: `"public"."nosuch"`, What: "a missing table's sequence", SerialColumn: "id", Need: []string{"USAGE"}},
	}
	for _, tc := range []struct {
		name, role string
		want       []string
	}{
		{name: "partial", role: partial, want: []string{
			`"public"."ledger"||the relay's role lacks INSERT, UPDATE on it (the status table): as an administrator, run GRANT INSERT, UPDATE ON "public"."ledger" TO "` + partial + `"; (` + "`cdc-relay migrate --print-grants " + partial + "`" + ` prints every grant the relay's role needs)`,
			`"public"."notes"||the relay's role lacks SELECT, UPDATE on it (the checkpoint table): as an administrator, run GRANT SELECT, UPDATE ON "public"."notes" TO "` + partial + `"; (` + "`cdc-relay migrate --print-grants " + partial + "`" + ` prints every grant the relay's role needs)`,
			`"public"."parked"||the relay's role lacks USAGE on it (the sequence of the status table's id): as an administrator, run GRANT USAGE ON SEQUENCE public.parked_id_seq TO "` + partial + `"; (` + "`cdc-relay migrate --print-grants " + partial + "`" + ` prints every grant the relay's role needs)`,
		}},
		{name: "member", role: member},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := conn.Exec(ctx, "SET ROLE "+tc.role); err != nil {
				t.Fatal(err)
			}
			defer func() { _, _ = conn.Exec(ctx, "RESET ROLE") }()
			problems, err := CheckPrivileges(ctx, conn, needs)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				if !strings.HasPrefix(p.Grant, "GRANT ") || !strings.Contains(p.Msg, p.Grant) {
					t.Errorf("problem %q: Grant %q, want the GRANT it names", p.Msg, p.Grant)
				}
			}
			if got := problemStrings(problems); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
