package main

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"
)

// TestRecoverTakesEveryFlagOfRun: recover's help says it accepts every
// flag of run, so that one command line (or one environment) serves both.
func TestRecoverTakesEveryFlagOfRun(t *testing.T) {
	recoverFlags := (&RecoverCommand{}).flags()
	(&RunCommand{}).flags().VisitAll(func(f *flag.Flag) {
		if recoverFlags.Lookup(f.Name) == nil {
			t.Errorf("recover refuses run's --%s", f.Name)
		}
	})

	// Run's own flags, on the command line and in the environment, get
	// as far as the missing PostgreSQL URL.
	clearEnv(t)
	t.Setenv("CDC_RELAY_LOG_FORMAT", "json")
	t.Setenv("CDC_RELAY_ADMIN_TOKEN", "s3cret")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"recover", "--metrics-addr", "127.0.0.1:9999", "--delivery", "exactly-once",
		"--debug-addr", "127.0.0.1:0", "--log-level", "debug", "--kafka-brokers", "k:9092"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), postgresURLRequired) {
		t.Errorf("exit %d, want 2 and %q:\n%s", code, postgresURLRequired, stderr.String())
	}

	// The log's flags are recover's too: a level it cannot use is refused.
	stderr.Reset()
	code = Main(context.Background(), []string{"recover", "--postgres-url", "postgres://relay@127.0.0.1:1/app",
		"--kafka-brokers", "k:9092", "--log-level", "loud"}, &stdout, &stderr)
	if want := `--log-level "loud"`; code != 2 || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, want 2 and %q:\n%s", code, want, stderr.String())
	}
}
