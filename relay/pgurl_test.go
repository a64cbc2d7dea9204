package relay

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// TestLiveURLReadsTheFileAgain: with --postgres-url-file, each new
// connection gets the file's latest connection string; a file that no
// longer parses, is empty or is gone is said once per problem, without
// its contents, and the last string that parsed is used meanwhile; the
// file made right again is said once.
func TestLiveURLReadsTheFileAgain(t *testing.T) {
	var buf syncbuf.Buffer
	file := filepath.Join(t.TempDir(), "url")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const first, second = "postgres://relay:first-s3cret@db/app", "postgres://relay:second-s3cret@db/app"
	write(first + "\n")
	u := newLiveURL(Config{PostgresURL: first, PostgresURLFile: file, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if got := u.get(); got != first {
		t.Fatalf("get = %q, want %q", got, first)
	}
	write("  " + second + "\n")
	if got := u.get(); got != second {
		t.Fatalf("after the file changed, get = %q, want %q", got, second)
	}
	write("postgres://relay:third-s3cret@db:notaport/app")
	for range 3 {
		if got := u.get(); got != second {
			t.Fatalf("with a file that does not parse, get = %q, want the last that did, %q", got, second)
		}
	}
	write("")
	u.get()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	u.get()
	write(first)
	if got := u.get(); got != first {
		t.Fatalf("after the file was made right, get = %q, want %q", got, first)
	}
	out := buf.String()
	if n := strings.Count(out, "holds no usable connection string"); n != 3 {
		t.Errorf("%d warnings, want 3 (unparsable, empty, gone), each once:\n%s", n, out)
	}
	if n := strings.Count(out, "usable connection string again"); n != 1 {
		t.Errorf("%d lines say the file is usable again, want 1:\n%s", n, out)
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("the log shows a password:\n%s", out)
	}
	if got := (Config{PostgresURL: first}).postgresURL(); got != first {
		t.Errorf("a Config not made by New: postgresURL = %q, want PostgresURL", got)
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
