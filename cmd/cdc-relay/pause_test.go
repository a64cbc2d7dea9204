package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPauseCommand: a topic's pause and resume in the database (a PAUSED
// event becomes WAITING on resume), and the relay-wide pause through a
// running relay's admin endpoint, with its token.
func TestPauseCommand(t *testing.T) {
	ctx, url, conn := startDB(t)
	var stdout, stderr bytes.Buffer
	if code := Main(ctx, []string{"migrate", "--postgres-url", url}, &stdout, &stderr); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr.String())
	}
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_delivery (event_id, topic, record_key, status, last_error) VALUES ('e-1', 'orders', 'k', 'PAUSED', 'its topic is paused')`); err != nil {
		t.Fatal(err)
	}
	paused := false
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json") // as a relay's every answer
		if r.Method != "POST" || r.Header.Get("Authorization") != "Bearer s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error": "unauthorized"}`))
			return
		}
		want := r.URL.Path == "/pause"
		changed := paused != want
		paused = want
		_, _ = w.Write([]byte(`{"paused": ` + map[bool]string{true: "true", false: "false"}[paused] + `, "changed": ` + map[bool]string{true: "true", false: "false"}[changed] + `}`))
	}))
	defer relay.Close()
	addr := strings.TrimPrefix(relay.URL, "http://")

	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string
		pauseRows      int    // rows of the pause table after, when not -1
		state          string // e-1's status after, when not ""
	}{
		{name: "help", args: []string{"pause", "-h"}, stdout: []string{"Usage: cdc-relay pause [--topic T]", "--slot name"}, pauseRows: -1},
		{name: "resume help", args: []string{"help", "resume"}, stdout: []string{"Usage: cdc-relay resume [--topic T]"}, pauseRows: -1},
		{name: "an operand", args: []string{"pause", "orders"}, code: 2, stderr: []string{`unexpected argument "orders"`}, pauseRows: -1},
		{name: "a topic without the database", args: []string{"pause", "--topic", "orders"}, code: 2, stderr: []string{"--postgres-url (or CDC_RELAY_POSTGRES_URL) is required"}, pauseRows: -1},
		{name: "pause a topic", args: []string{"pause", "--topic", "orders", "--postgres-url", url}, pauseRows: 1,
			stdout: []string{`topic "orders" paused for slot "cdc_relay": its new events are held in the status table`, "'cdc-relay resume --topic orders'"}},
		{name: "pause it again", args: []string{"pause", "--topic", "orders", "--postgres-url", url}, pauseRows: 1, stdout: []string{"was paused already"}},
		{name: "another slot's", args: []string{"pause", "--topic", "orders", "--slot", "other", "--postgres-url", url}, pauseRows: 2, stdout: []string{`for slot "other"`}},
		{name: "resume a topic", args: []string{"resume", "--topic", "orders", "--postgres-url", url}, pauseRows: 1, state: "WAITING",
			stdout: []string{`topic "orders" resumed for slot "cdc_relay": its held events are delivered in commit order`}},
		{name: "resume it again", args: []string{"resume", "--topic", "orders", "--postgres-url", url}, pauseRows: 1, stdout: []string{"was not paused"}},
		{name: "a pause table that is not there", args: []string{"pause", "--topic", "x", "--checkpoint-table", "nosuch.cp", "--postgres-url", url}, code: 1,
			stderr: []string{"run 'cdc-relay migrate'"}, pauseRows: 1},
		{name: "pause the relay", args: []string{"pause", "--metrics-addr", addr, "--admin-token", "s3cret"}, stdout: []string{"is paused: it reads nothing more"}, pauseRows: -1},
		{name: "pause the relay again", args: []string{"pause", "--metrics-addr", addr, "--admin-token", "s3cret"}, stdout: []string{"was paused already"}, pauseRows: -1},
		{name: "resume the relay", args: []string{"resume", "--metrics-addr", addr, "--admin-token", "s3cret"}, stdout: []string{"is resumed"}, pauseRows: -1},
		{name: "without the token", args: []string{"pause", "--metrics-addr", addr}, code: 1,
			stderr: []string{"did not pause: POST /pause: 401 Unauthorized: give the relay's admin token"}, pauseRows: -1},
		{name: "no relay", args: []string{"resume", "--metrics-addr", "127.0.0.1:1"}, code: 1,
			stderr: []string{"no relay answers at 127.0.0.1:1", "a relay-wide resume needs a running relay"}, pauseRows: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			report := runMain(ctx, t, tt.args, tt.code, tt.stdout, tt.stderr)
			if strings.Contains(report, "s3cret") {
				t.Errorf("the token in the output: %s", report)
			}
			if tt.pauseRows >= 0 {
				var n int
				if err := conn.QueryRow(ctx, "SELECT count(*) FROM cdc_relay_paused_topics").Scan(&n); err != nil || n != tt.pauseRows {
					t.Errorf("%d rows in the pause table (%v), want %d", n, err, tt.pauseRows)
				}
			}
			if tt.state != "" {
				var st string
				if err := conn.QueryRow(ctx, "SELECT status FROM outbox_delivery WHERE event_id = 'e-1'").Scan(&st); err != nil || st != tt.state {
					t.Errorf("e-1 is %s (%v), want %s", st, err, tt.state)
				}
			}
		})
	}
}

// runMain runs the command line with args, requires exit code code and
// each of stdout and stderr in what it wrote there, and returns both.
func runMain(ctx context.Context, t *testing.T, args []string, code int, stdout, stderr []string) (report string) {
	t.Helper()
	var out, errOut bytes.Buffer
	got := Main(ctx, args, &out, &errOut)
	report = "stdout:\n" + out.String() + "\nstderr:\n" + errOut.String()
	if got != code {
		t.Fatalf("exit code %d, want %d; %s", got, code, report)
	}
	for _, w := range stdout {
		if !strings.Contains(out.String(), w) {
			t.Errorf("stdout lacks %q; %s", w, report)
		}
	}
	for _, w := range stderr {
		if !strings.Contains(errOut.String(), w) {
			t.Errorf("stderr lacks %q; %s", w, report)
		}
	}
	return report
}

// TestPausePublisher: pause and resume --topic with --publisher change the
// pause of (topic, publisher) and its PAUSED events only: Kafka's pause of
// the same topic and its events are left as they were, and the other way
// round; --publisher needs --topic, a valid name, and with --config one
// the file defines.
func TestPausePublisher(t *testing.T) {
	ctx, url, conn := startDB(t)
	var stdout, stderr bytes.Buffer
	if code := Main(ctx, []string{"migrate", "--postgres-url", url}, &stdout, &stderr); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr.String())
	}
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_delivery (event_id, topic, record_key, status, last_error, publisher) VALUES
		('e-1', 'orders', 'k', 'PAUSED', 'its topic is paused', 'kafka'), ('e-1', 'orders', 'k', 'PAUSED', 'its topic is paused', 'partner')`); err != nil {
		t.Fatal(err)
	}
	configFile := writeConfig(t, webhookConfig)
	db := []string{"--postgres-url", url}
	steps := []struct {
		name           string
		args           []string
		env            map[string]string
		code           int
		stdout, stderr []string
		pauses         string // the publishers orders is paused for after, by name
		states         string // the status of e-1's rows after, Kafka's then the partner's
	}{
		{name: "pause Kafka's", args: append([]string{"pause", "--topic", "orders"}, db...), pauses: "kafka", states: "PAUSED PAUSED",
			stdout: []string{`topic "orders" paused for slot "cdc_relay"`, "'cdc-relay resume --topic orders'"}},
		{name: "pause the partner's", args: append([]string{"pause", "--topic", "orders", "--publisher", "partner"}, db...), pauses: "kafka partner", states: "PAUSED PAUSED",
			stdout: []string{`topic "orders" of the webhook publisher partner paused for slot "cdc_relay"`, "'cdc-relay resume --topic orders --publisher partner'"}},
		{name: "pause the partner's again", args: append([]string{"pause", "--topic", "orders", "--publisher", "partner"}, db...), pauses: "kafka partner", states: "PAUSED PAUSED",
			stdout: []string{`topic "orders" of the webhook publisher partner was paused already`}},
		{name: "resume the partner's", args: append([]string{"resume", "--topic", "orders", "--publisher", "partner", "--config", configFile}, db...),
			pauses: "kafka", states: "PAUSED WAITING", stdout: []string{`topic "orders" of the webhook publisher partner resumed for slot "cdc_relay"`}},
		{name: "resume the partner's again", args: append([]string{"resume", "--topic", "orders", "--publisher", "partner"}, db...), pauses: "kafka", states: "PAUSED WAITING",
			stdout: []string{"was not paused"}},
		{name: "--publisher is never read from the environment", args: append([]string{"pause", "--topic", "orders"}, db...), env: map[string]string{"CDC_RELAY_PUBLISHER": "partner"},
			pauses: "kafka", states: "PAUSED WAITING", stdout: []string{`topic "orders" was paused already`}},
		{name: "pause the partner's, then resume Kafka's", args: append([]string{"pause", "--topic", "orders", "--publisher", "partner"}, db...), pauses: "kafka partner", states: "PAUSED WAITING",
			stdout: []string{"paused"}},
		{name: "resume Kafka's", args: append([]string{"resume", "--topic", "orders"}, db...), pauses: "partner", states: "WAITING WAITING",
			stdout: []string{`topic "orders" resumed for slot "cdc_relay"`}},
		{name: "a publisher without a topic", args: []string{"pause", "--publisher", "partner"}, code: 2, pauses: "partner", states: "WAITING WAITING",
			stderr: []string{"--publisher names whose events of a topic to pause: give --topic too"}},
		{name: "a publisher the config file misspells", args: append([]string{"resume", "--topic", "orders", "--publisher", "partnr", "--config", configFile}, db...), code: 2,
			pauses: "partner", states: "WAITING WAITING", stderr: []string{`--publisher "partnr": ` + configFile + ` defines no such publisher (did you mean "partner"?)`}},
		{name: "not a publisher's name", args: append([]string{"resume", "--topic", "orders", "--publisher", "Partner"}, db...), code: 2,
			pauses: "partner", states: "WAITING WAITING", stderr: []string{`--publisher: publisher "Partner": want a lowercase letter`}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range s.env {
				t.Setenv(k, v)
			}
			report := runMain(ctx, t, s.args, s.code, s.stdout, s.stderr)
			var pauses, states string
			if err := conn.QueryRow(ctx, "SELECT coalesce(string_agg(publisher, ' ' ORDER BY publisher), '') FROM cdc_relay_paused_topics WHERE topic = 'orders'").Scan(&pauses); err != nil {
				t.Fatal(err)
			}
			if err := conn.QueryRow(ctx, "SELECT string_agg(status, ' ' ORDER BY publisher) FROM outbox_delivery WHERE event_id = 'e-1'").Scan(&states); err != nil {
				t.Fatal(err)
			}
			if pauses != s.pauses || states != s.states {
				t.Errorf("orders is paused for %q, e-1's rows are %q; want %q, %q; %s", pauses, states, s.pauses, s.states, report)
			}
		})
	}
}
