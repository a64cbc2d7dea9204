package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
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
