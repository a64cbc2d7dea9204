package pgconnect

import (
	"strings"
	"testing"
)

// TestMultiHostWarning: a connection string of several servers is warned
// of unless it asks for a server that accepts writes; one server, or a
// string that does not parse, is not.
func TestMultiHostWarning(t *testing.T) {
	t.Setenv("PGTARGETSESSIONATTRS", "")
	for in, warn := range map[string]bool{
		"postgres://relay@db1:5432,db2:5432/app":                             true,
		"postgres://relay@db1,db2/app?target_session_attrs=any":              true,
		"postgres://relay@db1,db2/app?target_session_attrs=prefer-standby":   true,
		"postgres://relay@db1,db2/app?target_session_attrs=read-write":       false,
		"postgres://relay@db1,db2/app?target_session_attrs=primary":          false,
		"host=db1,db2 port=5432,5433 user=relay dbname=app":                  true,
		"host=db1,db2 user=relay dbname=app target_session_attrs=read-write": false,
		"postgres://relay@db1/app":                                           false,
		"postgres://relay@db1:5432,db1:5432/app":                             false, // one server, twice
		"postgres://relay@db1/app?sslmode=prefer":                            false, // TLS, then plain: one server
		"postgres://relay:s3cret@db1,db2/app?target_session_attrs=nonsense":  false, // refused where it is used
	} {
		got := MultiHostWarning(in)
		if (got != "") != warn {
			t.Errorf("MultiHostWarning(%q) = %q, want a warning %v", in, got, warn)
		}
		if warn && (!strings.Contains(got, "target_session_attrs=read-write") || strings.Contains(got, "s3cret")) {
			t.Errorf("MultiHostWarning(%q) = %q: want what to add, and no password", in, got)
		}
	}
	t.Setenv("PGTARGETSESSIONATTRS", "read-write")
	if got := MultiHostWarning("postgres://relay@db1,db2/app"); got != "" {
		t.Errorf("with PGTARGETSESSIONATTRS=read-write: %q", got)
	}
}
