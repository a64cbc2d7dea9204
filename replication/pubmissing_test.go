package replication

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestPublicationMissing: the walsender's error for a publication missing
// as of the WAL it decodes is told apart from other missing objects.
func TestPublicationMissing(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("replication slot %q: %w", "s", &pgconn.PgError{Code: "42704", Message: `publication "cdc_relay" does not exist`}), true},
		{&pgconn.PgError{Code: "42704", Message: `replication slot "s" does not exist`}, false},
		{&pgconn.PgError{Code: "XX000", Message: `publication "cdc_relay" does not exist`}, false},
		{fmt.Errorf(`publication "cdc_relay" does not exist`), false},
	} {
		if got := PublicationMissing(tc.err); got != tc.want {
			t.Errorf("PublicationMissing(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
