package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay"
)

// TestConfigSources: a config file's tables and message sources become
// the relay's, a file of messages only leaves no table, and the allowed
// topics given apply to a message source that sets none of its own.
func TestConfigSources(t *testing.T) {
	tests := []struct {
		name         string
		yaml         string
		allowed      string // the flag's or the file's allowed topics
		wantTables   []string
		wantMessages []decoder.MessageMapping
	}{
		{name: "messages only: no table", yaml: "messages:\n  - {prefix: outbox}\n  - {prefix: audit, payload_only: true, topic: audit.events, key_field: account_id}\n",
			wantMessages: []decoder.MessageMapping{{Prefix: "outbox"}, {Prefix: "audit", PayloadOnly: true, Topic: "audit.events", KeyField: "account_id"}}},
		{name: "tables only: no messages", yaml: "tables:\n  - {table: public.outbox, value: payload, topic: orders}\n",
			wantTables: []string{"public.outbox"}},
		{name: "both, allowed topics given to the entry without its own",
			yaml:       "tables:\n  - {table: app.outbox, value: payload, topic: orders}\nmessages:\n  - {prefix: outbox}\n  - {prefix: audit, allowed_topics: 'audit\\..*'}\n",
			allowed:    "orders|payments",
			wantTables: []string{"app.outbox"},
			wantMessages: []decoder.MessageMapping{
				{Prefix: "outbox", AllowedTopics: "orders|payments"},
				{Prefix: "audit", AllowedTopics: `audit\..*`},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "relay.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("run", flag.ContinueOnError)
			file, err := loadConfig(fs, path)
			if err != nil {
				t.Fatal(err)
			}
			rc := relay.DefaultConfig() // one table, as the flags leave it
			configSources(&rc, file, tc.allowed)
			if got := rc.TableNames(); len(got) != len(tc.wantTables) || len(got) > 0 && !reflect.DeepEqual(got, tc.wantTables) {
				t.Errorf("tables %q, want %q", got, tc.wantTables)
			}
			for _, tbl := range rc.Tables {
				if tbl.Mapping.AllowedTopics != tc.allowed {
					t.Errorf("table %s: allowed topics %q, want %q", tbl.Mapping.Table, tbl.Mapping.AllowedTopics, tc.allowed)
				}
			}
			if !reflect.DeepEqual(rc.Messages, tc.wantMessages) {
				t.Errorf("messages:\n got %+v\nwant %+v", rc.Messages, tc.wantMessages)
			}
			if len(file.Messages) > 0 && tc.allowed != "" && file.Messages[0].AllowedTopics == tc.allowed {
				t.Errorf("configSources changed the file's entry: %+v", file.Messages[0])
			}
		})
	}
}

// TestRunConfigOfMessagesOnly: run --config with a file of messages only
// loads into a relay.Config with no table and the file's message
// sources, the file's allowed_topics given to the one that sets none;
// --message-prefix adds its own beside them.
func TestRunConfigOfMessagesOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.yaml")
	yaml := "allowed_topics: 'orders\\..*'\nmessages:\n  - {prefix: outbox}\n  - {prefix: audit, payload_only: true, topic: audit.events, allowed_topics: 'audit\\..*'}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		names string
	}{
		{"the file's", nil, "message:outbox, message:audit"},
		{"and --message-prefix", []string{"--message-prefix", "billing"}, "message:outbox, message:audit, message:billing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("CDC_RELAY_POSTGRES_URL", "postgres://relay@h/db")
			t.Setenv("CDC_RELAY_KAFKA_BROKERS", "k:9092")
			c := &RunCommand{stdout: io.Discard, stderr: io.Discard}
			fs := c.flags()
			if err := parseFlags(fs, append([]string{"--config", path}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			if err := c.finish(fs); err != nil {
				t.Fatalf("finish: %v", err)
			}
			if len(c.cfg.Tables) != 0 {
				t.Errorf("tables %q, want none", c.cfg.TableNames())
			}
			if got := strings.Join(c.cfg.SourceNames(), ", "); got != tc.names {
				t.Errorf("sources %q, want %q", got, tc.names)
			}
			want := []decoder.MessageMapping{
				{Prefix: "outbox", AllowedTopics: `orders\..*`},
				{Prefix: "audit", PayloadOnly: true, Topic: "audit.events", AllowedTopics: `audit\..*`},
			}
			if !reflect.DeepEqual(c.cfg.Messages[:2], want) {
				t.Errorf("messages:\n got %+v\nwant %+v", c.cfg.Messages[:2], want)
			}
		})
	}
}
