package fatal

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestClassify: bad credentials, a pg_hba.conf rejection and the rest of
// SQLSTATE class 42 end Run; a missing privilege (42501, the REPLICATION
// attribute or a GRANT) does not: it is granted while the relay retries,
// not ready.
func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		err   error
		fatal bool
	}{
		{&pgconn.PgError{Code: "28P01", Message: "password authentication failed"}, true},
		{&pgconn.PgError{Code: "28000", Message: "no pg_hba.conf entry"}, true},
		{&pgconn.PgError{Code: "42704", Message: `publication "p" does not exist`}, true},
		{&pgconn.PgError{Code: "42501", Message: "must be superuser or replication role to start walsender"}, false},
		{&pgconn.PgError{Code: "42501", Message: "permission denied to use replication slots"}, false},
		{&pgconn.PgError{Code: "42501", Message: "permission denied for table cdc_relay_checkpoint"}, false},
		{&pgconn.PgError{Code: "57P01"}, false},
		{errors.New("conn closed"), false},
	} {
		err := Classify(fmt.Errorf("open replication connection: %w", tt.err))
		if got := Is(err); got != tt.fatal {
			t.Errorf("Classify(%v): fatal %v, want %v", tt.err, got, tt.fatal)
		}
	}
}
