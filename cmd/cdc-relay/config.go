package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cdc-relay/cdc-relay/internal/suggest"
)

// ConfigCommand is `cdc-relay config <subcommand>`: make relay.yaml files.
// This file reads the subcommand; each subcommand is in the file named
// after it (configfromdebezium.go).
type ConfigCommand struct {
	stdout, stderr io.Writer
	stdin          io.Reader // from-debezium's FILE "-"

	sub string // the subcommand; "" until Run has read it

	fromDebezium fromDebeziumFlags // from-debezium's flags
}

// configSubcommand is one of config's subcommands: its usage, its flags
// and how it runs.
type configSubcommand struct {
	// head is its usage text, before the flags.
	head string
	// flags registers its flags in fs.
	flags func(c *ConfigCommand, fs *flag.FlagSet)
	// sections orders its flags in its usage.
	sections []flagSection
	// run runs it on its operands, once its flags are parsed; usage makes
	// a usageError that names the subcommand.
	run func(c *ConfigCommand, ctx context.Context, operands []string, usage func(format string, a ...any) error) error
}

// configSubcommands are config's subcommands, in the order of its usage.
var configSubcommands = []string{"from-debezium"}

// configTable is each of configSubcommands, by name.
var configTable = map[string]configSubcommand{
	"from-debezium": configFromDebezium,
}

const configCommandUsage = `Usage: cdc-relay config <subcommand> [flags]

Makes relay.yaml files, printed on standard output, from what a team runs
today.

Subcommands:

  from-debezium FILE
         the relay.yaml of a Debezium PostgreSQL connector with the outbox
         event router, from its Kafka Connect JSON config: the same
         topics, keys, values and headers

'cdc-relay config <subcommand> -h' says more.

Exit status: 0 when it printed a file; 1 when it cannot make one, saying
why; 2 for a mistake on the command line.

Example:

  cdc-relay config from-debezium connector.json > relay.yaml
`

// flags is the flag set of subcommand sub.
func (c *ConfigCommand) flags(sub string) *flag.FlagSet {
	fs := flag.NewFlagSet("config "+sub, flag.ContinueOnError)
	if sc, ok := configTable[sub]; ok && sc.flags != nil {
		sc.flags(c, fs)
	}
	return fs
}

// Usage writes config's help, or its subcommand's once Run has read one.
func (c *ConfigCommand) Usage(w io.Writer) {
	if c.sub == "" {
		fmt.Fprint(w, configCommandUsage)
		return
	}
	printUsage(w, c.flags(c.sub), configTable[c.sub].head, configTable[c.sub].sections)
}

// Run reads the subcommand and its flags, and runs it.
func (c *ConfigCommand) Run(ctx context.Context, args []string) error {
	if err := c.chooseSubcommand(args); err != nil {
		return err
	}
	fs := c.flags(c.sub)
	flagArgs, operands := splitArgs(fs, args[1:])
	if err := parseFlags(fs, flagArgs); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{c.sub + ": " + err.Error()}
	}
	usage := func(format string, a ...any) error { return usageError{c.sub + ": " + fmt.Sprintf(format, a...)} }
	return configTable[c.sub].run(c, ctx, operands, usage)
}

// chooseSubcommand sets c.sub to the subcommand args name, or returns
// flag.ErrHelp for a request of help (c.sub then names the subcommand
// asked about, if any) or a usageError.
func (c *ConfigCommand) chooseSubcommand(args []string) error {
	if len(args) == 0 {
		return usageError{"want a subcommand: " + strings.Join(configSubcommands, ", ")}
	}
	sub := args[0]
	switch sub {
	case "-h", "-help", "--help":
		return flag.ErrHelp
	case "help": // cdc-relay config help [subcommand]
		if len(args) > 1 {
			if err := checkConfigSubcommand(args[1]); err != nil {
				return err
			}
			c.sub = args[1]
		}
		return flag.ErrHelp
	}
	if strings.HasPrefix(sub, "-") {
		return usageError{fmt.Sprintf("flag %s before the subcommand: flags go after it, as in 'cdc-relay config from-debezium %s'", sub, sub)}
	}
	if err := checkConfigSubcommand(sub); err != nil {
		return err
	}
	c.sub = sub
	return nil
}

// checkConfigSubcommand returns a usageError unless sub is one of
// config's.
func checkConfigSubcommand(sub string) error {
	if slices.Contains(configSubcommands, sub) {
		return nil
	}
	msg := fmt.Sprintf("unknown subcommand %q", sub)
	if s := suggest.Name(sub, configSubcommands); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	} else {
		msg += ": want " + strings.Join(configSubcommands, ", ")
	}
	return usageError{msg}
}
