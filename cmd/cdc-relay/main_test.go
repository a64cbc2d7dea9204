package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
)

// TestMain lets a test run the command line as a separate process (see
// demo_test.go): the test binary, started with CDC_RELAY_TEST_RUN_MAIN=1,
// is cdc-relay. The variable is the test's, not the relay's: it is unset
// before main runs, which would warn of it. Started with
// CDC_RELAY_TEST_VERIFY_ROOTS=1, it verifies a certificate against the
// system's roots (TestTLSWithoutSystemRoots). Otherwise it runs the tests,
// and stops the package's PostgreSQL (pg) after them.
func TestMain(m *testing.M) {
	if os.Getenv("CDC_RELAY_TEST_RUN_MAIN") == "1" {
		os.Unsetenv("CDC_RELAY_TEST_RUN_MAIN")
		main()
		return
	}
	if os.Getenv(rootsHelperEnv) == "1" {
		if err := verifyAgainstSystemRoots("testdata/isrg-root-x1.pem"); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("verified")
		os.Exit(0)
	}
	os.Exit(pg.Run(m))
}

// clearEnv unsets every CDC_RELAY_ variable for the test, so that the
// caller's environment cannot fill a flag.
func clearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CDC_RELAY_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func TestMainExitCodes(t *testing.T) {
	const (
		runHelp   = "Usage: cdc-relay run [flags]"
		topHelp   = "Commands:"
		runHint   = "Run 'cdc-relay run -h' for the flags."
		needsUnit = `a duration needs a unit, such as 30s or 500ms`
	)
	pg := []string{"--postgres-url", "postgres://x@h/db", "--kafka-brokers", "k:9092"}
	// A connection string in a file that parses only as far as its port:
	// the error shows that the file was read, and must not show the
	// password.
	dir := t.TempDir()
	urlFile := filepath.Join(dir, "postgres-url")
	if err := os.WriteFile(urlFile, []byte("\n  host=127.0.0.1 user=relay password = 's3 cret' port=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const fromFile = "cannot parse `host=127.0.0.1 user=relay password = xxxxx port=x`: invalid port"
	configFile := filepath.Join(dir, "relay.yaml")
	if err := os.WriteFile(configFile, []byte("tables:\n  - {table: app_events, value: payload, topic: t}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A table ordered by topic, on its one fixed topic.
	topicFile := filepath.Join(dir, "by-topic.yaml")
	if err := os.WriteFile(topicFile, []byte("tables:\n  - {table: app_events, value: payload, topic: t, ordering: topic}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stdout []string // each must be in stdout; nil: stdout must be empty
		stderr []string // each must be in stderr; nil: stderr must be empty
		absent []string // in neither
	}{
		// The top level.
		{name: "no command", code: 2, stderr: []string{topHelp}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2,
			stderr: []string{`unknown command "frobnicate"`, "Run 'cdc-relay help' for the commands."}, absent: []string{topHelp, "did you mean"}},
		{name: "misspelled command", args: []string{"rnu"}, code: 2, stderr: []string{`unknown command "rnu" (did you mean run?)`}},
		{name: "flag before the command", args: []string{"--postgres-url", "x"}, code: 2, stderr: []string{"flags go after the command"}},
		{name: "help", args: []string{"help"}, code: 0, stdout: []string{topHelp, "migrate"}},
		{name: "--help", args: []string{"--help"}, code: 0, stdout: []string{topHelp}},
		{name: "-h", args: []string{"-h"}, code: 0, stdout: []string{topHelp}},
		{name: "help run", args: []string{"help", "run"}, code: 0, stdout: []string{runHelp, "CDC_RELAY_KAFKA_BROKERS", "--stop-timeout duration"}, absent: []string{topHelp}},
		{name: "-h run", args: []string{"-h", "run"}, code: 0, stdout: []string{runHelp}, absent: []string{topHelp}},
		{name: "help migrate", args: []string{"help", "migrate"}, code: 0, stdout: []string{"Usage: cdc-relay migrate", "--skip-outbox"}},
		{name: "help demo", args: []string{"help", "demo"}, code: 0, stdout: []string{"Usage: cdc-relay demo", "--per-tx"}},
		{name: "help version", args: []string{"help", "version"}, code: 0, stdout: []string{"Usage: cdc-relay version"}},
		{name: "help help", args: []string{"help", "help"}, code: 0, stdout: []string{topHelp}},
		{name: "help -h", args: []string{"help", "-h"}, code: 0, stdout: []string{topHelp}},
		{name: "help nosuch", args: []string{"help", "nosuch"}, code: 2, stderr: []string{`unknown command "nosuch"`}},
		{name: "help two commands", args: []string{"help", "run", "demo"}, code: 2, stderr: []string{"want one command"}},
		{name: "version", args: []string{"version"}, code: 0, stdout: []string{"cdc-relay " + buildinfo.Get().String() + "\n"}},
		{name: "--version", args: []string{"--version"}, code: 0, stdout: []string{"cdc-relay " + buildinfo.Get().String() + "\n"}},
		{name: "-version", args: []string{"-version"}, code: 0, stdout: []string{"cdc-relay " + buildinfo.Get().String() + "\n"}},
		{name: "-v", args: []string{"-v"}, code: 0, stdout: []string{"cdc-relay " + buildinfo.Get().String() + "\n"}},
		{name: "version with an argument", args: []string{"version", "extra"}, code: 2, stderr: []string{`unexpected argument "extra"`}},

		// Help goes to stdout with exit 0, however asked.
		{name: "run -h", args: []string{"run", "-h"}, code: 0, stdout: []string{runHelp, "CDC_RELAY_KAFKA_BROKERS"}},
		{name: "run --help", args: []string{"run", "--help"}, code: 0, stdout: []string{runHelp}},
		{name: "run -help after flags", args: append(append([]string{"run"}, pg...), "-help"), code: 0, stdout: []string{runHelp}},
		{name: "migrate -h", args: []string{"migrate", "-h"}, code: 0, stdout: []string{"Usage: cdc-relay migrate", "CDC_RELAY_POSTGRES_URL"}},
		{name: "demo --help", args: []string{"demo", "--help"}, code: 0, stdout: []string{"Usage: cdc-relay demo", "CDC_RELAY_EVENTS"}},
		{name: "version -h", args: []string{"version", "-h"}, code: 0, stdout: []string{"Usage: cdc-relay version"}},

		// Usage errors: the error and a one-line hint on stderr, exit 2.
		{name: "run without postgres", args: []string{"run", "--kafka-brokers", "k:9092"}, code: 2,
			stderr: []string{"cdc-relay run: --postgres-url (or CDC_RELAY_POSTGRES_URL) is required", runHint}},
		{name: "run without brokers", args: []string{"run", "--postgres-url", "postgres://x@h/db"}, code: 2, stderr: []string{"--kafka-brokers"}},
		{name: "bad table", args: append(append([]string{"run"}, pg...), "--table", "a.b.c"), code: 2, stderr: []string{`--table "a.b.c"`}},
		{name: "bad env number", args: []string{"run"}, env: map[string]string{"CDC_RELAY_MAX_IN_FLIGHT_EVENTS": "lots"}, code: 2,
			stderr: []string{`CDC_RELAY_MAX_IN_FLIGHT_EVENTS="lots": want a whole number`}},
		{name: "bad number", args: []string{"run", "--max-in-flight-bytes", "64MB"}, code: 2, stderr: []string{`--max-in-flight-bytes "64MB": want a whole number`}},
		{name: "bad env bool", args: []string{"run"}, env: map[string]string{"CDC_RELAY_KAFKA_CREATE_TOPICS": "yes"}, code: 2,
			stderr: []string{`CDC_RELAY_KAFKA_CREATE_TOPICS="yes": want true or false`}},
		{name: "duration without unit", args: []string{"run", "--stop-timeout", "30"}, code: 2,
			stderr: []string{`cdc-relay run: --stop-timeout "30": ` + needsUnit + "\n", runHint}, absent: []string{"parse error"}},
		{name: "duration without unit, with =", args: []string{"run", "--status-interval=1"}, code: 2, stderr: []string{`--status-interval "1": ` + needsUnit}},
		{name: "duration without unit from env", args: append([]string{"run"}, pg...), env: map[string]string{"CDC_RELAY_STOP_TIMEOUT": "30"}, code: 2,
			stderr: []string{`CDC_RELAY_STOP_TIMEOUT="30": ` + needsUnit}, absent: []string{"parse error"}},
		{name: "not a duration", args: []string{"run", "--kafka-linger", "soon"}, code: 2, stderr: []string{`--kafka-linger "soon": not a duration`}},
		{name: "unknown codec", args: []string{"run", "--kafka-compression", "brotli"}, code: 2,
			stderr: []string{`--kafka-compression "brotli": not a codec: want one of none, gzip, snappy, lz4, zstd`, runHint}},
		{name: "unknown codec from env", args: []string{"run"}, env: map[string]string{"CDC_RELAY_KAFKA_COMPRESSION": "lzma"}, code: 2,
			stderr: []string{`CDC_RELAY_KAFKA_COMPRESSION="lzma": not a codec: want one of none, gzip, snappy, lz4, zstd`}},
		{name: "batch size too small", args: []string{"run", "--kafka-batch-max-bytes", "100"}, code: 2,
			stderr: []string{`--kafka-batch-max-bytes "100": want 1024 to 104857600 bytes, and no more than the brokers' message.max.bytes`}},
		{name: "batch size not a number", args: []string{"run", "--kafka-batch-max-bytes", "1MB"}, code: 2,
			stderr: []string{`--kafka-batch-max-bytes "1MB": not a number of bytes`}},
		{name: "negative duration", args: []string{"run", "--stop-timeout", "-5s"}, code: 2, stderr: []string{`--stop-timeout "-5s": a duration cannot be negative`}},
		{name: "unknown --on-slot-loss", args: append(append([]string{"run"}, pg...), "--on-slot-loss", "ignore"), code: 2,
			stderr: []string{`--on-slot-loss "ignore": want refuse or recover`, runHint}},
		{name: "unknown --ordering", args: append(append([]string{"run"}, pg...), "--ordering", "commit"), code: 2,
			stderr: []string{`--ordering "commit": want key, topic or none`, runHint}},
		{name: "--ordering topic with exactly-once", args: append(append([]string{"run"}, pg...), "--ordering", "topic", "--delivery", "exactly-once"), code: 2,
			stderr: []string{`--ordering topic is not built for exactly-once delivery yet`, runHint}},
		{name: "a table ordered by topic beside --ordering none", args: append([]string{"run", "--config", topicFile, "--ordering", "none", "--retention", "0s"}, pg...),
			code: 2, stderr: []string{"table public.app_events: ordering topic beside --ordering none", "use --ordering key (the default) with it", runHint}},
		{name: "a table ordered by topic with exactly-once", args: append([]string{"run", "--config", topicFile, "--delivery", "exactly-once", "--retention", "0s"}, pg...),
			code: 2, stderr: []string{"table public.app_events: ordering topic is not built for exactly-once delivery yet", runHint}},
		{name: "--on-slot-loss recover with --accept-slot-loss", args: append(append([]string{"run"}, pg...), "--accept-slot-loss"),
			env: map[string]string{"CDC_RELAY_ON_SLOT_LOSS": "recover"}, code: 2,
			stderr: []string{"--on-slot-loss recover and --accept-slot-loss exclude each other"}},
		{name: "--on-slot-loss recover without a timestamp column", args: append(append([]string{"run"}, pg...), "--on-slot-loss", "recover", "--timestamp-column", ""),
			code: 1, stderr: []string{"--on-slot-loss recover cannot be used", "set --timestamp-column"}},
		{name: "default retention on a table of your own", args: append(append([]string{"run"}, pg...), "--table", "public.events", "--timestamp-column", "occurred_at"), code: 2,
			stderr: []string{`--table public.events is a table of your own (migrate creates public.outbox)`, "give --retention 0s to keep every row", "or --retention 7d to delete them"}},
		{name: "default retention on a table of your own with created_at", args: append([]string{"run"}, pg...), env: map[string]string{"CDC_RELAY_TABLE": "app_outbox"}, code: 2,
			stderr: []string{`--table public.app_outbox is a table of your own (migrate creates public.outbox)`, "the default --retention 7d would delete its rows"}},
		{name: "default retention on the outbox table with another time column", args: append(append([]string{"run"}, pg...), "--timestamp-column", "occurred_at"), code: 2,
			stderr: []string{`--timestamp-column "occurred_at" maps a table of your own`, "give --retention 0s to keep every row"}},
		{name: "zero interval", args: append(append([]string{"run"}, pg...), "--checkpoint-interval", "0s"), code: 2,
			stderr: []string{"--checkpoint-interval must be more than 0s (the default is 250ms)"}},
		{name: "zero replication timeout", args: append(append([]string{"run"}, pg...), "--replication-timeout", "0s"), code: 2,
			stderr: []string{"--replication-timeout must be more than 0s (the default is 30s)"}},
		{name: "slot name with capitals", args: append(append([]string{"run"}, pg...), "--slot", "MySlot"), code: 2,
			stderr: []string{`--slot: replication slot name "MySlot" has 'M'`, `(use "myslot")`}},
		{name: "migrate: slot name with capitals", args: append(append([]string{"migrate"}, pg[:2]...), "--slot", "MySlot"), code: 2,
			stderr: []string{`--slot: replication slot name "MySlot" has 'M'`}},
		{name: "recover reads the URL file", args: []string{"recover", "--postgres-url-file", urlFile, "--kafka-brokers", "k:9092"}, code: 1,
			stderr: []string{fromFile}, absent: []string{"cret"}},
		{name: "empty publication", args: append(append([]string{"migrate"}, pg[:2]...), "--publication", ""), code: 2,
			stderr: []string{"--publication is empty"}},
		{name: "mistyped flag", args: []string{"run", "--kafka-broker", "k:9092"}, code: 2,
			stderr: []string{"cdc-relay run: flag provided but not defined: -kafka-broker (did you mean --kafka-brokers?)\n" + runHint + "\n"},
			absent: []string{runHelp, "Flags", "CDC_RELAY_"}},
		{name: "shortened flag", args: []string{"run", "--brokers", "k:9092"}, code: 2, stderr: []string{"(did you mean --kafka-brokers?)"}},
		// status reads no publication: it does not offer the flag.
		{name: "status: no --publication", args: []string{"status", "--metrics-addr", "127.0.0.1:1", "--publication", "p"}, code: 2,
			stderr: []string{"cdc-relay status: flag provided but not defined: -publication"}},
		{name: "swapped letters", args: []string{"migrate", "--tabel", "x"}, code: 2, stderr: []string{"(did you mean --table?)", "Run 'cdc-relay migrate -h' for the flags."}},
		{name: "unknown flag, nothing near", args: []string{"run", "--xyzzy"}, code: 2, stderr: []string{"flag provided but not defined: -xyzzy\n"}, absent: []string{"did you mean"}},
		{name: "flag without its value", args: []string{"run", "--postgres-url"}, code: 2, stderr: []string{"--postgres-url needs a value"}},
		{name: "bool flag with a separate value", args: append(append([]string{"run"}, pg...), "--kafka-create-topics", "false"), code: 2,
			stderr: []string{`unexpected argument "false" (a true/false flag takes its value after '=': --kafka-create-topics=false)`}},
		{name: "bad log level", args: append(append([]string{"run"}, pg...), "--log-level", "loud"), code: 2, stderr: []string{`--log-level "loud"`}},
		{name: "migrate without postgres", args: []string{"migrate"}, code: 2, stderr: []string{"--postgres-url"}},
		{name: "both URL flags", args: []string{"run", "--postgres-url", "postgres://x@h/db", "--postgres-url-file", urlFile, "--kafka-brokers", "k:9092"}, code: 2,
			stderr: []string{"both --postgres-url and --postgres-url-file are set"}, absent: []string{"cret"}},
		{name: "URL in the environment, file on the command line", args: []string{"migrate", "--postgres-url-file", urlFile},
			env: map[string]string{"CDC_RELAY_POSTGRES_URL": "postgres://x@h/db"}, code: 2, stderr: []string{"both --postgres-url and --postgres-url-file are set"}},
		{name: "missing URL file", args: []string{"failed", "list", "--postgres-url-file", filepath.Join(dir, "nosuch")}, code: 2,
			stderr: []string{"--postgres-url-file: open " + filepath.Join(dir, "nosuch") + ": no such file or directory"}},
		{name: "empty URL file", args: []string{"run", "--postgres-url-file", emptyFile, "--kafka-brokers", "k:9092"}, code: 2,
			stderr: []string{fmt.Sprintf("--postgres-url-file %q is empty", emptyFile)}},
		{name: "stray argument", args: []string{"migrate", "extra"}, code: 2, stderr: []string{`unexpected argument "extra"`}},
		// A flag that must not be set, set in the environment: the error
		// names the variable, which is easy to forget.
		{name: "a mapping flag beside --config", args: append([]string{"run", "--config", configFile, "--table", "x"}, pg...), code: 2,
			stderr: []string{"--table maps the one table of the command line; with --config, map the tables in " + configFile + " (or leave out --config)"},
			absent: []string{"environment"}},
		{name: "a mapping flag in the environment beside --config", args: append([]string{"run", "--config", configFile}, pg...),
			env: map[string]string{"CDC_RELAY_TABLE": "x"}, code: 2,
			stderr: []string{"CDC_RELAY_TABLE is set in the environment, and --table maps the one table of the command line; with --config, map the tables in " +
				configFile + " and unset CDC_RELAY_TABLE (or leave out --config)"}},
		{name: "an exactly-once flag in the environment", args: append([]string{"run"}, pg...), env: map[string]string{"CDC_RELAY_CHECKPOINT_TOPIC": "x"}, code: 2,
			stderr: []string{"CDC_RELAY_CHECKPOINT_TOPIC is set in the environment, and --checkpoint-topic applies to --delivery exactly-once only: unset CDC_RELAY_CHECKPOINT_TOPIC"}},
		{name: "an exactly-once flag", args: append([]string{"run", "--transaction-interval", "1s"}, pg...), code: 2,
			stderr: []string{"--transaction-interval applies to --delivery exactly-once only"}, absent: []string{"environment"}},
		{name: "demo negative events", args: []string{"demo", "--events", "-1"}, code: 2, stderr: []string{"--events -1"}},
		{name: "demo no events per transaction", args: []string{"demo", "--per-tx", "0"}, code: 2, stderr: []string{"--per-tx 0"}},

		// Errors: exit 1 (status: 3, no relay answers), with context, and never a password.
		{name: "status cannot connect", args: []string{"status", "--metrics-addr", "127.0.0.1:1",
			"--postgres-url", "postgres://relay:s3cret@127.0.0.1:1/app?connect_timeout=5"}, code: statusNoRelay,
			stderr: []string{"connect to PostgreSQL at 127.0.0.1:1"}, absent: []string{"s3cret"}},
		{name: "status with an unparsable connection string", args: []string{"status", "--metrics-addr", "127.0.0.1:1",
			"--postgres-url", "host=127.0.0.1 user=relay password = 's3 cret' port=x"}, code: statusNoRelay,
			stderr: []string{"parse PostgreSQL URL"}, absent: []string{"cret"}},
		{name: "migrate warns of a multi-host URL that may take a standby", args: []string{"migrate",
			"--postgres-url", "postgres://relay:s3cret@127.0.0.1:1,127.0.0.1:2/app?connect_timeout=5"}, code: 1,
			stderr: []string{"cdc-relay migrate: warning: the PostgreSQL URL lists 2 servers (127.0.0.1:1,127.0.0.1:2) without target_session_attrs=read-write",
				"add target_session_attrs=read-write"}, absent: []string{"s3cret"}},
		{name: "migrate of a multi-host URL for the primary", args: []string{"migrate",
			"--postgres-url", "postgres://relay@127.0.0.1:1,127.0.0.1:2/app?connect_timeout=5&target_session_attrs=read-write"}, code: 1,
			stderr: []string{"cdc-relay migrate: connect to PostgreSQL"}, absent: []string{"warning"}},
		{name: "migrate cannot connect", args: []string{"migrate", "--postgres-url", "postgres://relay:s3cret@127.0.0.1:1/app?connect_timeout=5"}, code: 1,
			stderr: []string{"cdc-relay migrate: connect to PostgreSQL"}, absent: []string{"s3cret"}},
		// A connection string that does not parse is quoted without its
		// password, in the spaced and quoted forms too.
		{name: "run with an unparsable connection string", args: []string{"run", "--kafka-brokers", "k:9092",
			"--postgres-url", "host=127.0.0.1 user=relay password = 's3 cret' port=x"}, code: 1,
			stderr: []string{"parse PostgreSQL URL: cannot parse `host=127.0.0.1 user=relay password = xxxxx port=x`: invalid port"}, absent: []string{"cret"}},
		{name: "migrate with an unparsable connection string", args: []string{"migrate", "--postgres-url", "host=127.0.0.1 password= s3cret port=x"}, code: 1,
			stderr: []string{"cannot parse `host=127.0.0.1 password=", "invalid port"}, absent: []string{"cret"}},
		{name: "run reads the URL file", args: []string{"run", "--postgres-url-file", urlFile, "--kafka-brokers", "k:9092"}, code: 1,
			stderr: []string{fromFile}, absent: []string{"cret"}},
		{name: "migrate reads the URL file", args: []string{"migrate"}, env: map[string]string{"CDC_RELAY_POSTGRES_URL_FILE": urlFile}, code: 1,
			stderr: []string{fromFile}, absent: []string{"cret"}},
		{name: "failed reads the URL file", args: []string{"failed", "show", "1", "--postgres-url-file", urlFile}, code: 1,
			stderr: []string{fromFile}, absent: []string{"cret"}},
		{name: "config without a subcommand", args: []string{"config"}, code: 2, stderr: []string{"want a subcommand: from-debezium", "Run 'cdc-relay config -h'"}},
		{name: "config -h", args: []string{"config", "-h"}, code: 0, stdout: []string{"Usage: cdc-relay config <subcommand>", "from-debezium FILE"}},
		{name: "help config", args: []string{"help", "config"}, code: 0, stdout: []string{"Usage: cdc-relay config <subcommand>"}},
		{name: "config help from-debezium", args: []string{"config", "help", "from-debezium"}, code: 0, stdout: []string{"Usage: cdc-relay config from-debezium", "--slot name"}},
		{name: "config from-debezium without a file", args: []string{"config", "from-debezium"}, code: 2, stderr: []string{"from-debezium: want one FILE"}},
		{name: "config with a flag first", args: []string{"config", "--slot", "s"}, code: 2, stderr: []string{"flags go after it"}},
		{name: "failed with an unparsable connection string", args: []string{"failed", "list", "--postgres-url", `host=127.0.0.1 password ='s3\' cret' port=x`}, code: 1,
			stderr: []string{"cannot parse `host=127.0.0.1 password =xxxxx port=x`"}, absent: []string{"cret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tt.args, &stdout, &stderr)
			report := "stdout:\n" + stdout.String() + "\nstderr:\n" + stderr.String()
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; %s", code, tt.code, report)
			}
			for _, c := range []struct {
				name string
				got  string
				want []string
			}{{"stdout", stdout.String(), tt.stdout}, {"stderr", stderr.String(), tt.stderr}} {
				if c.want == nil && c.got != "" {
					t.Errorf("%s should be empty; %s", c.name, report)
				}
				for _, w := range c.want {
					if !strings.Contains(c.got, w) {
						t.Errorf("%s lacks %q; %s", c.name, w, report)
					}
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(stdout.String()+stderr.String(), a) {
					t.Errorf("output has %q; %s", a, report)
				}
			}
			// The full usage is for -h and --help only: a usage error is
			// the error and a hint.
			if code == 2 && len(tt.args) > 0 {
				if n := strings.Count(stderr.String(), "\n"); n > 2 {
					t.Errorf("a usage error printed %d lines, want the error and a hint; %s", n, report)
				}
			}
		})
	}
}

func TestEnvironmentFillsUnsetFlags(t *testing.T) {
	clearEnv(t)
	t.Setenv("CDC_RELAY_POSTGRES_URL", "postgres://env@h/db")
	t.Setenv("CDC_RELAY_KAFKA_BROKERS", "a:1, b:2")
	t.Setenv("CDC_RELAY_SLOT", "from_env")
	t.Setenv("CDC_RELAY_HEADER_COLUMNS", "type")
	t.Setenv("CDC_RELAY_STOP_TIMEOUT", "1m30s")
	c := &RunCommand{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	fs := c.flags()
	if err := parseFlags(fs, []string{"--slot", "from_flag", "--kafka-create-topics"}); err != nil {
		t.Fatal(err)
	}
	if err := finishRelayConfig(&c.cfg, &c.tables, c.brokers, c.headerCol); err != nil {
		t.Fatal(err)
	}
	if c.cfg.PostgresURL != "postgres://env@h/db" {
		t.Errorf("postgres URL %q, want it from the environment", c.cfg.PostgresURL)
	}
	if got := strings.Join(c.cfg.Kafka.Brokers, ","); got != "a:1,b:2" {
		t.Errorf("brokers %q", got)
	}
	if c.cfg.Slot != "from_flag" {
		t.Errorf("slot %q: the command line must win over the environment", c.cfg.Slot)
	}
	if got := strings.Join(c.cfg.Tables[0].Mapping.HeaderColumns, ","); got != "type" {
		t.Errorf("header columns %q", got)
	}
	if c.cfg.StopTimeout.String() != "1m30s" {
		t.Errorf("stop timeout %s, want 1m30s from the environment", c.cfg.StopTimeout)
	}
	if !c.cfg.Kafka.AutoCreateTopics {
		t.Errorf("--kafka-create-topics without a value must set it")
	}
	if c.cfg.Tables[0].Mapping.Schema != "public" || c.cfg.Tables[0].Mapping.Table != "outbox" || c.cfg.Publication != "cdc_relay" {
		t.Errorf("defaults: table %s.%s publication %s", c.cfg.Tables[0].Mapping.Schema, c.cfg.Tables[0].Mapping.Table, c.cfg.Publication)
	}
}

// TestUsageSections checks that each command's usage shows every flag
// once, in a section, with its environment variable and a description.
func TestUsageSections(t *testing.T) {
	for _, c := range []struct {
		name     string
		fs       *flag.FlagSet
		sections []flagSection
	}{
		{"run", (&RunCommand{}).flags(), runSections},
		{"migrate", (&MigrateCommand{}).flags(), migrateSections},
		{"check-config", (&CheckConfigCommand{}).flags(), checkConfigSections},
	} {
		seen := map[string]bool{}
		for _, s := range c.sections {
			for _, name := range s.names {
				if c.fs.Lookup(name) == nil {
					t.Errorf("%s: section %q lists --%s, which is not a flag", c.name, s.title, name)
				}
				if seen[name] {
					t.Errorf("%s: --%s is in two sections", c.name, name)
				}
				seen[name] = true
			}
		}
		c.fs.VisitAll(func(f *flag.Flag) {
			if !seen[f.Name] {
				t.Errorf("%s: --%s is in no section", c.name, f.Name)
			}
		})
		var out bytes.Buffer
		printUsage(&out, c.fs, "", c.sections)
		if strings.Contains(out.String(), "Other flags") {
			t.Errorf("%s: usage has flags outside the sections:\n%s", c.name, out.String())
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if len(line) > 80 {
				t.Errorf("%s: usage line longer than 80 columns: %q", c.name, line)
			}
		}
	}
}

// TestRunWarnsOfMultiHostURL: run says at start what to add to a URL of
// several servers that may connect it to a standby, without its password.
func TestRunWarnsOfMultiHostURL(t *testing.T) {
	clearEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	Main(ctx, []string{"run", "--kafka-brokers", "127.0.0.1:1", "--metrics-addr", "127.0.0.1:0",
		"--postgres-url", "postgres://relay:s3cret@127.0.0.1:1,127.0.0.1:2/app?connect_timeout=1"}, &stdout, &stderr)
	log := stderr.String()
	if !strings.Contains(log, "level=WARN msg=\"the PostgreSQL URL lists 2 servers (127.0.0.1:1,127.0.0.1:2) without target_session_attrs=read-write") ||
		strings.Contains(log, "s3cret") {
		t.Errorf("run does not warn of the multi-host URL, or shows its password:\n%s", log)
	}
}
