// Command gotest runs go test and reports as plain go test does, plus where
// the time went. It runs `go test -json ARGS` as a child and prints each
// package's ok or FAIL line, the whole output of a failing test (and of a
// test still running when its package failed: a panic, a timeout), a build
// failure's errors, and nothing for a test that passed or skipped; at the
// end, the step's wall time and its ten slowest top-level tests. It exits
// with go test's exit status.
//
//	go run ./scripts/gotest [-json-out FILE] GO-TEST-ARGS...
//	go run ./scripts/gotest -axes DIR [PACKAGES...]
//
// The raw JSON goes to FILE with -json-out, else, when
// CDC_RELAY_TEST_JSON_DIR names a directory, to a new file there per run,
// named by the PostgreSQL version and the broker of the run
// (CDC_RELAY_TEST_PG, CDC_RELAY_TEST_KAFKA): CI sets it for every step.
//
// -axes DIR is the coverage check CI runs last (axes.go): every top-level
// test and fuzz target of PACKAGES (./...) must have passed in at least
// one of the JSON files of DIR; it exits 1 naming each that did not.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// jsonDirEnv names the directory a run writes its JSON into, a file per run.
const jsonDirEnv = "CDC_RELAY_TEST_JSON_DIR"

func main() {
	args := os.Args[1:]
	if len(args) >= 2 && args[0] == "-axes" {
		os.Exit(runAxes(args[1], args[2:], os.Stdout))
	}
	jsonOut := ""
	if len(args) >= 2 && args[0] == "-json-out" {
		jsonOut, args = args[1], args[2:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/gotest [-json-out FILE] GO-TEST-ARGS... | -axes DIR [PACKAGES...]")
		os.Exit(2)
	}
	os.Exit(runTests(jsonOut, args))
}

// runTests runs go test -json args, reports on stdout and returns go test's
// exit status (2 when go could not be started or the JSON not written).
func runTests(jsonOut string, args []string) int {
	start := time.Now()
	raw, closeRaw, err := openJSONOut(jsonOut)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		return 2
	}
	defer closeRaw()
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "gotest: cannot start go: %v (is Go on PATH?)\n", err)
		return 2
	}
	r := newReporter(os.Stdout)
	consumeErr := r.consume(io.TeeReader(stdout, raw))
	if consumeErr != nil {
		// Read the rest, so that go test, blocked on a full pipe, ends.
		fmt.Fprintln(os.Stderr, "gotest: reading go test's output, or keeping its JSON:", consumeErr)
		_, _ = io.Copy(io.Discard, stdout)
	}
	status := exitStatus(cmd.Wait())
	if consumeErr != nil && status == 0 {
		status = 2 // the report or the JSON kept is incomplete
	}
	r.summary(stepName(args), time.Since(start), status)
	return status
}

// exitStatus is the exit status a finished child's Wait error stands for.
func exitStatus(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "gotest: go test:", err)
		return 2
	}
}

// openJSONOut returns where the raw JSON goes: path, else a new file in
// CDC_RELAY_TEST_JSON_DIR, else nowhere.
func openJSONOut(path string) (io.Writer, func(), error) {
	if path == "" {
		dir := os.Getenv(jsonDirEnv)
		if dir == "" {
			return io.Discard, func() {}, nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("%s=%s: %w", jsonDirEnv, dir, err)
		}
		path = filepath.Join(dir, runFileName(os.Getenv("CDC_RELAY_TEST_PG"), os.Getenv("CDC_RELAY_TEST_KAFKA"), time.Now(), os.Getpid()))
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("the JSON file: %w", err)
	}
	w := bufio.NewWriter(f)
	return w, func() {
		if err := w.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, "gotest:", err)
		}
		f.Close()
	}, nil
}

// runFileName names a run's JSON file by its PostgreSQL version and broker
// (the defaults: 15 and kfake), so that the coverage check can say on
// which axes a test was skipped, and by time and process, so that no two
// runs share a file.
func runFileName(pg, kafka string, now time.Time, pid int) string {
	if pg == "" {
		pg = "default"
	}
	if kafka == "" {
		kafka = "kfake"
	}
	return fmt.Sprintf("pg%s-%s-%s-%d.json", safe(pg), safe(kafka), now.UTC().Format("150405.000000"), pid)
}

// safe keeps letters, digits, dots and dashes of s, as a file name's part.
func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

// stepName is how the summary names the run: go test and its arguments,
// cut short after 120 characters (make unit names every package).
func stepName(args []string) string {
	name := "go test " + strings.Join(args, " ")
	if len(name) > 120 {
		name = fmt.Sprintf("%s… (%d arguments)", name[:120], len(args))
	}
	return name
}
