package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestBackfillCommandLine: what backfill refuses before it connects, and
// which table it maps with --config.
func TestBackfillCommandLine(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "relay.yaml")
	if err := os.WriteFile(cfgFile, []byte(`tables:
  - {table: public.outbox, value: payload, topic: orders}
  - {table: app.events, id: position, value: data, topic: events}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--postgres-url", "postgres://x@127.0.0.1:1/db", "--kafka-brokers", "k:9092"}
	for _, tc := range []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stderr string
	}{
		{"no predicate", conn, nil, 2, "--where is required"},
		{"predicate from the environment", conn, map[string]string{"CDC_RELAY_WHERE": "true"}, 2, "--where is required"},
		{"a bad rate", append([]string{"--where", "true", "--rate", "fast"}, conn...), nil, 2, "want rows a second, such as 500/s"},
		{"a rate not a number", append([]string{"--where", "true", "--rate", "NaN"}, conn...), nil, 2, "want rows a second, such as 500/s"},
		{"an infinite rate", append([]string{"--where", "true", "--rate", "+Inf/s"}, conn...), nil, 2, "want rows a second, such as 500/s"},
		{"a bad batch", append([]string{"--where", "true", "--batch", "0"}, conn...), nil, 2, "--batch must be at least 1"},
		{"a table not in the file", append([]string{"--where", "true", "--config", cfgFile, "--table", "app.other"}, conn...), nil, 2,
			"--table app.other is not in " + cfgFile + ", whose tables are public.outbox, app.events"},
		{"a mapping flag beside the file", append([]string{"--where", "true", "--config", cfgFile, "--key-column", "k"}, conn...), nil, 2,
			"--key-column maps the one table of the command line"},
		{"the file's table, then no database", append([]string{"--where", "true", "--config", cfgFile, "--table", "app.events"}, conn...), nil, 1,
			`connect to PostgreSQL at 127.0.0.1:1 as "x"`},
		{"a dry run needs no Kafka", []string{"--where", "true", "--dry-run", "--postgres-url", "postgres://x@127.0.0.1:1/db"}, nil, 1,
			`connect to PostgreSQL at 127.0.0.1:1 as "x"`},
		{"a bad topic override", append([]string{"--where", "true", "--topic-override", "a b"}, conn...), nil, 1, "topic override"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), append([]string{"backfill"}, tc.args...), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d, want %d and %q:\n%s", code, tc.code, tc.stderr, stderr.String())
			}
		})
	}
}

// TestBackfillResumeCommand: the command that resumes a stopped backfill
// is the one given, rebuilt from its parsed flags (a value that reads as a
// flag's name kept, a flag of the environment left to it), with --after
// the last key, quoted for a shell, the connection string's passwords
// (user information, password and sslpassword parameters or keywords) left
// out and said so.
func TestBackfillResumeCommand(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		args   []string
		env    map[string]string
		key    string
		want   string
		masked bool
	}{
		{[]string{"--table", "app.events", "--where", "created_at > now() - interval '1 hour'", "--after", "12"}, nil, "4000",
			`cdc-relay backfill --table app.events --where 'created_at > now() - interval '\''1 hour'\''' --after 4000`, false},
		{[]string{"--after=12", "--where=true", "--postgres-url", "postgres://relay:s3cret@db:5432/app?sslmode=require"}, nil, `["a b","7"]`,
			`cdc-relay backfill --postgres-url 'postgres://relay@db:5432/app?sslmode=require' --where true --after '["a b","7"]'`, true},
		{[]string{"--postgres-url=host=db user=relay password='s3 cret' dbname=app", "--where", "true"}, nil, "x",
			`cdc-relay backfill --postgres-url 'host=db user=relay dbname=app' --where true --after x`, true},
		{[]string{"--postgres-url", "postgres://u:s3cret@h1,h2:5433/db?password=s3cret&sslkey=/k/c.key&sslpassword=s3cret&target_session_attrs=read-write"}, nil, "1",
			`cdc-relay backfill --postgres-url 'postgres://u@h1,h2:5433/db?sslkey=/k/c.key&target_session_attrs=read-write' --after 1`, true},
		{[]string{"--topic-override", "after", "--where", "after", "--rate", "500", "--dry-run=false"}, map[string]string{"CDC_RELAY_POSTGRES_URL": "postgres://relay:s3cret@db/app"}, "9",
			`cdc-relay backfill --dry-run=false --rate 500/s --topic-override after --where after --after 9`, false},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		c := &BackfillCommand{}
		fs := c.flags()
		if err := parseFlags(fs, tc.args); err != nil {
			t.Fatal(err)
		}
		got, masked := resumeCommand(fs, tc.key)
		if got != tc.want || masked != tc.masked || strings.Contains(got, "cret") || strings.Contains(got, "password=") {
			t.Errorf("resume command (masked %v)\n%s\nwant (masked %v)\n%s", masked, got, tc.masked, tc.want)
		}
	}
}

// TestInterruptedExitCode: a command whose context a signal ended exits
// with the shell's code of that signal (130 for Ctrl-C), its message
// kept; a failure without a signal keeps its code.
func TestInterruptedExitCode(t *testing.T) {
	stopped := exitCodeError{code: 1, err: errors.New("stopped before the last row")}
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		ctx, stop := signal.NotifyContext(context.Background(), sig)
		if err := syscall.Kill(os.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
		<-ctx.Done()
		var ec exitCodeError
		if err := interrupted(ctx, stopped); !errors.As(err, &ec) || ec.code != want || err.Error() != stopped.err.Error() {
			t.Errorf("after %v: %#v, want exit %d with %q", sig, err, want, stopped.err)
		}
		if err := interrupted(ctx, nil); err != nil {
			t.Errorf("after %v, a command that ended well: %v", sig, err)
		}
		stop()
	}
	if err := interrupted(context.Background(), stopped); err != error(stopped) {
		t.Errorf("without a signal: %#v, want %#v", err, stopped)
	}
}
