package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/suggest"
	"github.com/cdc-relay/cdc-relay/relay"
)

// envName is the environment variable for a flag: CDC_RELAY_ and the flag
// name in upper case with dashes as underscores.
func envName(flagName string) string {
	return "CDC_RELAY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args into fs, then fills every flag not given on the
// command line from its environment variable. It prints nothing: -h and
// --help return flag.ErrHelp (Main then prints the usage to stdout), and
// every mistake is a usageError that names the flag and says what it wants.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		msg := fmt.Sprintf("unexpected argument %q", fs.Arg(0))
		// "--kafka-create-topics false": a boolean flag takes no separate value.
		if i := len(args) - fs.NArg() - 1; i >= 0 {
			name := strings.TrimLeft(args[i], "-")
			if f := fs.Lookup(name); f != nil && isBoolFlag(f.Value) && !strings.Contains(args[i], "=") {
				msg += fmt.Sprintf(" (a true/false flag takes its value after '=': --%s=%s)", name, fs.Arg(0))
			}
		}
		return usageError{msg}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		if _, ok := f.Value.(commandLineOnly); ok {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = usageError{fmt.Sprintf("%s=%q: %s", envName(f.Name), v, explain(f.Value, e))}
			}
		}
	})
	return err
}

// commandLineOnly marks a flag that is never read from the environment:
// one that chooses what a command does to data (failed purge --dead), which
// a variable left set in a shell must not choose.
type commandLineOnly struct{ flag.Value }

// IsBoolFlag keeps "--flag" without a value working for boolean flags.
func (c commandLineOnly) IsBoolFlag() bool { return isBoolFlag(c.Value) }

// Get keeps the wrapped value a flag.Getter.
func (c commandLineOnly) Get() any {
	if g, ok := c.Value.(flag.Getter); ok {
		return g.Get()
	}
	return nil
}

// onlyOnCommandLine makes the named flags of fs command-line only.
func onlyOnCommandLine(fs *flag.FlagSet, names ...string) {
	for _, name := range names {
		if f := fs.Lookup(name); f != nil {
			f.Value = commandLineOnly{f.Value}
		}
	}
}

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

// durationValue is a time.Duration flag whose errors say what is wrong
// ("30" lacks a unit) instead of the flag package's "parse error".
type durationValue time.Duration

// durationVar defines a duration flag; negative durations are refused.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}

func (d *durationValue) Set(s string) error {
	v, err := parseDuration(strings.TrimSpace(s))
	if err != nil {
		if _, numErr := strconv.ParseFloat(strings.TrimSpace(s), 64); numErr == nil {
			return errors.New("a duration needs a unit, such as 30s or 500ms")
		}
		return errors.New("not a duration: want a number and a unit, such as 30s, 500ms or 1m30s")
	}
	if v < 0 {
		return errors.New("a duration cannot be negative")
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return formatDuration(time.Duration(*d)) }

// parseDuration is time.ParseDuration with days: "7d", "1d12h".
func parseDuration(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseUint(days, 10, 16)
	if err != nil {
		return time.ParseDuration(s) // for its error
	}
	v := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, err
		}
		v += r
	}
	return v, nil
}

// formatDuration writes whole days as days: 7d, not 168h0m0s.
func formatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

// Get makes durationValue a flag.Getter, as the flag package's own values are.
func (d *durationValue) Get() any { return time.Duration(*d) }

// suggestFlag returns the name of fs's flag nearest to name, or "".
func suggestFlag(fs *flag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return nearest(name, names)
}

// nearest returns the candidate that s most likely misspells: the closest
// by edit distance if it is within about a third of s's length, else the
// only candidate containing s (--brokers for --kafka-brokers), else "".
func nearest(s string, candidates []string) string {
	s = strings.ToLower(strings.ReplaceAll(s, "_", "-"))
	if best := suggest.Closest(s, candidates); best != "" {
		return best
	}
	var containing []string
	for _, c := range candidates {
		if len(s) >= 3 && strings.Contains(c, s) {
			containing = append(containing, c)
		}
	}
	if len(containing) == 1 {
		return containing[0]
	}
	return ""
}

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

// tableFlags are the names every command shares: the outbox table, the
// relay's tables and the publication.
type tableFlags struct {
	table, statusTable, checkpointTable, publication string
}

func (t *tableFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.table, "table", "public.outbox", "the outbox table, as `schema.table`; a name without a schema is in public")
	fs.StringVar(&t.statusTable, "status-table", "public.outbox_delivery",
		"the status table, as `schema.table`: it keeps a copy of each event the relay could not deliver, with the reason, until it is delivered or dealt with")
	fs.StringVar(&t.checkpointTable, "checkpoint-table", "public.cdc_relay_checkpoint",
		"the relay's checkpoint table, as `schema.table`: the confirmed position, saved so that a lost slot is noticed")
	fs.StringVar(&t.publication, "publication", "cdc_relay", "the `name` of the publication of the outbox table, which the slot streams")
}

// apply copies the names into cfg.
func (t *tableFlags) apply(cfg *relay.Config) error {
	var err error
	if cfg.Tables[0].Mapping.Schema, cfg.Tables[0].Mapping.Table, err = decoder.ParseTable(t.table); err != nil {
		return usageError{fmt.Sprintf("--table %q: %v", t.table, err)}
	}
	if cfg.StatusSchema, cfg.StatusTable, err = decoder.ParseTable(t.statusTable); err != nil {
		return usageError{fmt.Sprintf("--status-table %q: %v", t.statusTable, err)}
	}
	if cfg.CheckpointSchema, cfg.CheckpointTable, err = decoder.ParseTable(t.checkpointTable); err != nil {
		return usageError{fmt.Sprintf("--checkpoint-table %q: %v", t.checkpointTable, err)}
	}
	if t.publication == "" {
		return usageError{"--publication is empty: name the publication of the outbox table"}
	}
	cfg.Publication = t.publication
	return nil
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
