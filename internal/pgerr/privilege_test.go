package pgerr_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// TestPrivilege: each way PostgreSQL refuses the relay's role a privilege
// is named with what fixes it and the role's own name (the REPLICATION
// attribute's ALTER ROLE, a schema's GRANT USAGE, the command that prints
// every GRANT); anything else is no missing privilege.
func TestPrivilege(t *testing.T) {
	denied := func(msg string) error {
		return fmt.Errorf("read checkpoint: %w", &pgconn.PgError{Severity: "ERROR", Code: "42501", Message: msg})
	}
	for _, tt := range []struct {
		name string
		err  error
		role string
		want []string // in the fix; none: not a missing privilege
	}{
		{"table", denied("permission denied for table cdc_relay_checkpoint"), "relay",
			[]string{`the role "relay" lacks a privilege on table cdc_relay_checkpoint`, "the database's administrator", "`cdc-relay migrate --print-grants relay`"}},
		{"sequence", denied("permission denied for sequence cdc_relay_status_id_seq"), "relay",
			[]string{"sequence cdc_relay_status_id_seq", "`cdc-relay migrate --print-grants relay`"}},
		{"schema", denied("permission denied for schema events"), "relay",
			[]string{`GRANT USAGE ON SCHEMA "events" TO "relay";`, "`cdc-relay migrate --print-grants relay`"}},
		{"walsender before 16", denied("must be superuser or replication role to start walsender"), "relay",
			[]string{`lacks the REPLICATION attribute`, `ALTER ROLE "relay" WITH REPLICATION;`}},
		{"walsender since 16", denied("permission denied to start WAL sender"), "relay",
			[]string{`ALTER ROLE "relay" WITH REPLICATION;`}},
		{"slots before 16", denied("must be superuser or replication role to use replication slots"), "relay",
			[]string{`ALTER ROLE "relay" WITH REPLICATION;`}},
		{"slots since 16", denied("permission denied to use replication slots"), "relay",
			[]string{`ALTER ROLE "relay" WITH REPLICATION;`}},
		{"other", denied("must be owner of table outbox"), "relay",
			[]string{`the role "relay" lacks a privilege`, "`cdc-relay migrate --print-grants relay`"}},
		{"a role a shell would split", denied("permission denied for table t"), "App Relay",
			[]string{`"App Relay"`, "`cdc-relay migrate --print-grants 'App Relay'`"}},
		{"no role read", denied("permission denied for table t"), "",
			[]string{"`cdc-relay migrate --print-grants <role>`"}},
		{"undefined table", &pgconn.PgError{Code: "42P01", Message: `relation "x" does not exist`}, "relay", nil},
		{"bad password", &pgconn.PgError{Code: "28P01", Message: "password authentication failed"}, "relay", nil},
		{"not PostgreSQL's", errors.New("permission denied for table t"), "relay", nil},
		{"nil", nil, "relay", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fix, ok := pgerr.Privilege(tt.err, tt.role)
			if ok != (tt.want != nil) {
				t.Fatalf("Privilege(%v) = %q, %v; want ok %v", tt.err, fix, ok, tt.want != nil)
			}
			for _, w := range tt.want {
				if !strings.Contains(fix, w) {
					t.Errorf("Privilege(%v) = %q, want it to say %q", tt.err, fix, w)
				}
			}
			if strings.Contains(fix, "\n") {
				t.Errorf("fix %q has a line break", fix)
			}
		})
	}
}

// TestMigrateAs: migrate refused a privilege is told to run as the
// database's administrator, naming the schema or object's owner, and
// then the grants for the relay's role; the error is kept, and any other
// error, or a missing REPLICATION (the slot, which migrate reports
// itself), is returned as it is.
func TestMigrateAs(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want []string // none: unchanged
	}{
		{"schema", &pgconn.PgError{Code: "42501", Message: "permission denied for schema public"},
			[]string{"permission denied for schema public",
				`run migrate as the database's administrator (the owner of schema public, or a superuser; it ran as "app"), then ` +
					"`cdc-relay migrate --print-grants app` for the relay's role"}},
		{"owner", &pgconn.PgError{Code: "42501", Message: "must be owner of table outbox"},
			[]string{"(the owner of outbox, or a superuser;"}},
		{"database", &pgconn.PgError{Code: "42501", Message: "permission denied for database app"},
			[]string{"(the owner of database app, or a superuser;"}},
		{"other", &pgconn.PgError{Code: "42501", Message: "permission denied to create role"},
			[]string{"(the owner of the relay's schema, or a superuser;"}},
		{"replication", &pgconn.PgError{Code: "42501", Message: "permission denied to use replication slots"}, nil},
		{"said already", fmt.Errorf("create the reset trigger on outbox: this role may not: run migrate as a role that may create triggers on the table (its owner): %w",
			&pgconn.PgError{Code: "42501", Message: "must be owner of table outbox"}), nil},
		{"not a privilege", &pgconn.PgError{Code: "42P07", Message: `relation "outbox" already exists`}, nil},
		{"not PostgreSQL's", errors.New("boom"), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := pgerr.MigrateAs(tt.err, "app")
			if tt.want == nil {
				if got != tt.err {
					t.Fatalf("MigrateAs(%v) = %v, want it unchanged", tt.err, got)
				}
				return
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("MigrateAs(%v) does not wrap the error", tt.err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("MigrateAs(%v) = %q, want it to say %q", tt.err, got, w)
				}
			}
		})
	}
}

// TestRowSecurity: PostgreSQL's refusal of a read that row-level security
// would filter (row_security off) is told with its fixes for the role; a
// plain missing privilege is not, and Privilege gives the same fix.
func TestRowSecurity(t *testing.T) {
	rls := &pgconn.PgError{Code: "42501", Message: `query would be affected by row-level security policy for table "out"box"`}
	fix, ok := pgerr.RowSecurity(fmt.Errorf("read: %w", rls), "relay")
	for _, want := range []string{`ALTER ROLE "relay" BYPASSRLS`, `CREATE POLICY cdc_relay_reads ON "out""box" FOR SELECT TO "relay" USING (true);`, "owner"} {
		if !ok || !strings.Contains(fix, want) {
			t.Errorf("RowSecurity = %q, %v; want it to say %q", fix, ok, want)
		}
	}
	if p, _ := pgerr.Privilege(rls, "relay"); p != fix {
		t.Errorf("Privilege = %q, want RowSecurity's %q", p, fix)
	}
	if _, ok := pgerr.RowSecurity(&pgconn.PgError{Code: "42501", Message: "permission denied for table outbox"}, "relay"); ok {
		t.Errorf("RowSecurity took a missing GRANT for row-level security")
	}
}

// TestRowSecurityRefusedWrite: a write a policy refuses ("new row
// violates row-level security policy", on the relay's own tables) is not
// taken for the refused read: Privilege tells the write's fixes.
func TestRowSecurityRefusedWrite(t *testing.T) {
	for _, msg := range []string{
		`new row violates row-level security policy for table "outbox_delivery"`,
		`new row violates row-level security policy "tenant" for table "outbox_delivery"`,
	} {
		err := &pgconn.PgError{Code: "42501", Message: msg}
		if fix, ok := pgerr.RowSecurity(err, "relay"); ok {
			t.Errorf("RowSecurity(%q) = %q: took a refused write for a refused read", msg, fix)
		}
		fix, ok := pgerr.Privilege(err, "relay")
		for _, want := range []string{`"outbox_delivery"`, `ALTER ROLE "relay" BYPASSRLS`, "WITH CHECK (true)"} {
			if !ok || !strings.Contains(fix, want) {
				t.Errorf("Privilege(%q) = %q, %v; want it to say %q", msg, fix, ok, want)
			}
		}
		if strings.Contains(fix, "FOR SELECT") {
			t.Errorf("Privilege(%q) = %q: the read's fix for a write", msg, fix)
		}
	}
}
