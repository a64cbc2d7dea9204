package pgerr_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// TestRefused: a login PostgreSQL refuses is said as what it is (the
// password, pg_hba.conf, the role's login, a connection limit) with what
// to check, never as an outage; any other error is not a refusal.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want []string // in the sentence; none: not a refusal
	}{
		{"password", &pgconn.PgError{Code: "28P01", Message: `password authentication failed for user "relay"`},
			[]string{"authentication failed", "--postgres-url-file", ".pgpass", "ALTER ROLE"}},
		{"pg_hba", &pgconn.PgError{Code: "28000", Message: `no pg_hba.conf entry for host "10.0.0.1", user "relay", database "app", no encryption`},
			[]string{"pg_hba.conf", "pg_reload_conf"}},
		{"no login", &pgconn.PgError{Code: "28000", Message: `role "relay" is not permitted to log in`},
			[]string{"authentication failed", "LOGIN"}},
		{"role limit", &pgconn.PgError{Code: "53300", Message: `too many connections for role "relay"`},
			[]string{"CONNECTION LIMIT", "ALTER ROLE"}},
		{"server limit", &pgconn.PgError{Code: "53300", Message: "sorry, too many clients already"},
			[]string{"max_connections"}},
		{"wrapped", fmt.Errorf("connect: %w", &pgconn.PgError{Code: "28P01"}), []string{"authentication failed"}},
		{"outage", errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"), nil},
		{"shutdown", &pgconn.PgError{Code: "57P03", Message: "the database system is shutting down"}, nil},
		{"privilege", &pgconn.PgError{Code: "42501", Message: "permission denied for table outbox"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pgerr.Refused(tc.err)
			if tc.want == nil {
				if got != "" {
					t.Fatalf("Refused = %q, want none", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Refused = %q, want it to say %q", got, w)
				}
			}
			if strings.Contains(got, "cannot be reached") {
				t.Errorf("Refused = %q: a refusal is no outage", got)
			}
		})
	}
}

// TestReadOnlyHint: a write refused as read-only names the settings that
// make a session read-only (a standby, the role's or database's default)
// and how to undo the default; other errors get no hint.
func TestReadOnlyHint(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"read-only", fmt.Errorf("save checkpoint: %w", &pgconn.PgError{Code: "25006", Message: "cannot execute INSERT in a read-only transaction"}),
			[]string{"standby", "target_session_attrs=read-write", "ALTER ROLE <role> SET default_transaction_read_only = off", "ALTER DATABASE"}},
		{"other", &pgconn.PgError{Code: "42P01"}, nil},
		{"plain", errors.New("boom"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pgerr.ReadOnlyHint(tc.err)
			if tc.want == nil && got != "" {
				t.Fatalf("ReadOnlyHint = %q, want none", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("ReadOnlyHint = %q, want it to say %q", got, w)
				}
			}
		})
	}
}

// TestMissingTableHint: a missing table (42P01) names `cdc-relay migrate`
// and the grants; other errors get no hint.
func TestMissingTableHint(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("claim: %w", &pgconn.PgError{Code: "42P01", Message: `relation "public.outbox_delivery" does not exist`}), true},
		{&pgconn.PgError{Code: "42501"}, false},
		{errors.New("boom"), false},
	} {
		got := pgerr.MissingTableHint(tc.err)
		if tc.want != (got != "") {
			t.Errorf("MissingTableHint(%v) = %q", tc.err, got)
		}
		if tc.want && (!strings.Contains(got, "cdc-relay migrate") || !strings.Contains(got, "--print-grants")) {
			t.Errorf("MissingTableHint(%v) = %q, want it to name migrate and its grants", tc.err, got)
		}
	}
}
