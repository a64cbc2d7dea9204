// Command cdc-relay relays transactional-outbox events from PostgreSQL to
// Kafka by logical replication.
//
// Each subcommand lives in its own file: a small command type with its flag
// set, Run(ctx, args) and usage text.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Version is set at build time with -ldflags "-X main.Version=…".
var Version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs the command line and returns the exit code: 0 on success or a
// clean stop, 1 on error, 2 on a usage error.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = (&RunCommand{stdout: stdout, stderr: stderr}).Run(ctx, args[1:])
	case "migrate":
		err = (&MigrateCommand{stdout: stdout, stderr: stderr}).Run(ctx, args[1:])
	case "demo":
		err = (&DemoCommand{stdout: stdout, stderr: stderr}).Run(ctx, args[1:])
	case "version":
		fmt.Fprintln(stdout, "cdc-relay", Version)
		return 0
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "cdc-relay: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintln(stderr, "cdc-relay:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "cdc-relay:", err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `cdc-relay relays transactional-outbox events from PostgreSQL to Kafka by
logical replication: no polling, nothing lost, the WAL position confirmed only
after Kafka acknowledged every event before it.

Usage:

	cdc-relay <command> [flags]

Commands:

	migrate   prepare a database: outbox table, status and checkpoint tables, publication
	run       stream outbox inserts to Kafka
	demo      run the relay on a throwaway PostgreSQL and an in-process Kafka broker
	version   print the version

Every flag can also be set by an environment variable: --kafka-brokers is
CDC_RELAY_KAFKA_BROKERS. Run "cdc-relay <command> -h" for a command's flags.
`)
}

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
