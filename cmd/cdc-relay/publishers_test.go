package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/webhook"
)

// webhookConfig is a config file that sends a route's events and a
// table's to the webhook publisher partner, and another table's to Kafka
// alone.
const webhookConfig = `publishers:
  partner:
    webhook: {url: "https://partner.example/hooks?token=tok-s3cret", secret_file: /etc/cdc-relay/partner-secret}
tables:
  - table: public.events
    value: data
    tags_column: tags
    routes:
      - {topic: wallet-events, required_tags: [wallet_id], publishers: [kafka, partner]}
  - {table: public.outbox, value: payload, topic: orders, publishers: [partner]}
  - {table: public.audit, value: payload, topic: audit}
`

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWebhookPublishersRefused: run --delivery exactly-once refuses a file
// that sends events to a webhook, as webhooks are at least once; backfill
// of a table sent to a webhook whose secret it cannot read stops before it
// connects, naming the publisher and the file.
func TestWebhookPublishersRefused(t *testing.T) {
	path := writeConfig(t, webhookConfig)
	pg := []string{"--postgres-url", "postgres://relay@127.0.0.1:1/app?connect_timeout=5", "--kafka-brokers", "k:9092"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"run, exactly-once", []string{"run", "--config", path, "--delivery", "exactly-once"}, 2,
			"--delivery exactly-once: " + path + " routes events to webhook publishers (tables[0].routes[0] (public.events, line 9: partner) and " +
				"tables[1] (public.outbox, line 10: partner)), and webhooks are at-least-once only: a webhook receiver takes no part in a Kafka transaction; " +
				"use at-least-once delivery (leave --delivery out), or route those events to kafka alone"},
		{"backfill of a table sent to a webhook whose secret is missing", []string{"backfill", "--config", path, "--table", "public.outbox", "--where", "true"}, 1,
			"publisher partner: secret_file: cannot read the secret: open /etc/cdc-relay/partner-secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), append(tc.args, pg...), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr.String(), tc.code, tc.want)
			}
			if strings.Contains(stderr.String(), "s3cret") {
				t.Errorf("stderr shows the URL's token: %s", stderr.String())
			}
		})
	}
}

// TestRefuseWebhooksExactlyOnce: exactly-once beside a webhook no table
// sends to is taken, with the file's warning of the unused publisher.
func TestRefuseWebhooksExactlyOnce(t *testing.T) {
	unused, err := config.Parse("relay.yaml", []byte(webhookConfig[:strings.Index(webhookConfig, "tables:")]+
		"tables:\n  - {table: public.audit, value: payload, topic: audit}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if unused.Warnings == nil {
		t.Errorf("a webhook no table sends to: no warning")
	}
	if err := refuseWebhooksExactlyOnce(unused, "relay.yaml"); err != nil {
		t.Errorf("exactly-once beside a webhook no table sends to: %v", err)
	}
}

// TestCheckPublishers: check-config prints a block per webhook
// publisher, with the problems webhook.Config.Check finds, and counts
// them.
func TestCheckPublishers(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("whsec_c2VjcmV0LW9mLXRoZS13ZWJob29rLXRlc3RzLTMyYnk=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := `publishers:
  good:
    webhook: {url: "https://127.0.0.1:8443/hooks?token=tok-s3cret", secret_file: ` + secret + `, batch_size: 20}
  bad:
    webhook: {url: "http://127.0.0.1:8080/hooks", secret_file: ` + filepath.Join(dir, "missing") + `, method: PUT, timeout: 2s}
  idle:
    webhook: {url: "http://127.0.0.1:8080/other", secret_env: IDLE_SECRET}
tables:
  - {table: public.outbox, value: payload, topic: orders, publishers: [kafka, good, bad]}
`
	f, err := config.Parse("relay.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	n := checkPublishers(context.Background(), &out, f, checkWebhook)
	want := `
publisher good: ok
  webhook POST https://127.0.0.1:8443/hooks?[redacted], timeout 10s, up to 20 events a request, as a JSON array, signed with the secret in ` + secret + `
  the events of tables[0] (public.outbox, line 9: good)
  note: backfill publishes to Kafka only: it refuses a file that sends events to a webhook

publisher bad: 1 problem
  publishers.bad.webhook.secret_file: cannot read the secret: open ` + filepath.Join(dir, "missing") + `: no such file or directory
  webhook PUT http://127.0.0.1:8080/hooks, timeout 2s, one event a request, signed with the secret in ` + filepath.Join(dir, "missing") + `
  the events of tables[0] (public.outbox, line 9: bad)
  note: backfill publishes to Kafka only: it refuses a file that sends events to a webhook

publisher idle: 1 problem
  publishers.idle.webhook.secret_env: the environment variable IDLE_SECRET is not set: set it to the secret, whsec_<base64>
  webhook POST http://127.0.0.1:8080/other, timeout 10s, one event a request, signed with the secret in $IDLE_SECRET
  no table or route sends events to it
`
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	if n != 2 {
		t.Errorf("%d problems, want 2 (bad's and idle's)", n)
	}
	// A check that fails otherwise than with a KeyError is printed too.
	out.Reset()
	n = checkPublishers(context.Background(), &out, f, func(context.Context, webhook.Config) error { return errors.New("boom") })
	if n != 3 || !strings.Contains(out.String(), "  publishers.good.webhook: boom\n") {
		t.Errorf("%d problems:\n%s", n, out.String())
	}
}
