package main

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/cdc-relay/cdc-relay/backfill"
)

// report prints what the backfill did: the dry run's count, the summary,
// and, when it stopped early, the command that resumes it.
func (c *BackfillCommand) report(res backfill.Result, err error) error {
	switch {
	case c.opts.DryRun && err == nil:
		fmt.Fprintln(c.stdout, backfill.DryRunSummary(res))
		return nil
	case res.Rows == 0 && res.Skipped == 0 && err != nil && !res.Stopped:
		return err // nothing published
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
	fmt.Fprintf(c.stdout, "stopped: every selected row up to key %s was published; to resume:\n  %s\n", res.LastKey, c.resumeCommand(res.LastKey))
	if err == nil {
		return exitCodeError{code: 1, err: errors.New("stopped before the last row: resume with the command above")}
	}
	return err
}

// resumeCommand is the command line of this backfill, with --after key:
// the connection string's password masked.
func (c *BackfillCommand) resumeCommand(key string) string {
	words := []string{"cdc-relay", "backfill"}
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name == "after" && !hasValue:
			i++ // its value follows
			continue
		case name == "after":
			continue
		case name == "postgres-url" && hasValue:
			a = "--postgres-url=" + maskPassword(value)
		case name == "postgres-url" && i+1 < len(c.args):
			words = append(words, shellQuote(a))
			i++
			a = maskPassword(c.args[i])
		}
		words = append(words, shellQuote(a))
	}
	return strings.Join(append(words, "--after", shellQuote(key)), " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// keywordPassword is the password of a keyword/value connection string.
var keywordPassword = regexp.MustCompile(`password\s*=\s*('(\\.|[^'])*'|\S+)`)

// maskPassword is a connection string with its password, if any, masked:
// the resume command is printed, and may go to a log.
func maskPassword(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
		return s
	}
	return keywordPassword.ReplaceAllString(s, "password=xxxxx")
}
