package pgnotice

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
		{ErrShuttingDown, true},
		{&pgconn.PgError{Code: "57P01"}, true},
		{fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{errors.New("conn closed"), true},
		{&pgconn.PgError{Code: "42501", Message: "permission denied"}, false},
		{errors.New("the outbox table left the publication"), false},
	} {
		if got := LostConnection(tt.err); got != tt.want {
			t.Errorf("LostConnection(%v) = %v, want %v", tt.err, got, tt.want)
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

// TestPostgresOutagesSayARefusedLogin: a login the server refuses (a
// rotated password, a connection limit) is said as that, not as an
// outage, and so is its end.
func TestPostgresOutagesSayARefusedLogin(t *testing.T) {
	for _, tc := range []struct {
		err        error
		want, back string
	}{
		{&pgconn.PgError{Code: "28P01", Message: `password authentication failed for user "relay"`}, "authentication failed", "accepts the relay's connections again"},
		{&pgconn.PgError{Code: "53300", Message: `too many connections for role "relay"`}, "CONNECTION LIMIT", "accepts the relay's connections again"},
		{errors.New("connection refused"), "cannot be reached", "reachable again"},
	} {
		var buf syncbuf.Buffer
		now := time.Unix(0, 0)
		tr := newPostgresOutages(slog.New(slog.NewTextHandler(&buf, nil)), "postgres://relay:s3cret@db:5432/app", func() time.Time { return now }, nil)
		tr.Failed("", tc.err)
		now = now.Add(pgOutageGrace)
		tr.Failed("", tc.err)
		tr.Succeeded()
		out := buf.String()
		for _, w := range []string{tc.want, tc.back} {
			if !strings.Contains(out, w) {
				t.Errorf("%v: the log does not say %q:\n%s", tc.err, w, out)
			}
		}
		if _, refused := tc.err.(*pgconn.PgError); refused && strings.Contains(out, "cannot be reached") {
			t.Errorf("%v: a refused login said as an outage:\n%s", tc.err, out)
		}
	}
}
