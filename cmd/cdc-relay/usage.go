package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// flagSection is a titled group of flags in a command's usage, listed in
// the order shown.
type flagSection struct {
	title string
	names []string
}

// printUsage writes a command's usage: head, then its flags by section,
// each with its environment variable, its description and its default.
// Flags missing from sections are listed last.
func printUsage(w io.Writer, fs *flag.FlagSet, head string, sections []flagSection) {
	fmt.Fprint(w, head)
	shown := map[string]bool{}
	var all []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { all = append(all, f) })
	if len(all) == 0 {
		return
	}
	fmt.Fprint(w, "\nEach flag can also be set by the environment variable shown beside it;\n"+
		"the command line wins over the environment.\n")
	width := 0
	for _, f := range all {
		width = max(width, len(flagSynopsis(f)))
	}
	for _, s := range sections {
		fmt.Fprintf(w, "\n%s:\n", s.title)
		for _, name := range s.names {
			if f := fs.Lookup(name); f != nil && !shown[name] {
				printFlag(w, f, width)
				shown[name] = true
			}
		}
	}
	title := "\nFlags:\n"
	if len(sections) > 0 {
		title = "\nOther flags:\n"
	}
	for _, f := range all {
		if !shown[f.Name] {
			fmt.Fprint(w, title)
			title = ""
			printFlag(w, f, width)
		}
	}
}

// flagSynopsis is "--name placeholder".
func flagSynopsis(f *flag.Flag) string {
	name, _ := unquoteUsage(f)
	if name == "" {
		return "--" + f.Name
	}
	return "--" + f.Name + " " + name
}

// unquoteUsage is flag.UnquoteUsage, which does not know durationValue.
func unquoteUsage(f *flag.Flag) (name, usage string) {
	name, usage = flag.UnquoteUsage(f)
	v := f.Value
	if c, ok := v.(commandLineOnly); ok {
		v = c.Value
	}
	if _, ok := v.(*durationValue); ok && name == "value" {
		name = "duration"
	}
	return name, usage
}

func printFlag(w io.Writer, f *flag.Flag, width int) {
	_, usage := unquoteUsage(f)
	env := envName(f.Name)
	if _, ok := f.Value.(commandLineOnly); ok {
		env = "(command line only)"
	}
	fmt.Fprintf(w, "  %-*s  %s\n", width, flagSynopsis(f), env)
	switch f.DefValue {
	case "", "false", "0", "0s":
	default:
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(string); ok {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
				break
			}
		}
		usage += fmt.Sprintf(" (default %s)", f.DefValue)
	}
	for _, line := range wrap(usage, 72) {
		fmt.Fprintf(w, "      %s\n", line)
	}
}

// wrap breaks s into lines of at most width bytes at spaces (a longer
// word gets a line of its own).
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
