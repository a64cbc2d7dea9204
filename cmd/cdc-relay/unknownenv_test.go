package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUnknownEnv: a CDC_RELAY_ variable that no command reads is warned
// about with the nearest known name; one that some command reads (another
// command's flag too), a non-flag one, and variables of other programs
// are not, nor a command-line-only flag's.
func TestUnknownEnv(t *testing.T) {
	known := knownEnv(allFlagSets())
	for _, tc := range []struct {
		env  string
		want string // "" for no warning
	}{
		{env: "CDC_RELAY_SLOT=s"},
		{env: "CDC_RELAY_KAFKA_BROKERS=k:9092"}, // run's and migrate's, fine for failed
		{env: "CDC_RELAY_KAFKA_SASL_PASSWORD=secret"},
		{env: "CDC_RELAY_POSTGRES_URL_FILE=/run/secrets/pg"},
		{env: "CDC_RELAY_ADMIN_TOKEN=t"},
		{env: "CDC_RELAY_TEST_PG=15"},        // demo's PostgreSQL
		{env: "CDC_RELAY_TEST_KAFKA=apache"}, // the repository's tests'
		{env: "CDC_RELAY_TEST_CLAIM_WAITING=1000"},
		{env: "PATH=/bin"},
		{env: "CDC_RELAY_SLOTT=s", want: "unknown environment variable CDC_RELAY_SLOTT: no flag reads it; did you mean CDC_RELAY_SLOT?"},
		{env: "CDC_RELAY_DELIVERY_MODE=exactly-once", want: "unknown environment variable CDC_RELAY_DELIVERY_MODE: no flag reads it; did you mean CDC_RELAY_DELIVERY?"},
		{env: "CDC_RELAY_KAFKA_BROKER=k:9092", want: "did you mean CDC_RELAY_KAFKA_BROKERS?"},
		{env: "CDC_RELAY_ZZZZZZZZZZZZ=1", want: "unknown environment variable CDC_RELAY_ZZZZZZZZZZZZ: no flag reads it"},
		{env: "CDC_RELAY_PRINT_GRANTS=relay"}, // a flag's, read from the command line only
		{env: "CDC_RELAY_SLOTT=hunter2", want: "CDC_RELAY_SLOTT"},
	} {
		got := strings.Join(unknownEnv([]string{tc.env}, known), "\n")
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: warned %q, want nothing", tc.env, got)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: warned %q, want %q", tc.env, got, tc.want)
		case strings.Contains(got, "hunter2") || strings.Contains(got, "exactly-once"):
			t.Errorf("%s: the warning shows the value: %q", tc.env, got)
		}
	}
}

// TestMainWarnsOfUnknownEnv: every command but run (which logs it) warns
// on stderr, once per variable, before it runs.
func TestMainWarnsOfUnknownEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("CDC_RELAY_SLOTT", "s")
	for _, args := range [][]string{{"version"}, {"migrate", "--print-grants", "relay"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(t.Context(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr.String())
		}
		want := "cdc-relay " + args[0] + ": warning: unknown environment variable CDC_RELAY_SLOTT: no flag reads it; did you mean CDC_RELAY_SLOT?\n"
		if stderr.String() != want {
			t.Errorf("%v: stderr %q, want %q", args, stderr.String(), want)
		}
	}
}
