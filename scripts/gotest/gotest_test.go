package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestReporterPrintsAsGoTest feeds go test -json lines (as Go 1.26 writes
// them) and checks what is printed: package lines, a failing test's whole
// output with its subtests' and no framing, nothing of a passing or
// skipped test, build errors, the output of a test cut by its package's
// failure, and lines that are not JSON as they are.
func TestReporterPrintsAsGoTest(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"passing package: its ok line only",
			`{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: log line\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.50s)\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.5}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.6s\n"}
{"Action":"pass","Package":"p","Elapsed":0.6}
`, "ok  \tp\t0.6s\n"},
		{"failing test: its output and its subtests', without framing; interleaved tests kept apart",
			`{"Action":"output","Package":"p","Test":"TestF","Output":"=== RUN   TestF\n"}
{"Action":"output","Package":"p","Test":"TestG","Output":"=== RUN   TestG\n"}
{"Action":"output","Package":"p","Test":"TestF/sub","Output":"=== RUN   TestF/sub\n"}
{"Action":"output","Package":"p","Test":"TestF/sub","Output":"    f_test.go:3: want 1, got 2\n"}
{"Action":"output","Package":"p","Test":"TestG","Output":"    g_test.go:1: fine\n"}
{"Action":"output","Package":"p","Test":"TestF/sub","Output":"    --- FAIL: TestF/sub (0.10s)\n"}
{"Action":"fail","Package":"p","Test":"TestF/sub","Elapsed":0.1}
{"Action":"output","Package":"p","Test":"TestF","Output":"--- FAIL: TestF (0.20s)\n"}
{"Action":"fail","Package":"p","Test":"TestF","Elapsed":0.2}
{"Action":"output","Package":"p","Test":"TestG","Output":"--- PASS: TestG (0.30s)\n"}
{"Action":"pass","Package":"p","Test":"TestG","Elapsed":0.3}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.4s\n"}
{"Action":"fail","Package":"p","Elapsed":0.4}
`, "    f_test.go:3: want 1, got 2\n    --- FAIL: TestF/sub (0.10s)\n--- FAIL: TestF (0.20s)\nFAIL\nFAIL\tp\t0.4s\n"},
		{"build failure: the compiler's errors and the package line",
			`{"ImportPath":"p [p.test]","Action":"build-output","Output":"# p [p.test]\n"}
{"ImportPath":"p [p.test]","Action":"build-output","Output":"./a_test.go:3:1: undefined: x\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
{"Action":"fail","Package":"p","Elapsed":0,"FailedBuild":"p [p.test]"}
`, "# p [p.test]\n./a_test.go:3:1: undefined: x\nFAIL\tp [build failed]\n"},
		{"package dies mid-test: the running test's output",
			`{"Action":"output","Package":"p","Test":"TestH","Output":"=== RUN   TestH\n"}
{"Action":"output","Package":"p","Test":"TestH","Output":"    h_test.go:5: waiting\n"}
{"Action":"output","Package":"p","Test":"TestH","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t1.0s\n"}
{"Action":"fail","Package":"p","Elapsed":1}
`, "    h_test.go:5: waiting\npanic: test timed out after 1s\nFAIL\tp\t1.0s\n"},
		{"a line that is not JSON, as it is",
			"go: downloading example.com/m v1.0.0\n{not json\n", "go: downloading example.com/m v1.0.0\n{not json\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := newReporter(&out)
			if err := r.consume(strings.NewReader(tt.in)); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("printed:\n%q\nwant:\n%q", out.String(), tt.want)
			}
		})
	}
}

// TestSlowestAreTopLevelTests checks the summary's ranking: top-level
// tests only, of every package, slowest first, at most n.
func TestSlowestAreTopLevelTests(t *testing.T) {
	in := `{"Action":"pass","Package":"a","Test":"TestOne","Elapsed":1}
{"Action":"pass","Package":"a","Test":"TestTwo/sub","Elapsed":50}
{"Action":"pass","Package":"a","Test":"TestTwo","Elapsed":51}
{"Action":"fail","Package":"b","Test":"TestThree","Elapsed":7}
{"Action":"skip","Package":"b","Test":"TestFour","Elapsed":0}
{"Action":"pass","Package":"b","Elapsed":60}
`
	r := newReporter(&bytes.Buffer{})
	if err := r.consume(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	got := r.slowest(2)
	want := []result{{"a", "TestTwo", "pass", 51}, {"b", "TestThree", "fail", 7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("slowest(2) = %v, want %v", got, want)
	}
	var out bytes.Buffer
	r.out = &out
	r.summary("go test ./...", 90*time.Second, 1)
	for _, s := range []string{"FAILED (exit status 1) in 90 s, 4 top-level tests", "51.0 s  pass TestTwo  a", "0.0 s  skip TestFour  b"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, out.String())
		}
	}
}

// TestAxesNameWhatPassedNowhere checks the coverage check's verdicts: a
// test that passed in any run is covered; one skipped in every run, or in
// none, is named with where it was skipped; a test that passed with all its
// subtests skipped (at any depth) was skipped; a subtest alone passing
// under a skipped parent counts for nothing.
func TestAxesNameWhatPassedNowhere(t *testing.T) {
	runs := map[string]string{
		"pg15-kfake.json": `{"Action":"pass","Package":"e","Test":"TestKfakeOnly"}
{"Action":"skip","Package":"e","Test":"TestOn13"}
{"Action":"pass","Package":"e","Test":"TestSubOnly/a"}
{"Action":"skip","Package":"e","Test":"TestSubOnly"}
{"Action":"skip","Package":"e","Test":"TestSubtestsSkipped/a"}
{"Action":"skip","Package":"e","Test":"TestSubtestsSkipped/b"}
{"Action":"pass","Package":"e","Test":"TestSubtestsSkipped"}
{"Action":"skip","Package":"e","Test":"TestOneSubtestRan/a"}
{"Action":"pass","Package":"e","Test":"TestOneSubtestRan/b/c"}
{"Action":"pass","Package":"e","Test":"TestOneSubtestRan/b"}
{"Action":"pass","Package":"e","Test":"TestOneSubtestRan"}
{"Action":"skip","Package":"e","Test":"TestDeepSkipped/b/c"}
{"Action":"pass","Package":"e","Test":"TestDeepSkipped/b"}
{"Action":"pass","Package":"e","Test":"TestDeepSkipped"}
`,
		"pg18-apache.json": `{"Action":"skip","Package":"e","Test":"TestKfakeOnly"}
{"Action":"skip","Package":"e","Test":"TestOn13"}
{"Action":"fail","Package":"e","Test":"TestFailed"}
not json
`,
	}
	v := newVerdicts()
	for _, name := range []string{"pg15-kfake.json", "pg18-apache.json"} {
		if err := v.add(strings.NewReader(runs[name]), name); err != nil {
			t.Fatal(err)
		}
	}
	tests := []testID{{"e", "TestKfakeOnly"}, {"e", "TestOn13"}, {"e", "TestSubOnly"}, {"e", "TestFailed"}, {"e", "TestNew"},
		{"e", "TestSubtestsSkipped"}, {"e", "TestOneSubtestRan"}, {"e", "TestDeepSkipped"}}
	want := []string{
		"TestDeepSkipped (e): skipped on every axis that ran it (pg15-kfake.json)",
		"TestFailed (e): run on no axis",
		"TestNew (e): run on no axis",
		"TestOn13 (e): skipped on every axis that ran it (pg15-kfake.json, pg18-apache.json)",
		"TestSubOnly (e): skipped on every axis that ran it (pg15-kfake.json)",
		"TestSubtestsSkipped (e): skipped on every axis that ran it (pg15-kfake.json)",
	}
	if got := v.missing(tests); !reflect.DeepEqual(got, want) {
		t.Errorf("missing:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTestFuncsListsWhatGoTestRuns checks which declarations of a test
// file count as tests: TestX(*testing.T) and FuzzX(*testing.F), not
// TestMain, helpers, methods, benchmarks or a lower-case suffix.
func TestTestFuncsListsWhatGoTestRuns(t *testing.T) {
	src := `package p

import "testing"

func TestMain(m *testing.M)            {}
func TestA(t *testing.T)               {}
func Test(t *testing.T)                {}
func Test_b(t *testing.T)              {}
func Testlower(t *testing.T)           {}
func TestHelper(t *testing.T, n int)   {}
func BenchmarkC(b *testing.B)          {}
func FuzzD(f *testing.F)               {}
func FuzzE(t *testing.T)               {}
func (s suite) TestMethod(t *testing.T) {}
type suite struct{}
`
	path := filepath.Join(t.TempDir(), "p_test.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := testFuncs(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"TestA", "Test", "Test_b", "FuzzD"}; !reflect.DeepEqual(got, want) {
		t.Errorf("testFuncs = %v, want %v", got, want)
	}
}

// TestRunFileName checks a run's JSON file name: its axis first, never a
// path separator from the environment.
func TestRunFileName(t *testing.T) {
	now := time.Date(2026, 11, 28, 21, 30, 5, 123456000, time.UTC)
	for _, tt := range []struct{ pg, kafka, want string }{
		{"", "", "pgdefault-kfake-213005.123456-7.json"},
		{"18", "apache", "pg18-apache-213005.123456-7.json"},
		{"../x", "a/b", "pg.._x-a_b-213005.123456-7.json"},
	} {
		if got := runFileName(tt.pg, tt.kafka, now, 7); got != tt.want {
			t.Errorf("runFileName(%q, %q) = %q, want %q", tt.pg, tt.kafka, got, tt.want)
		}
	}
}

// TestStepNameIsShort: the summary names a run by its arguments, cut at
// 120 characters with how many there were.
func TestStepNameIsShort(t *testing.T) {
	if got := stepName([]string{"-race", "./x/"}); got != "go test -race ./x/" {
		t.Errorf("stepName = %q", got)
	}
	long := make([]string, 50)
	for i := range long {
		long[i] = "./package/"
	}
	if got := stepName(long); !strings.HasSuffix(got, "… (50 arguments)") || len(got) > 150 {
		t.Errorf("stepName of 50 packages = %q", got)
	}
}
