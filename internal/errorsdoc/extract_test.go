package errorsdoc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fatalStub is the module's internal/fatal, as Extract reads it.
const fatalStub = `package fatal

type Error struct{ Err error }

func (e Error) Error() string { return e.Err.Error() }
`

// writeModule writes a module example.com/m at a new directory: go.mod,
// internal/fatal, and files (paths from the module's root, each with its
// source); main's cmd/cdc-relay/main.go is files' "main" if given.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{"go.mod": "module example.com/m\n\ngo 1.26\n", "internal/fatal/fatal.go": fatalStub}
	for p, src := range files {
		all[p] = src
	}
	for p, src := range all {
		path := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mainOf is a cmd/cdc-relay/main.go that imports the module's packages
// pkgs (for what they hold) and holds body after its imports.
func mainOf(imports []string, body string) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, p := range imports {
		fmt.Fprintf(&b, "\t%q\n", p)
	}
	b.WriteString(")\n\n" + body)
	return b.String()
}

// said is a Message as a case says it: "kind package: text".
func said(m Message) string { return fmt.Sprintf("%s %s: %s", m.Kind, m.Package, m.Text) }

// extractCase is a module (its files, beside go.mod and internal/fatal)
// and the messages Extract finds in it, each "kind package: text".
type extractCase struct {
	name  string
	files map[string]string
	want  []string
}

// use declares what uses each import of std, so that a case's main.go
// compiles whichever it uses.
const use = "var _ = context.Background\nvar _ = errors.New\nvar _ = fmt.Sprintf\nvar _ slog.Logger\nvar _ fatal.Error\n\n"

// std is the imports of a case's main.go.
func std() []string {
	return []string{"context", "errors", "fmt", "log/slog", "example.com/m/internal/fatal"}
}

// fatalCases are the fatal errors' cases.
func fatalCases() []extractCase {
	return []extractCase{
		{"a fatal error made in place, its verbs shown as holes", map[string]string{
			"cmd/cdc-relay/main.go": mainOf(std(), use+`func f(slot string, n int) error {
	return fatal.Error{Err: fmt.Errorf("slot %q is at %d%%: run `+"`cdc-relay recover`"+` (%s)", slot, n, "now")}
}`)},
			[]string{`stops cmd/cdc-relay: slot "…" is at …%: run ` + "`cdc-relay recover`" + ` (now)`}},
		{"a fatal error of a variable, and of an error type's Error method", map[string]string{
			"cmd/cdc-relay/main.go": mainOf(std(), use+`type gapError struct{ slot string }

func (e *gapError) Error() string {
	what := fmt.Sprintf("events may be missing (slot %s)", e.slot)
	if e.slot == "" {
		return "no slot: " + what
	}
	return fmt.Sprintf("the slot was lost. %s", what)
}

func f(lost bool) error {
	stop := fmt.Errorf("the status table refuses events (%w)", errors.New("x"))
	if lost {
		return fatal.Error{Err: &gapError{}}
	}
	return fatal.Error{Err: stop}
}`)},
			[]string{
				"stops cmd/cdc-relay: no slot: events may be missing (slot …)",
				"stops cmd/cdc-relay: the slot was lost. events may be missing (slot …)",
				"stops cmd/cdc-relay: the status table refuses events (x)",
			}},
	}
}

// logCases are the log lines' cases.
func logCases() []extractCase {
	return []extractCase{
		{"log lines at warn and error level, not at others", map[string]string{
			"cmd/cdc-relay/main.go": mainOf(std(), use+`const hint = "; check the network"

func f(ctx context.Context, log *slog.Logger, level slog.Level, addr string) {
	log.Warn("Kafka cannot be reached" + hint, "addr", addr)
	log.Error("stopping at once")
	log.WarnContext(ctx, "a warning with its context")
	log.Log(ctx, slog.LevelError, "an error by its level")
	log.Log(ctx, level, "a level not known before it runs")
	log.Info("an info line")
	slog.Warn("broker " + addr + " is away")
	log.Warn(addr)
}`)},
			[]string{
				"warn cmd/cdc-relay: Kafka cannot be reached; check the network",
				"error cmd/cdc-relay: stopping at once",
				"warn cmd/cdc-relay: a warning with its context",
				"error cmd/cdc-relay: an error by its level",
				"warn cmd/cdc-relay: broker … is away",
			}},
		{"a message of a variable, a parameter, a function's result", map[string]string{
			"cmd/cdc-relay/main.go": mainOf(std(), use+`func f(log *slog.Logger, refused bool) {
	msg := "PostgreSQL cannot be reached"
	if refused {
		msg = "PostgreSQL refused the login"
	}
	log.Warn(msg)
	log.Warn(multiHost(2))
	warn(log, "first of a parameter")
	warn(log, "second of a parameter")
}

func warn(log *slog.Logger, msg string) { log.Warn(msg) }

func multiHost(n int) string {
	if n < 2 {
		return ""
	}
	return fmt.Sprintf("the URL lists %d servers", n)
}`)},
			[]string{
				"warn cmd/cdc-relay: PostgreSQL cannot be reached",
				"warn cmd/cdc-relay: PostgreSQL refused the login",
				"warn cmd/cdc-relay: the URL lists … servers",
				"warn cmd/cdc-relay: first of a parameter",
				"warn cmd/cdc-relay: second of a parameter",
			}},
	}
}

// ruleCases are the cases of the other errors, the problems, the packages read and the deduplication.
func ruleCases() []extractCase {
	return []extractCase{
		{"errors that say what to do, and those that do not", map[string]string{
			"cmd/cdc-relay/main.go": mainOf(std(), use+`func f(err error) []error {
	return []error{
		fmt.Errorf("%w: GRANT SELECT ON the table TO the relay's role", err),
		errors.New("the slot is in use: give another --slot"),
		fmt.Errorf("the tables do not exist: run cdc-relay migrate first"),
		fmt.Errorf("--topic: %w", err),
		fmt.Errorf("read the slot: %w", err),
		errors.New("unreachable: the decoder's state is corrupt"),
	}
}`)},
			[]string{
				"fails cmd/cdc-relay: …: GRANT SELECT ON the table TO the relay's role",
				"fails cmd/cdc-relay: the slot is in use: give another --slot",
				"fails cmd/cdc-relay: the tables do not exist: run cdc-relay migrate first",
			}},
		{"a format and its arguments forwarded to a function", map[string]string{
			"cmd/cdc-relay/main.go": mainOf(std(), use+`func f(log *slog.Logger, col string) {
	add := func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) }
	add("has no column %q: fix %s", col, "the mapping")
	add("column %q has type %s", col, col)
}`)},
			[]string{
				`warn cmd/cdc-relay: has no column "…": fix the mapping`,
				`warn cmd/cdc-relay: column "…" has type …`,
			}},
		{"a problem of preflight, in the literal and assigned", map[string]string{
			"cmd/cdc-relay/main.go": mainOf([]string{"example.com/m/preflight"}, "var _ = preflight.Check\n"),
			"preflight/preflight.go": `package preflight

import "fmt"

type Problem struct{ Table, Msg string }

func Check(pub string, grant bool) []Problem {
	p := Problem{Table: "t"}
	if grant {
		p.Msg = fmt.Sprintf("the role may not update the table: GRANT UPDATE ON it")
	}
	return []Problem{p, {Msg: fmt.Sprintf("publication %q does not exist", pub)}}
}
`},
			[]string{
				"check preflight: the role may not update the table: GRANT UPDATE ON it",
				`check preflight: publication "…" does not exist`,
			}},
		{"a package the binary links, not one it does not, nor a test", map[string]string{
			"cmd/cdc-relay/main.go": mainOf([]string{"example.com/m/slot"}, "var _ = slot.F\n"),
			"slot/slot.go": `package slot

import "log/slog"

// Name is the slot's.
const Name = "cdc_relay"

func F(log *slog.Logger) { log.Warn("slot " + Name + " is lost") }
`,
			"slot/slot_test.go": `package slot

import "log/slog"

func g(log *slog.Logger) { log.Warn("a test's line") }
`,
			"tools/tools.go": `package tools

import "log/slog"

func F(log *slog.Logger) { log.Warn("a tool's line") }
`},
			[]string{"warn slot: slot cdc_relay is lost"}},
		{"a text once, of its weightiest kind; one that another shows with a hole left out", map[string]string{
			"cmd/cdc-relay/main.go": mainOf(std(), use+`func f(log *slog.Logger, what string) error {
	log.Warn("the status table refuses events: run cdc-relay migrate")
	log.Warn("adopt: refused: " + what)
	log.Warn("adopt: refused: the predicate")
	return fatal.Error{Err: errors.New("the status table refuses events: run cdc-relay migrate")}
}`)},
			[]string{
				"stops cmd/cdc-relay: the status table refuses events: run cdc-relay migrate",
				"warn cmd/cdc-relay: adopt: refused: …",
			}},
	}
}

func TestExtract(t *testing.T) {
	tests := slices.Concat(fatalCases(), logCases(), ruleCases())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, err := Extract(writeModule(t, tt.files))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range msgs {
				got = append(got, said(m))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Extract:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

func TestCovered(t *testing.T) {
	tests := []struct {
		specific, general string
		want              bool
	}{
		{"adopt: refused", "…: refused", true},
		{"adopt: refused", "adopt: refused", false},
		{"trying again", "trying again…", true},
		{"a (b) c", "a (…) …", true},
		{"a b", "a c…", false},
		{"x.y", "x…", true},
		{"x*y", "x.y", false},
	}
	for _, tt := range tests {
		if got := covered(tt.specific, tt.general); got != tt.want {
			t.Errorf("covered(%q, %q) = %v, want %v", tt.specific, tt.general, got, tt.want)
		}
	}
}
