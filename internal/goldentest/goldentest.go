// Package goldentest keeps a file of the repository that is generated
// from the code (the reference pages of docs/reference/) equal to what
// the code generates now: a test generates the file's text and calls
// [Check], which fails naming the command that rewrites it, and with the
// test flag -update rewrites it instead. Only tests import it.
package goldentest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is the test flag -update: rewrite the generated files.
var update = flag.Bool("update", false, "rewrite the generated files the golden tests compare against (docs/reference/*.md)")

// Check compares the file at root/rel (rel is the path in the repository,
// slash-separated, such as "docs/reference/cli.md"; root the repository's
// root as seen from the test's package, such as "../..") with want, the
// text the code generates. It fails t when they differ, naming regen, the
// command that rewrites the file, and the first line that differs. With
// -update it writes want to the file instead, creating its directory.
func Check(t testing.TB, root, rel string, want []byte, regen string) {
	t.Helper()
	path := filepath.Join(root, filepath.FromSlash(rel))
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", rel)
		return
	}
	have, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Fatalf("%s is missing: run `%s`", rel, regen)
	case err != nil:
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatalf("%s is stale: run `%s`\n%s", rel, regen, firstDifference(string(have), string(want)))
	}
}

// firstDifference describes the first line where have and want differ,
// counted from 1, for a message: "line 12: have …, want …".
func firstDifference(have, want string) string {
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(h), len(w)); i++ {
		var hl, wl string
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if i >= len(h) || i >= len(w) || hl != wl {
			return fmt.Sprintf("first difference, line %d:\n  have: %q\n  want: %q", i+1, lineOrEnd(h, i), lineOrEnd(w, i))
		}
	}
	return "they differ"
}

// lineOrEnd is lines[i], or "(end of file)" past the last.
func lineOrEnd(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}
