package main

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
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
