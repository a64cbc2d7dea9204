package main

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"
	"time"
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

// TestRecoverDryRunCountsWebhookParks: `recover --dry-run` says, beside
// the rows it would publish to Kafka again, how many events it would
// park for each webhook publisher (none of an event the publisher holds
// already), and parks none.
func TestRecoverDryRunCountsWebhookParks(t *testing.T) {
	ctx, url, conn := startDB(t, `CREATE TABLE outbox (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)
	configFile := writeConfig(t, `publishers:
  partner:
    webhook: {url: "https://partner.example/hooks", secret_file: /etc/cdc-relay/partner-secret}
tables:
  - {table: public.outbox, id: id, value: payload, timestamp: created_at, topic: orders, publishers: [kafka, partner]}
`)
	db := []string{"--postgres-url", url, "--config", configFile}
	runMain(ctx, t, append([]string{"migrate"}, db...), 0, nil, nil)
	if _, err := conn.Exec(ctx, `INSERT INTO outbox (payload, created_at) VALUES ('{}', now() - interval '2 hours'), ('{}', now()), ('{}', now()), ('{}', now())`); err != nil {
		t.Fatal(err)
	}
	// The partner holds event 2 already: recover would not park it again.
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_delivery (event_id, source_table, topic, status, last_error, publisher)
		VALUES ('2', 'public.outbox', 'orders', 'FAILED', '503 Service Unavailable', 'partner')`); err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	runMain(ctx, t, append([]string{"recover", "--dry-run", "--since", since, "--kafka-brokers", "127.0.0.1:1"}, db...), 0,
		[]string{"3 outbox row(s) written since", "would be published again", "2 event(s) would be parked for publisher partner"}, nil)
	var rows int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM outbox_delivery").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Errorf("the status table holds %d rows after the dry run, want the 1 it held", rows)
	}
}
