package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// testID names a top-level test of a package.
type testID struct{ Package, Test string }

// verdicts says, per test, which runs (JSON files) passed or skipped it.
type verdicts struct {
	passed  map[testID][]string
	skipped map[testID][]string
	timed   *reporter // every run's finished top-level tests, Package naming the run too
}

// newVerdicts returns verdicts of no run yet.
func newVerdicts() verdicts {
	return verdicts{passed: map[testID][]string{}, skipped: map[testID][]string{}, timed: newReporter(io.Discard)}
}

// runAxes checks that every top-level test of pkgs passed in at least one
// JSON file of dir, writing the verdict to out; it returns 0 when all did,
// 1 naming those that did not, 2 when it could not tell.
func runAxes(dir string, pkgs []string, out io.Writer) int {
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	v, files, err := readRuns(dir)
	if err == nil && files == 0 {
		err = fmt.Errorf("no JSON file in %s: run the steps with %s=%s first", dir, jsonDirEnv, dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "axes:", err)
		return 2
	}
	tests, err := listTests(pkgs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "axes:", err)
		return 2
	}
	fmt.Fprintln(out, "axes: the slowest tests of all runs:")
	for _, x := range v.timed.slowest(10) {
		fmt.Fprintf(out, "axes: %8.1f s  %-4s %s  %s\n", x.Elapsed, x.Action, x.Test, x.Package)
	}
	missing := v.missing(tests)
	for _, line := range missing {
		fmt.Fprintln(out, "axes:", line)
	}
	if len(missing) > 0 {
		fmt.Fprintf(out, "axes: %d of %d tests passed on no axis (%d runs in %s): add each to the Makefile list of the axis it needs (KFAKE_TESTS, PG_CORE_TESTS) or fix its skip\n",
			len(missing), len(tests), files, dir)
		return 1
	}
	fmt.Fprintf(out, "axes: each of %d tests passed on at least one axis (%d runs in %s)\n", len(tests), files, dir)
	return 0
}

// readRuns reads every *.json file of dir.
func readRuns(dir string) (verdicts, int, error) {
	v := newVerdicts()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return v, 0, err
	}
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return v, 0, err
		}
		err = v.add(f, filepath.Base(name))
		f.Close()
		if err != nil {
			return v, 0, fmt.Errorf("%s: %w", name, err)
		}
	}
	return v, len(names), nil
}

// add records the verdicts on top-level tests of one run's JSON, named
// run. A test that passed with subtests, all skipped (each called
// e.needKfake, say), counts as skipped: go test reports it passed.
func (v verdicts) add(in io.Reader, run string) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	ends := map[testID]string{} // every test's and subtest's last action
	var tops []testID
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		if ev.Action != "pass" && ev.Action != "fail" && ev.Action != "skip" {
			continue
		}
		id := testID{ev.Package, ev.Test}
		ends[id] = ev.Action
		if !strings.Contains(ev.Test, "/") {
			tops = append(tops, id)
			if ev.Action != "skip" {
				v.timed.results = append(v.timed.results, result{ev.Package + " (" + run + ")", ev.Test, ev.Action, ev.Elapsed})
			}
		}
	}
	for _, id := range tops {
		switch {
		case ends[id] == "pass" && ran(ends, id):
			v.passed[id] = append(v.passed[id], run)
		case ends[id] != "fail":
			v.skipped[id] = append(v.skipped[id], run)
		}
	}
	return sc.Err()
}

// ran says whether test id ran: it has no subtests, or one of its direct
// subtests passed or failed and ran.
func ran(ends map[testID]string, id testID) bool {
	subtests := false
	for sub, action := range ends {
		rest, ok := strings.CutPrefix(sub.Test, id.Test+"/")
		if sub.Package != id.Package || !ok || strings.Contains(rest, "/") {
			continue
		}
		subtests = true
		if action != "skip" && ran(ends, sub) {
			return true
		}
	}
	return !subtests
}

// missing says, sorted, each of tests that passed in no run, and where it
// was skipped.
func (v verdicts) missing(tests []testID) []string {
	var lines []string
	for _, id := range tests {
		if len(v.passed[id]) > 0 {
			continue
		}
		where := "run on no axis"
		if s := v.skipped[id]; len(s) > 0 {
			where = "skipped on every axis that ran it (" + strings.Join(s, ", ") + ")"
		}
		lines = append(lines, fmt.Sprintf("%s (%s): %s", id.Test, id.Package, where))
	}
	sort.Strings(lines)
	return lines
}

// listTests returns the top-level tests and fuzz targets of pkgs, from
// their test files as go list selects them for this machine. It reads the
// source rather than run `go test -list`, which would run each package's
// TestMain (e2e's builds the relay with -race and starts PostgreSQL).
func listTests(pkgs []string) ([]testID, error) {
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles"}, pkgs...)...)
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", strings.Join(pkgs, " "), err)
	}
	var tests []testID
	dec := json.NewDecoder(bytes.NewReader(raw))
	for dec.More() {
		var p struct {
			ImportPath, Dir           string
			TestGoFiles, XTestGoFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list's output: %w", err)
		}
		for _, f := range append(p.TestGoFiles, p.XTestGoFiles...) {
			names, err := testFuncs(filepath.Join(p.Dir, f))
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				tests = append(tests, testID{p.ImportPath, n})
			}
		}
	}
	return tests, nil
}

// testFuncs returns the names of the tests (func TestX(*testing.T)) and
// fuzz targets (func FuzzX(*testing.F)) a test file declares.
func testFuncs(path string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Type.Params.NumFields() != 1 {
			continue
		}
		param := typeString(fd.Type.Params.List[0].Type)
		switch {
		case isTestName(fd.Name.Name, "Test") && param == "*testing.T",
			isTestName(fd.Name.Name, "Fuzz") && param == "*testing.F":
			names = append(names, fd.Name.Name)
		}
	}
	return names, nil
}

// typeString spells a parameter's type as written: *testing.T.
func typeString(e ast.Expr) string {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return ""
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return "*" + pkg.Name + "." + sel.Sel.Name
}

// isTestName says whether name is one go test runs for prefix: the prefix
// alone, or followed by a character that is not a lower-case letter.
func isTestName(name, prefix string) bool {
	if !strings.HasPrefix(name, prefix) {
		return false
	}
	rest := name[len(prefix):]
	return rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z')
}
