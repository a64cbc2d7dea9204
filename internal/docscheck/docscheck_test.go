package docscheck

import (
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// skipDir says a directory holds no Markdown of the repository's own.
func skipDir(name string) bool {
	switch name {
	case ".git", "node_modules", "testdata", "vendor", ".cache", "dist", "bin":
		return true
	}
	return false
}

// repoFiles returns the repository's files whose names end in one of
// exts, as slash-separated paths from its root.
func repoFiles(t *testing.T, exts ...string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		for _, ext := range exts {
			if strings.HasSuffix(d.Name(), ext) {
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				files = append(files, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsLinksResolve: every relative link and image of every Markdown
// file names a file or directory of the repository, and a link with an
// anchor into a Markdown file (or within one) names an anchor it has.
func TestDocsLinksResolve(t *testing.T) {
	files := repoFiles(t, ".md")
	if !slices.Contains(files, "README.md") {
		t.Fatalf("no README.md among the Markdown files found from %s: %v", root, files)
	}
	anchors := map[string]map[string]bool{} // by file, read once
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := anchors[rel]; ok {
			return a
		}
		a := Anchors(read(t, rel))
		anchors[rel] = a
		return a
	}
	for _, file := range files {
		for _, l := range Links(read(t, file)) {
			if l.External() {
				continue
			}
			target := file
			if p := l.Path(); p != "" {
				unescaped, err := url.PathUnescape(p)
				if err != nil {
					t.Errorf("%s: %v: %v", file, l, err)
					continue
				}
				if strings.HasPrefix(unescaped, "/") {
					target = path.Clean(strings.TrimPrefix(unescaped, "/"))
				} else {
					target = path.Join(path.Dir(file), unescaped)
				}
				if strings.HasPrefix(target, "../") || target == ".." {
					t.Errorf("%s: %v: outside the repository", file, l)
					continue
				}
				info, err := os.Stat(filepath.Join(root, filepath.FromSlash(target)))
				if err != nil {
					t.Errorf("%s: %v: no file %s", file, l, target)
					continue
				}
				if info.IsDir() {
					continue
				}
			}
			anchor, err := url.PathUnescape(l.Anchor())
			if err != nil || anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if !anchorsOf(target)[anchor] {
				t.Errorf("%s: %v: %s has no anchor #%s", file, l, target, anchor)
			}
		}
	}
}

// docPath is a path of the repository's Markdown as the code, the
// manifests and the comments name it ("see docs/parked-events.md").
var docPath = regexp.MustCompile(`\b(?:docs|examples)/[A-Za-z0-9_./-]*\.md\b`)

// TestDocsNamedElsewhereExist: a page that a help text, an error message,
// a manifest or a comment names (docs/….md) exists, so that what the code
// tells users to read is there. Tests are left out: they name pages of
// their fixtures.
func TestDocsNamedElsewhereExist(t *testing.T) {
	for _, file := range repoFiles(t, ".go", ".yaml", ".yml", ".txt", ".tpl", ".env", ".sh", "Makefile") {
		if strings.HasPrefix(file, "internal/docscheck/") || strings.HasSuffix(file, "_test.go") {
			continue // tests name pages of their own fixtures
		}
		for _, p := range slices.Compact(docPath.FindAllString(read(t, file), -1)) {
			p = path.Clean(p)
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
				t.Errorf("%s names %s, which does not exist", file, p)
			}
		}
	}
}

// TestMakeHelpLinesAreWhole: each "## target: what it does" comment of
// the Makefile, which `make help` prints, is the whole of its comment:
// make help prints that line only, so a comment line after it would be
// cut from the help.
func TestMakeHelpLinesAreWhole(t *testing.T) {
	lines := strings.Split(read(t, "Makefile"), "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "## ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "#") {
			t.Errorf("Makefile:%d: %q goes on at line %d, which make help leaves out: say it on the one line", i+1, line, i+2)
		}
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Quick start": "quick-start",
		"Running it against your PostgreSQL and Kafka": "running-it-against-your-postgresql-and-kafka",
		"0.5.0": "050",
		"Table or messages: cdc_relay.emit as SQL against the bare call": "table-or-messages-cdc_relayemit-as-sql-against-the-bare-call",
		"`cdc-relay failed`: list, retry":                                "cdc-relay-failed-list-retry",
		"Backfill: publishing a range again":                             "backfill-publishing-a-range-again",
		"A team's own progress table":                                    "a-teams-own-progress-table",
		"[The link](x.md) and *emphasis*":                                "the-link-and-emphasis",
		"Kafka  security":                                                "kafka--security",
		"Drain: 1000000 rows, 1000 per transaction, ~300-byte payloads":  "drain-1000000-rows-1000-per-transaction-300-byte-payloads",
		"Before and after (issue 44, part C)":                            "before-and-after-issue-44-part-c",
		"Ünïcode héading":                                                "ünïcode-héading",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAnchors(t *testing.T) {
	src := "# Title\n\n## Usage\n\ntext <a id=\"an-id\"></a> and `<a id=\"in-code\">`\n\n" +
		"```sh\n# not a heading\n```\n\n## Usage\n\n### Usage\n\n#not-a-heading\n\n## Closed ##\n" +
		"<!-- ## hidden -->\n"
	got := Anchors(src)
	for _, want := range []string{"title", "usage", "usage-1", "usage-2", "an-id", "closed"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	for _, not := range []string{"not-a-heading", "in-code", "hidden", "not-a-heading-1"} {
		if got[not] {
			t.Errorf("anchor %q, which is not one, in %v", not, got)
		}
	}
}

func TestLinks(t *testing.T) {
	src := "See [a](docs/a.md#x), [`b`](b.md \"title\") and ![img](pic.png).\n" +
		"Not `[code](c.md)`, nor:\n```\n[fenced](d.md)\n```\n" +
		"[ref]: docs/e.md\n[same](#here) [web](https://example.com/f.md) <!-- [gone](g.md) -->\n" +
		"[nested [brackets]](h.md)\n"
	var got []string
	for _, l := range Links(src) {
		if !l.External() {
			got = append(got, l.Target)
		}
	}
	want := []string{"docs/a.md#x", "b.md", "pic.png", "docs/e.md", "#here", "h.md"}
	if !slices.Equal(got, want) {
		t.Errorf("Links = %q, want %q", got, want)
	}
}
