package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay"
)

// TestMessagePrefixFlag: --message-prefix (or CDC_RELAY_MESSAGE_PREFIX)
// adds one message source beside the default table on run, recover and
// migrate, its topics checked by --allowed-topics; without it there is
// none.
func TestMessagePrefixFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		args []string
		want []decoder.MessageMapping
	}{
		{name: "none", want: nil},
		{name: "flag", args: []string{"--message-prefix", "outbox"}, want: []decoder.MessageMapping{{Prefix: "outbox"}}},
		{name: "environment", env: "events", want: []decoder.MessageMapping{{Prefix: "events"}}},
		{name: "flag over environment", env: "events", args: []string{"--message-prefix", "orders"}, want: []decoder.MessageMapping{{Prefix: "orders"}}},
		{name: "empty is none", env: "events", args: []string{"--message-prefix="}, want: nil},
		{name: "allowed topics", args: []string{"--message-prefix", "outbox", "--allowed-topics", `orders\..*`},
			want: []decoder.MessageMapping{{Prefix: "outbox", AllowedTopics: `orders\..*`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("CDC_RELAY_POSTGRES_URL", "postgres://relay@h/db")
			t.Setenv("CDC_RELAY_KAFKA_BROKERS", "k:9092")
			if tc.env != "" {
				t.Setenv("CDC_RELAY_MESSAGE_PREFIX", tc.env)
			}
			for _, cmd := range []struct {
				name  string
				build func() (relay.Config, error)
			}{
				{"run", func() (relay.Config, error) {
					c := &RunCommand{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
					fs := c.flags()
					if err := parseFlags(fs, tc.args); err != nil {
						return relay.Config{}, err
					}
					err := c.finish(fs)
					return c.cfg, err
				}},
				{"recover", func() (relay.Config, error) {
					c := &RecoverCommand{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
					fs := c.flags()
					if err := parseFlags(fs, tc.args); err != nil {
						return relay.Config{}, err
					}
					err := c.finish(fs)
					return c.cfg, err
				}},
				{"migrate", func() (relay.Config, error) {
					c := &MigrateCommand{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
					args := tc.args
					if len(args) > 2 { // migrate has no --allowed-topics
						args = args[:2]
					}
					if err := parseFlags(c.flags(), args); err != nil {
						return relay.Config{}, err
					}
					return c.relayConfig(nil)
				}},
			} {
				cfg, err := cmd.build()
				if err != nil {
					t.Fatalf("%s: %v", cmd.name, err)
				}
				want := tc.want
				if cmd.name == "migrate" && len(want) > 0 {
					want = []decoder.MessageMapping{{Prefix: want[0].Prefix}}
				}
				if fmt.Sprint(cfg.Messages) != fmt.Sprint(want) {
					t.Errorf("%s: messages %+v, want %+v", cmd.name, cfg.Messages, want)
				}
				if len(cfg.Tables) != 1 || cfg.Tables[0].Mapping.Table != "outbox" {
					t.Errorf("%s: tables %+v, want the default outbox table beside the messages", cmd.name, cfg.Tables)
				}
				if names := strings.Join(cfg.SourceNames(), ", "); len(want) > 0 && names != "public.outbox, message:"+want[0].Prefix {
					t.Errorf("%s: sources %q", cmd.name, names)
				}
			}
		})
	}
}

// TestMessagePrefixBesideMessagesOnlyFile: with a config file of messages
// only (no table), --message-prefix's source gets the allowed topics all
// the others get: --allowed-topics, else the file's allowed_topics.
func TestMessagePrefixBesideMessagesOnlyFile(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		args       []string
		want       string
	}{
		{name: "the file's", yaml: "allowed_topics: 'audit\\..*'\nmessages: [{prefix: audit}]\n", want: `audit\..*`},
		{name: "the flag's", yaml: "allowed_topics: 'audit\\..*'\nmessages: [{prefix: audit}]\n", args: []string{"--allowed-topics", `events\..*`}, want: `events\..*`},
		{name: "neither", yaml: "messages: [{prefix: audit}]\n", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("CDC_RELAY_POSTGRES_URL", "postgres://relay@h/db")
			t.Setenv("CDC_RELAY_KAFKA_BROKERS", "k:9092")
			path := filepath.Join(t.TempDir(), "relay.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c := &RunCommand{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
			fs := c.flags()
			if err := parseFlags(fs, append([]string{"--config", path, "--message-prefix", "outbox"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			if err := c.finish(fs); err != nil {
				t.Fatal(err)
			}
			if len(c.cfg.Tables) != 0 || len(c.cfg.Messages) != 2 {
				t.Fatalf("tables %+v, messages %+v: want no table and two message sources", c.cfg.Tables, c.cfg.Messages)
			}
			for _, m := range c.cfg.Messages {
				if m.AllowedTopics != tc.want {
					t.Errorf("%s: allowed topics %q, want %q", m.Name(), m.AllowedTopics, tc.want)
				}
			}
		})
	}
}

// TestMessagePrefixGivenTwice: a prefix the config file relays already is
// a usage error naming it.
func TestMessagePrefixGivenTwice(t *testing.T) {
	cfg := relay.DefaultConfig()
	cfg.Messages = []decoder.MessageMapping{{Prefix: "outbox"}}
	err := addMessagePrefix(&cfg, "outbox", "")
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), `--message-prefix "outbox"`) {
		t.Fatalf("got %v, want a usage error naming the prefix", err)
	}
	if len(cfg.Messages) != 1 {
		t.Errorf("messages %+v after a refusal", cfg.Messages)
	}
}

// TestMessagePrefixUsage: run's and migrate's help say what the flag does
// and that it needs PostgreSQL 14.
func TestMessagePrefixUsage(t *testing.T) {
	for name, usage := range map[string]func(*bytes.Buffer){
		"run":     func(b *bytes.Buffer) { (&RunCommand{}).Usage(b) },
		"migrate": func(b *bytes.Buffer) { (&MigrateCommand{}).Usage(b) },
	} {
		var b bytes.Buffer
		usage(&b)
		out := strings.Join(strings.Fields(b.String()), " ")
		for _, want := range []string{"--message-prefix prefix", "CDC_RELAY_MESSAGE_PREFIX", "pg_logical_emit_message", "PostgreSQL 14 or later"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s's usage lacks %q", name, want)
			}
		}
	}
}

// TestRecoverSaysMessagesAreNotRecovered: recover with message sources
// says once that they cannot be published again; without, nothing.
func TestRecoverSaysMessagesAreNotRecovered(t *testing.T) {
	cfg := relay.DefaultConfig()
	var none bytes.Buffer
	sayMessagesNotRecovered(&none, cfg)
	if none.Len() != 0 {
		t.Errorf("without messages: %q", none.String())
	}
	cfg.Messages = []decoder.MessageMapping{{Prefix: "outbox"}, {Prefix: "audit"}}
	var b bytes.Buffer
	sayMessagesNotRecovered(&b, cfg)
	if got := b.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "message:outbox, message:audit") || !strings.Contains(got, "cannot be published again") {
		t.Errorf("with messages: %q", got)
	}
}

// TestMigrateMessagePrefix: migrate --message-prefix creates cdc_relay.emit
// writing that prefix on PostgreSQL 14 and later; on an earlier server it
// refuses before it changes anything, saying what to do. (PG_BINDIR picks
// the server.)
func TestMigrateMessagePrefix(t *testing.T) {
	ctx, url, conn := startDB(t)
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main(ctx, []string{"migrate", "--postgres-url", url, "--message-prefix", "orders", "--no-slot"}, &stdout, &stderr)
	var prepared bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('public.outbox_delivery') IS NOT NULL").Scan(&prepared); err != nil {
		t.Fatal(err)
	}
	if version < 140000 {
		if code == 0 || !strings.Contains(stderr.String(), "messages need PostgreSQL 14 or later") || !strings.Contains(stderr.String(), "--message-prefix") {
			t.Fatalf("PostgreSQL %d: exit %d, stderr %q; want a refusal saying what to do", version, code, stderr.String())
		}
		if prepared {
			t.Errorf("PostgreSQL %d: migrate refused, but created the relay's tables", version)
		}
		return
	}
	if code != 0 || !strings.Contains(stdout.String(), `cdc_relay.emit writing prefix "orders"`) || !prepared {
		t.Fatalf("PostgreSQL %d: exit %d, stdout %q, stderr %q; want the relay's tables and cdc_relay.emit", version, code, stdout.String(), stderr.String())
	}
	var lsn string
	if err := conn.QueryRow(ctx, `SELECT cdc_relay.emit('orders', 'o-1', '{"a": 1}')::text`).Scan(&lsn); err != nil {
		t.Fatalf("cdc_relay.emit after migrate: %v", err)
	}
}
