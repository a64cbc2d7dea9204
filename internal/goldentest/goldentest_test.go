package goldentest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCell(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain words", "plain words"},
		{"a | b", `a \| b`},
		{"`a|b` c", "`a\\|b` c"},
		{"__consumer_offsets, _schemas, snake_case", `\_\_consumer_offsets, \_schemas, snake_case`},
		{"`_kept_` as it is", "`_kept_` as it is"},
		{"default cdc-relay.<slot>", "default cdc-relay.&lt;slot>"},
		{".* allows all", `.\* allows all`},
		{"~/.pgpass and [x]", `\~/.pgpass and \[x\]`},
		{"a ` alone", "a \\` alone"},
		{"two\nlines", "two lines"},
		{"a & b", "a &amp; b"},
	}
	for _, tt := range tests {
		if got := Cell(tt.in); got != tt.want {
			t.Errorf("Cell(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCode(t *testing.T) {
	tests := []struct{ in, want string }{
		{"--slot name", "`--slot name`"},
		{"a|b", "`a\\|b`"},
		{"`x`", "`` `x` ``"},
	}
	for _, tt := range tests {
		if got := Code(tt.in); got != tt.want {
			t.Errorf("Code(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFence(t *testing.T) {
	if got, want := Fence("text", "a\n```\nb"), "````text\na\n```\nb\n````\n"; got != want {
		t.Errorf("Fence = %q, want %q", got, want)
	}
}

func TestAnchor(t *testing.T) {
	tests := []struct{ in, want string }{
		{"cdc-relay check-config", "cdc-relay-check-config"},
		{"tables[].write_back", "tableswrite_back"},
		{"Parked events (the status table)", "parked-events-the-status-table"},
	}
	for _, tt := range tests {
		if got := Anchor(tt.in); got != tt.want {
			t.Errorf("Anchor(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFirstDifference(t *testing.T) {
	tests := []struct{ have, want, says string }{
		{"a\nb\n", "a\nc\n", `line 2:` + "\n" + `  have: "b"` + "\n" + `  want: "c"`},
		{"a\n", "a\nb\n", `line 2:` + "\n" + `  have: ""` + "\n" + `  want: "b"`},
		{"a", "a\nb", `line 2:` + "\n" + `  have: "(end of file)"`},
	}
	for _, tt := range tests {
		if got := firstDifference(tt.have, tt.want); !strings.Contains(got, tt.says) {
			t.Errorf("firstDifference(%q, %q) = %q, want it to say %q", tt.have, tt.want, got, tt.says)
		}
	}
}

// fakeTB records the first failure of Check, which goes on past it.
type fakeTB struct {
	testing.TB
	failure string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	if f.failure == "" {
		f.failure = fmt.Sprintf(format, args...)
	}
}

func (f *fakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

// TestCheck: an equal file passes; a stale or missing one fails, naming
// the file and the command that rewrites it.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "docs", "x.md"), []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const regen = "go test ./x/ -run TestX -update"
	tests := []struct {
		rel, want, failure string
	}{
		{"docs/x.md", "same\n", ""},
		{"docs/x.md", "other\n", "docs/x.md is stale: run `" + regen + "`\nfirst difference, line 1:"},
		{"docs/y.md", "same\n", "docs/y.md is missing: run `" + regen + "`"},
	}
	for _, tt := range tests {
		f := &fakeTB{TB: t}
		Check(f, dir, tt.rel, []byte(tt.want), regen)
		if tt.failure == "" && f.failure != "" || !strings.HasPrefix(f.failure, tt.failure) {
			t.Errorf("%s with %q: failure %q, want %q", tt.rel, tt.want, f.failure, tt.failure)
		}
	}
}
