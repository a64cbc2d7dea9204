package pgtemptest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEveryPostgresPackageIsInPGPKGS: each package whose tests start a
// PostgreSQL (they import this package) is in the Makefile's PG_PKGS, so
// that CI runs its tests on PostgreSQL 18 as well as 15; a package moved
// or split off without it would silently lose that run. The e2e suite
// and this package itself run apart.
func TestEveryPostgresPackageIsInPGPKGS(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	listed := makeList(t, string(makefile), "PG_PKGS")
	var missing []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "e2e" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), `"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"`) {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := "./" + filepath.ToSlash(rel) + "/"
		if pkg == "./internal/pgtemp/pgtemptest/" {
			return nil // this package, whose own tests name it
		}
		if !slices.Contains(listed, pkg) && !slices.Contains(missing, pkg) {
			missing = append(missing, pkg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("tests of %s start a PostgreSQL, but the Makefile's PG_PKGS lacks them: add them there (and to PG_VERSION_PKGS if their SQL or protocol differs by version)", strings.Join(missing, " "))
	}
}

// makeList returns the words of the Makefile variable name, its
// continuation lines joined.
func makeList(t *testing.T, makefile, name string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` = ((?:.*\\\n)*.*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("the Makefile has no %s", name)
	}
	return strings.Fields(strings.ReplaceAll(m[1], "\\\n", " "))
}
