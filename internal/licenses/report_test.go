package licenses

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// collectRelay collects the entries of the relay's binary, as
// `make licenses` does.
func collectRelay(t *testing.T) []Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	entries, err := Collect(ctx, "../..", "./cmd/cdc-relay")
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestReportIsCurrent fails when a dependency changed and
// docs/DEPENDENCIES.md was not regenerated, or a dependency's license is
// not allowed.
func TestReportIsCurrent(t *testing.T) {
	entries := collectRelay(t)
	if err := Check(entries); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := WriteReport(&got, entries); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../docs/DEPENDENCIES.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("docs/DEPENDENCIES.md is out of date with the modules the binary links: run `make licenses` and commit the file.\n%s",
			firstDifference(got.String(), string(want)))
	}
}

// firstDifference says where got and want first differ, by line.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: the generator writes %q, the file has %q", i+1, gl, wl)
		}
	}
	return "they differ"
}

// TestNotices checks that THIRD_PARTY_NOTICES names every module under a
// heading, carries the NOTICE files, and is the same bytes from two runs.
func TestNotices(t *testing.T) {
	entries := collectRelay(t)
	var first, second bytes.Buffer
	if err := WriteNotices(&first, entries); err != nil {
		t.Fatal(err)
	}
	if err := WriteNotices(&second, collectRelay(t)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatal("two runs wrote different notices")
	}
	text := first.String()
	notices := 0
	for _, e := range entries {
		name := e.Path
		if name == StdPath {
			name = "Go standard library"
		}
		heading := rule + "\n" + name + " " + e.Version + " (" + e.Classification.Expression() + ")\n" + rule
		if !strings.Contains(text, heading) {
			t.Errorf("the notices have no heading %q", heading)
		}
		if !strings.Contains(text, e.License) {
			t.Errorf("the notices lack %s's license text", e.Path)
		}
		if e.Notice != "" {
			notices++
			if !strings.Contains(text, "--- NOTICE ---\n\n"+e.Notice) {
				t.Errorf("the notices lack %s's NOTICE file", e.Path)
			}
		}
	}
	if notices == 0 {
		t.Error("no module has a NOTICE file; the prometheus modules have one")
	}
	// Packages copied from other projects keep their license files below
	// the module's root; the notices must carry them.
	for _, want := range []string{"--- zstd/internal/xxhash/LICENSE.txt ---", "--- internal/github.com/golang/gddo/LICENSE ---", "--- simplelru/LICENSE_list ---"} {
		if !strings.Contains(text, want) {
			t.Errorf("the notices lack %q", want)
		}
	}
}

// TestListReachesEveryTarget checks that the union covers what only one
// target links, and that the main module is not in it. procfs is linked
// only on linux (prometheus's process collector); no module is linked
// only on darwin today, its platform code being in x/sys and std, which
// every target links.
func TestListReachesEveryTarget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mods, err := List(ctx, "../..", "./cmd/cdc-relay", ReleaseTargets())
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, m := range mods {
		paths[m.Path] = true
		if m.Dir == "" {
			t.Errorf("%s has no directory", m.Path)
		}
	}
	for _, want := range []string{StdPath, "github.com/jackc/pgx/v5", "golang.org/x/sys", "github.com/prometheus/procfs"} {
		if !paths[want] {
			t.Errorf("List did not reach %s", want)
		}
	}
	if paths["github.com/cdc-relay/cdc-relay"] {
		t.Error("List names the main module")
	}
	darwin, err := List(ctx, "../..", "./cmd/cdc-relay", []Target{{OS: "darwin", Arch: "arm64"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range darwin {
		if m.Path == "github.com/prometheus/procfs" {
			t.Error("List for darwin alone names procfs: the target's GOOS is not applied, so the union proves nothing")
		}
	}
}
