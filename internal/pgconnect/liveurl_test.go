package pgconnect

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	u := NewLiveURL(first, file, slog.New(slog.NewTextHandler(&buf, nil)))
	if got := u.Get(); got != first {
		t.Fatalf("get = %q, want %q", got, first)
	}
	write("  " + second + "\n")
	if got := u.Get(); got != second {
		t.Fatalf("after the file changed, get = %q, want %q", got, second)
	}
	write("postgres://relay:third-s3cret@db:notaport/app")
	for range 3 {
		if got := u.Get(); got != second {
			t.Fatalf("with a file that does not parse, get = %q, want the last that did, %q", got, second)
		}
	}
	write("")
	u.Get()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	u.Get()
	write(first)
	if got := u.Get(); got != first {
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
}
