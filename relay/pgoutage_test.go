package relay

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// TestLostConnection: which session errors say PostgreSQL went away, and
// so give no warning per reconnect attempt.
func TestLostConnection(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errShuttingDown, true},
		{&pgconn.PgError{Code: "57P01"}, true},
		{fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{errors.New("conn closed"), true},
		{&pgconn.PgError{Code: "42501", Message: "permission denied"}, false},
		{errors.New("the outbox table left the publication"), false},
	} {
		if got := lostConnection(tt.err); got != tt.want {
			t.Errorf("lostConnection(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestPostgresOutagesNameTheHostsNotThePassword: the lost line names the
// server as host:port, and what to check; the password never.
func TestPostgresOutagesNameTheHostsNotThePassword(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	now := time.Unix(0, 0)
	tr := newPostgresOutages(log, "postgres://relay:s3cret@db.example:6543/app", func() time.Time { return now }, nil)
	tr.Failed("", errors.New("connection refused"))
	now = now.Add(pgOutageGrace)
	tr.Failed("", errors.New("connection refused"))
	tr.Succeeded()
	out := buf.String()
	for _, want := range []string{"PostgreSQL cannot be reached", "db.example:6543", "--postgres-url", "pg_hba.conf", "PostgreSQL is reachable again after"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("the log shows the password:\n%s", out)
	}
}
