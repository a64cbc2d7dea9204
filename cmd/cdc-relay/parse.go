package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/cdc-relay/cdc-relay/internal/suggest"
)

// parseArgs runs fs.Parse and rewrites its errors: the flag package says
// "parse error" for any bad value and nothing about what was meant.
func parseArgs(fs *flag.FlagSet, args []string) error {
	// Record which flag refused which value: the flag package's error
	// keeps only the text.
	var bad *badValue
	values := map[string]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		values[f.Name] = f.Value
		f.Value = recorder{Value: f.Value, name: f.Name, bad: &bad}
	})
	err := fs.Parse(args)
	fs.VisitAll(func(f *flag.Flag) { f.Value = values[f.Name] })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return flag.ErrHelp
	case bad != nil:
		return usageError{fmt.Sprintf("--%s %q: %s", bad.name, bad.value, explain(values[bad.name], bad.err))}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if s := suggestFlag(fs, name); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
	} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		msg = fmt.Sprintf("--%s needs a value", name)
	}
	return usageError{msg}
}

// badValue is a value a flag refused.
type badValue struct {
	name, value string
	err         error
}

// recorder wraps a flag's value to note a refused value.
type recorder struct {
	flag.Value
	name string
	bad  **badValue
}

func (r recorder) Set(s string) error {
	err := r.Value.Set(s)
	if err != nil {
		*r.bad = &badValue{r.name, s, err}
	}
	return err
}

// IsBoolFlag keeps "--flag" without a value working for boolean flags.
func (r recorder) IsBoolFlag() bool { return isBoolFlag(r.Value) }

func isBoolFlag(v flag.Value) bool {
	b, ok := v.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// explain says what a flag wants, for an error from its Set.
func explain(v flag.Value, err error) string {
	var typ any
	if g, ok := v.(flag.Getter); ok {
		typ = g.Get()
	}
	switch err.Error() {
	case "parse error":
		switch typ.(type) {
		case bool:
			return "want true or false"
		case int, int64, uint, uint64:
			return "want a whole number"
		case float64:
			return "want a number"
		}
	case "value out of range":
		return "the number is out of range"
	}
	return err.Error()
}

// suggestFlag returns the name of fs's flag nearest to name, or "".
func suggestFlag(fs *flag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return suggest.Name(name, names)
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
