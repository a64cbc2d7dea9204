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
	"strings"
	"syscall"
	// The IANA time zone database, embedded (about 450 KB): a config
	// file's time_zone is read in a container without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/cdc-relay/cdc-relay/internal/suggest"
	// Mozilla's root certificates, embedded (about 160 KB), used only where
	// the system has none: the release's container image has no
	// /etc/ssl/certs, and without them TLS to a managed PostgreSQL
	// (sslmode=verify-full) or Kafka fails with "x509: certificate signed
	// by unknown authority". A system bundle, or SSL_CERT_FILE, still wins.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	// SIGHUP as well: closing the terminal must stop the relay, or the demo
	// and its throwaway PostgreSQL, as cleanly as Ctrl-C does.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is a subcommand.
type command interface {
	// Run parses args and runs. It returns flag.ErrHelp for -h or --help,
	// a usageError for a mistake on the command line.
	Run(ctx context.Context, args []string) error
	// Usage writes the command's help: what it does and its flags.
	Usage(w io.Writer)
}

// commandNames are the commands, in the order of the top-level usage.
var commandNames = []string{"migrate", "run", "status", "failed", "pause", "resume", "recover", "backfill", "audit", "check-config", "config", "demo", "version", "completion", "help"}

// newCommand returns the command called name, or nil.
func newCommand(name string, stdout, stderr io.Writer) command {
	switch name {
	case "migrate":
		return &MigrateCommand{stdout: stdout, stderr: stderr}
	case "run":
		return &RunCommand{stdout: stdout, stderr: stderr}
	case "status":
		return &StatusCommand{stdout: stdout, stderr: stderr}
	case "failed":
		return &FailedCommand{stdout: stdout, stderr: stderr}
	case "pause", "resume":
		return &PauseCommand{stdout: stdout, stderr: stderr, resume: name == "resume"}
	case "recover":
		return &RecoverCommand{stdout: stdout, stderr: stderr}
	case "backfill":
		return &BackfillCommand{stdout: stdout, stderr: stderr}
	case "audit":
		return &AuditCommand{stdout: stdout, stderr: stderr}
	case "check-config":
		return &CheckConfigCommand{stdout: stdout, stderr: stderr}
	case "config":
		return &ConfigCommand{stdout: stdout, stderr: stderr, stdin: os.Stdin}
	case "demo":
		return &DemoCommand{stdout: stdout, stderr: stderr}
	case "version":
		return &VersionCommand{stdout: stdout}
	case "completion":
		return &CompletionCommand{stdout: stdout}
	}
	return nil
}

// Main runs the command line and returns the exit code: 0 on success, a
// clean stop or help, 1 on error, 2 on a usage error, or the code of an
// exitCodeError (status's 3). Help goes to stdout,
// errors to stderr.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-v", "-version", "--version":
		name = "version"
	case "-h", "-help", "--help":
		name = "help"
	}
	if name == "help" {
		return help(args[1:], stdout, stderr)
	}
	cmd := newCommand(name, stdout, stderr)
	if cmd == nil {
		return unknownCommand(name, stderr)
	}
	if name != "run" { // run logs them
		warnUnknownEnv(stderr, name, os.Environ())
	}
	err := cmd.Run(ctx, args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		cmd.Usage(stdout)
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "cdc-relay %s: %v\n", name, err)
		if name == "version" {
			fmt.Fprintln(stderr, "Run 'cdc-relay help version' for its usage.")
		} else {
			fmt.Fprintf(stderr, "Run 'cdc-relay %s -h' for the flags.\n", name)
		}
		return 2
	default:
		code := 1
		var ec exitCodeError
		if errors.As(err, &ec) {
			code = ec.code
		}
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(stderr, "cdc-relay %s: %s\n", name, msg)
		}
		return code
	}
}

// exitCodeError makes Main exit with code, and print err unless it is nil:
// for a command whose output already said what went wrong.
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e exitCodeError) Unwrap() error { return e.err }

// interrupted returns err, the failure of a command whose ctx ended, as an
// exitCodeError with the shell's code of the signal that ended ctx (130
// for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP), keeping its message: a
// script tells an interruption from a failure. nil, and the errors of a
// command whose ctx did not end, are returned as they are.
func interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if ec, ok := err.(exitCodeError); ok {
		err = ec.err
	}
	return exitCodeError{code: signalExitCode(ctx), err: err}
}

// signalExitCode is 128 plus the number of the signal that ended ctx, as
// signal.NotifyContext names it in the context's cause; 130 (SIGINT) when
// the cause names none of the signals main stops on.
func signalExitCode(ctx context.Context) int {
	cause := context.Cause(ctx)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		if cause != nil && strings.HasPrefix(cause.Error(), sig.String()+" signal") {
			return 128 + int(sig)
		}
	}
	return 128 + int(syscall.SIGINT)
}

// help is `cdc-relay help [command]`.
func help(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	if len(args) > 1 {
		fmt.Fprintf(stderr, "cdc-relay help: want one command, got %q\n", strings.Join(args, " "))
		fmt.Fprintln(stderr, "Run 'cdc-relay help' for the commands.")
		return 2
	}
	cmd := newCommand(args[0], stdout, stderr)
	if cmd == nil {
		return unknownCommand(args[0], stderr)
	}
	cmd.Usage(stdout)
	return 0
}

// unknownCommand reports a command that does not exist.
func unknownCommand(name string, stderr io.Writer) int {
	if strings.HasPrefix(name, "-") {
		fmt.Fprintf(stderr, "cdc-relay: unknown flag %s: flags go after the command, as in 'cdc-relay run %s'\n", name, name)
	} else {
		fmt.Fprintf(stderr, "cdc-relay: unknown command %q", name)
		if s := suggest.Name(name, commandNames); s != "" {
			fmt.Fprintf(stderr, " (did you mean %s?)", s)
		}
		fmt.Fprintln(stderr)
	}
	fmt.Fprintln(stderr, "Run 'cdc-relay help' for the commands.")
	return 2
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
  status    how a relay is doing: role, readiness, lag, parked events (--json)
  failed    list, show, retry, skip or purge the events parked in the status table
  pause     pause one topic (--topic, kept in the database) or the running relay
  resume    resume a paused topic (--topic) or the running relay
  recover   publish again the outbox rows of WAL the relay never read (a dropped or re-created slot)
  backfill  publish the rows of one outbox table an SQL predicate selects (a range again, events before the slot)
  audit     check that a table's rows reached Kafka: missing, duplicated, on the wrong topic, out of order
  check-config  check a config file against the database; print a sample record of each table
  config    make a config file: from a Debezium outbox connector's (from-debezium)
  demo      run the relay on a throwaway PostgreSQL and an in-process Kafka broker
  version   print the version (also --version)
  completion  print a shell completion script: bash, zsh or fish
  help      print this help, or a command's: cdc-relay help run

Every flag can also be set by an environment variable: --kafka-brokers is
CDC_RELAY_KAFKA_BROKERS. Run 'cdc-relay <command> -h' for a command's flags.
`)
}

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
