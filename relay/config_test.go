package relay

import "testing"

// TestPostgresURLWithoutNew: a Config not made by New (no
// --postgres-url-file read) gives every new connection PostgresURL.
func TestPostgresURLWithoutNew(t *testing.T) {
	const url = "postgres://relay:s3cret@db/app"
	if got := (Config{PostgresURL: url}).postgresURL(); got != url {
		t.Errorf("a Config not made by New: postgresURL = %q, want PostgresURL", got)
	}
}
