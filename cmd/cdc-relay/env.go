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
				return
			}
			f.Value = fromEnvironment{wrapped{f.Value}}
		}
	})
	return err
}

// fromEnvironment marks a flag whose value parseFlags took from its
// environment variable: an error about a flag that should not be set
// names the variable, which is easy to forget in a shell or a container's
// environment, and says to unset it.
type fromEnvironment struct{ wrapped }

// setInEnvironment reports whether flag name of fs got its value from its
// environment variable rather than from the command line.
func setInEnvironment(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	_, ok := f.Value.(fromEnvironment)
	return ok
}

// commandLineOnly marks a flag that is never read from the environment:
// one that chooses what a command does to data (failed purge --dead), which
// a variable left set in a shell must not choose.
type commandLineOnly struct{ wrapped }

// wrapped is a flag's value with a mark: it behaves as the value.
type wrapped struct{ flag.Value }

// IsBoolFlag keeps "--flag" without a value working for boolean flags.
func (w wrapped) IsBoolFlag() bool { return isBoolFlag(w.Value) }

// Get keeps the wrapped value a flag.Getter.
func (w wrapped) Get() any {
	if g, ok := w.Value.(flag.Getter); ok {
		return g.Get()
	}
	return nil
}

// onlyOnCommandLine makes the named flags of fs command-line only.
func onlyOnCommandLine(fs *flag.FlagSet, names ...string) {
	for _, name := range names {
		if f := fs.Lookup(name); f != nil {
			f.Value = commandLineOnly{wrapped{f.Value}}
		}
	}
}
