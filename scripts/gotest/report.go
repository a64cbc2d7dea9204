package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// result is a finished top-level test and how long it took.
type result struct {
	Package, Test, Action string
	Elapsed               float64
}

// reporter turns go test -json's events into what plain go test prints:
// a test's output is held until it ends, and printed only if it failed.
type reporter struct {
	out     io.Writer
	held    map[string][]string // by package and top-level test
	order   []string            // keys of held, in the order they started
	results []result
}

func newReporter(out io.Writer) *reporter {
	return &reporter{out: out, held: map[string][]string{}}
}

// consume reports every line of r: an event, or a line that is not JSON
// (printed as it is), until r ends.
func (r *reporter) consume(in io.Reader) error {
	br := bufio.NewReader(in)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			r.line(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// line reports one line of go test -json's output.
func (r *reporter) line(line string) {
	var ev event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &ev) != nil {
		fmt.Fprint(r.out, line)
		return
	}
	r.handle(ev)
}

// topLevel is the top-level test of a test or subtest name.
func topLevel(test string) string {
	top, _, _ := strings.Cut(test, "/")
	return top
}

// handle reports one event.
func (r *reporter) handle(ev event) {
	switch {
	case ev.Action == "build-output":
		fmt.Fprint(r.out, ev.Output)
	case ev.Action == "output" && ev.Test == "":
		if strings.HasPrefix(ev.Output, "FAIL") {
			r.flushPackage(ev.Package) // what ran when it died comes first
		}
		if ev.Output != "PASS\n" {
			fmt.Fprint(r.out, ev.Output)
		}
	case ev.Action == "output":
		r.hold(ev)
	case ev.Test == "" && ev.Action == "fail":
		r.flushPackage(ev.Package)
	case ev.Test == "" || strings.Contains(ev.Test, "/"):
		// a package's start or pass, a subtest's end: its parent reports
	case ev.Action == "pass" || ev.Action == "skip" || ev.Action == "fail":
		r.results = append(r.results, result{ev.Package, ev.Test, ev.Action, ev.Elapsed})
		key := ev.Package + "\x00" + ev.Test
		if ev.Action == "fail" {
			fmt.Fprint(r.out, strings.Join(r.held[key], ""))
		}
		r.drop(key)
	}
}

// hold keeps a test's line of output for its top-level test's end,
// without go test -v's framing lines (=== RUN, PAUSE, CONT, NAME).
func (r *reporter) hold(ev event) {
	if strings.HasPrefix(ev.Output, "=== ") {
		return
	}
	key := ev.Package + "\x00" + topLevel(ev.Test)
	if _, ok := r.held[key]; !ok {
		r.order = append(r.order, key)
	}
	r.held[key] = append(r.held[key], ev.Output)
}

// drop forgets a test's held output.
func (r *reporter) drop(key string) {
	delete(r.held, key)
	for i, k := range r.order {
		if k == key {
			r.order = append(r.order[:i], r.order[i+1:]...)
			return
		}
	}
}

// flushPackage prints the held output of every test of pkg that never
// ended: the package failed while they ran (a panic, a timeout).
func (r *reporter) flushPackage(pkg string) {
	for _, key := range append([]string(nil), r.order...) {
		if strings.HasPrefix(key, pkg+"\x00") {
			fmt.Fprint(r.out, strings.Join(r.held[key], ""))
			r.drop(key)
		}
	}
}

// slowest returns the n slowest finished top-level tests, slowest first.
func (r *reporter) slowest(n int) []result {
	rs := append([]result(nil), r.results...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Elapsed > rs[j].Elapsed })
	if len(rs) > n {
		rs = rs[:n]
	}
	return rs
}

// summary prints the step's wall time, its exit status and its ten
// slowest top-level tests.
func (r *reporter) summary(step string, wall time.Duration, status int) {
	verdict := "ok"
	if status != 0 {
		verdict = fmt.Sprintf("FAILED (exit status %d)", status)
	}
	fmt.Fprintf(r.out, "gotest: %s: %s in %.0f s, %d top-level tests\n", step, verdict, wall.Seconds(), len(r.results))
	rs := r.slowest(10)
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(r.out, "gotest: slowest tests:")
	for _, x := range rs {
		fmt.Fprintf(r.out, "gotest: %8.1f s  %-4s %s  %s\n", x.Elapsed, x.Action, x.Test, x.Package)
	}
}
