package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/cdc-relay/cdc-relay/backfill"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// report prints what the backfill did: the dry run's count, the summary,
// and, when it stopped early, the command that resumes it.
func (c *BackfillCommand) report(res backfill.Result, err error) error {
	switch {
	case c.opts.DryRun && err == nil:
		fmt.Fprintln(c.stdout, backfill.DryRunSummary(res))
		return nil
	case res.Rows == 0 && res.Skipped == 0 && err != nil && !res.Stopped:
		// Nothing published: there is nothing to resume after.
		return fmt.Errorf("%w (no row was published yet: once the cause is fixed, run the same command again)", err)
	}
	fmt.Fprintln(c.stdout, backfill.Summary(res.Progress))
	if err == nil && !res.Stopped {
		return nil
	}
	if res.LastKey == "" {
		fmt.Fprintln(c.stdout, "stopped before the first batch was published: run the same command again")
		if err == nil {
			return exitCodeError{code: 1}
		}
		return err
	}
	c.printResume(res.LastKey)
	if err == nil {
		return exitCodeError{code: 1, err: errors.New("stopped before the last row: resume with the command above")}
	}
	return err
}

// resumeCommand is the command line of this backfill, rebuilt from the
// flags as parsed (those set on the command line: a variable of the
// environment sets its flag again), with --after key instead of any
// given; the connection string's passwords left out
// ([pgerr.WithoutPasswords]), which masked reports.
func resumeCommand(fs *flag.FlagSet, key string) (cmd string, masked bool) {
	words := []string{"cdc-relay", "backfill"}
	fs.Visit(func(f *flag.Flag) {
		if _, env := f.Value.(fromEnvironment); env || f.Name == "after" {
			return
		}
		v := f.Value.String()
		if f.Name == "postgres-url" {
			v, masked = pgerr.WithoutPasswords(v)
		}
		if isBoolFlag(f.Value) {
			words = append(words, shellQuote("--"+f.Name+"="+v))
			return
		}
		words = append(words, "--"+f.Name, shellQuote(v))
	})
	return strings.Join(append(words, "--after", shellQuote(key)), " "), masked
}

// printResume prints the command that resumes the backfill after key,
// and, when its password is masked, how to give it.
func (c *BackfillCommand) printResume(key string) {
	cmd, masked := resumeCommand(c.parsed, key)
	fmt.Fprintf(c.stdout, "stopped: every selected row up to key %s was published; to resume:\n  %s\n", key, cmd)
	if masked {
		fmt.Fprintln(c.stdout, "  (the passwords of --postgres-url are left out: give them in PGPASSWORD and PGSSLPASSWORD or a password file, "+
			"or set CDC_RELAY_POSTGRES_URL and leave --postgres-url out)")
	}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
