package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestMainExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		output string
	}{
		{"no command", nil, nil, 2, "Commands:"},
		{"unknown command", []string{"frobnicate"}, nil, 2, `unknown command "frobnicate"`},
		{"help", []string{"help"}, nil, 0, "migrate"},
		{"run help", []string{"run", "-h"}, nil, 0, "CDC_RELAY_KAFKA_BROKERS"},
		{"run without postgres", []string{"run", "--kafka-brokers", "k:9092"}, nil, 2, "--postgres-url (or CDC_RELAY_POSTGRES_URL) is required"},
		{"run without brokers", []string{"run", "--postgres-url", "postgres://x@h/db"}, nil, 2, "--kafka-brokers"},
		{"bad table", []string{"run", "--postgres-url", "postgres://x@h/db", "--kafka-brokers", "k:1", "--table", "a.b.c"}, nil, 2, "--table"},
		{"bad env value", []string{"run"}, map[string]string{"CDC_RELAY_MAX_IN_FLIGHT_EVENTS": "lots"}, 2, "CDC_RELAY_MAX_IN_FLIGHT_EVENTS"},
		{"migrate without postgres", []string{"migrate"}, nil, 2, "--postgres-url"},
		{"stray argument", []string{"migrate", "extra"}, nil, 2, `unexpected argument "extra"`},
		{"version", []string{"version"}, nil, 0, "cdc-relay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			code := Main(context.Background(), tt.args, &out, &errOut)
			all := out.String() + errOut.String()
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; output:\n%s", code, tt.code, all)
			}
			if !strings.Contains(all, tt.output) {
				t.Fatalf("output lacks %q:\n%s", tt.output, all)
			}
		})
	}
}

func TestEnvironmentFillsUnsetFlags(t *testing.T) {
	t.Setenv("CDC_RELAY_POSTGRES_URL", "postgres://env@h/db")
	t.Setenv("CDC_RELAY_KAFKA_BROKERS", "a:1, b:2")
	t.Setenv("CDC_RELAY_SLOT", "from_env")
	t.Setenv("CDC_RELAY_HEADER_COLUMNS", "type")
	c := &RunCommand{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	fs := c.flags()
	if err := parse(fs, []string{"--slot", "from_flag"}); err != nil {
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
	if got := strings.Join(c.cfg.Mapping.HeaderColumns, ","); got != "type" {
		t.Errorf("header columns %q", got)
	}
	if c.cfg.Mapping.Schema != "public" || c.cfg.Mapping.Table != "outbox" || c.cfg.Publication != "cdc_relay" {
		t.Errorf("defaults: table %s.%s publication %s", c.cfg.Mapping.Schema, c.cfg.Mapping.Table, c.cfg.Publication)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://relay:s3cret@db:5432/app":                        "postgres://relay@db:5432/app",
		"postgres://relay@db/app?password=s3cret&sslpassword=s3cret": "postgres://relay@db:5432/app",
		"host=db user=relay password=s3cret dbname=app port=6543":    "postgres://relay@db:6543/app",
		"postgres://relay:s3cret@[::1]:5433/app?sslmode=disable":     "postgres://relay@[::1]:5433/app",
	} {
		got := redactURL(in)
		if got != want || strings.Contains(got, "s3cret") {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
