package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// publisherFixture is the status table of every case of
// TestFailedPublisher, as "publisher status attempts" by id: Kafka's
// rows and the webhook publisher partner's, row 2 the partner's copy of
// row 1's event.
var publisherFixture = map[int64]string{1: "kafka FAILED 2", 2: "partner DEAD 5", 3: "partner FAILED 1", 4: "kafka DEAD 5", 5: "partner DEAD 5"}

// resetPublisherRows empties the status table and records the rows of
// publisherFixture.
func resetPublisherRows(ctx context.Context, t *testing.T, conn *pgx.Conn) {
	t.Helper()
	for _, sql := range []string{
		"TRUNCATE outbox_delivery RESTART IDENTITY",
		`INSERT INTO outbox_delivery (event_id, topic, record_key, status, attempts, last_error, publisher) VALUES
		  ('e-1', 'orders', 'k1', 'FAILED', 2, 'UNKNOWN_TOPIC_OR_PARTITION', 'kafka'),
		  ('e-1', 'orders', 'k1', 'DEAD', 5, '410 Gone', 'partner'),
		  ('e-3', 'payments', 'p', 'FAILED', 1, '503 Service Unavailable', 'partner'),
		  ('e-4', 'payments', 'q', 'DEAD', 5, 'MESSAGE_TOO_LARGE', 'kafka'),
		  ('e-5', 'orders', 'k2', 'DEAD', 5, '400 Bad Request', 'partner')`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
}

// publisherRows reads "publisher status attempts", and " skipped" for a
// skipped row, by id.
func publisherRows(ctx context.Context, t *testing.T, conn *pgx.Conn) map[int64]string {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT id, publisher || ' ' || status || ' ' || attempts || CASE WHEN skipped_at IS NULL THEN '' ELSE ' skipped' END FROM outbox_delivery")
	if err != nil {
		t.Fatal(err)
	}
	states := map[int64]string{}
	var (
		id int64
		s  string
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &s}, func() error {
		states[id] = s
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return states
}

// publisherCase is a case of TestFailedPublisher.
type publisherCase struct {
	name           string
	args           []string // after "failed"
	env            map[string]string
	code           int
	stdout, stderr []string // each must be in it; nil: must be empty
	absent         []string // in neither
	after          map[int64]string
	json           func(t *testing.T, doc any)
}

// publisherCases are TestFailedPublisher's cases, some with the config
// file configFile, which defines the webhook publisher partner.
func publisherCases(configFile string) []publisherCase {
	const (
		partnersID2  = "id 2 is the webhook publisher partner's: add --publisher partner"
		kafkasID1    = "id 1 is Kafka's: leave --publisher out (or give --publisher kafka)"
		othersNote   = "(Kafka's events only; public.outbox_delivery holds events of partner too: --publisher NAME acts on theirs)"
		partnersNote = "(the webhook publisher partner's events only; public.outbox_delivery holds events of kafka too: --publisher NAME acts on theirs)"
	)
	return []publisherCase{
		// The name.
		{name: "not a publisher's name", args: []string{"list", "--publisher", "Partner"}, code: 2,
			stderr: []string{`list: --publisher: publisher "Partner": want a lowercase letter`}},
		{name: "an empty name", args: []string{"retry", "2", "--publisher="}, code: 2, stderr: []string{"retry: --publisher is empty"}},
		{name: "a name the config file misspells", args: []string{"purge", "2", "--publisher", "partnr", "--config", configFile}, code: 2,
			stderr: []string{`purge: --publisher "partnr": ` + configFile + ` defines no such publisher (did you mean "partner"?); name one of its publishers`}},
		{name: "a name the config file lacks", args: []string{"skip", "2", "--publisher", "analytics", "--config", configFile}, code: 2,
			stderr: []string{`defines no such publisher (its publishers: kafka, partner)`, "or leave --config out"}},
		{name: "a name the config file defines", args: []string{"list", "--publisher", "partner", "--config", configFile}, stdout: []string{"\n5 ", "\n3 ", "\n2 "}},
		{name: "--publisher is never read from the environment", args: []string{"retry", "2"}, env: map[string]string{"CDC_RELAY_PUBLISHER": "partner"}, code: 1,
			stdout: nil, stderr: []string{"not retried: " + partnersID2}},

		// list and show.
		{name: "list: every publisher's", args: []string{"list"},
			stdout: []string{"ID  STATUS  ATTEMPTS  TABLE  PUBLISHER  TOPIC", "\n5   DEAD    5         -      partner    orders", "\n4   DEAD    5         -      kafka      payments",
				"\n2   DEAD    5         -      partner", "\n1   FAILED  2         -      kafka"}},
		{name: "list: the newest of every publisher's", args: []string{"list", "--limit", "2"}, stdout: []string{"\n5 ", "\n4 "}, absent: []string{"\n3 "},
			stderr: []string{"(the newest 2; --limit 0 lists them all)"}},
		{name: "list: the partner's", args: []string{"list", "--publisher", "partner", "--status", "dead"}, stdout: []string{"\n5 ", "\n2 "},
			absent: []string{"\n4 ", "\n3 ", "\n1 "}},
		{name: "list: Kafka's, as before publishers", args: []string{"list", "--publisher", "kafka"}, stdout: []string{"ID  STATUS  ATTEMPTS  TABLE  TOPIC", "\n4 ", "\n1 "},
			absent: []string{"PUBLISHER", "partner"}},
		{name: "list: none of a misspelt publisher", args: []string{"list", "--publisher", "partnr"},
			stdout: []string{"no events of the webhook publisher partnr in public.outbox_delivery (did you mean --publisher partner?)\n"}},
		{name: "list --json", args: []string{"list", "--json"}, json: func(t *testing.T, doc any) {
			var publishers []string
			for _, r := range doc.([]any) {
				p, _ := r.(map[string]any)["publisher"].(string)
				publishers = append(publishers, p)
			}
			if got := strings.Join(publishers, ","); got != "partner,,partner,partner," {
				t.Errorf("publishers of ids 5 to 1: %q, want partner,,partner,partner, (Kafka's rows without the field)", got)
			}
		}},
		{name: "show: any publisher's", args: []string{"show", "2"}, stdout: []string{"publisher:     partner\n", "last error:    410 Gone\n"}},
		{name: "show: the partner's, as Kafka's", args: []string{"show", "2", "--publisher", "kafka"}, code: 1, stderr: []string{partnersID2}},
		{name: "show: Kafka's, as the partner's", args: []string{"show", "1", "--publisher", "partner"}, code: 1, stderr: []string{kafkasID1}},

		// retry.
		{name: "retry: the partner's, as Kafka's", args: []string{"retry", "2"}, code: 1, stderr: []string{"not retried: " + partnersID2}},
		{name: "retry: the partner's", args: []string{"retry", "2", "--publisher", "partner"},
			stdout: []string{"retried 1 event of the webhook publisher partner: 2\n"}, after: map[int64]string{2: "partner FAILED 0"}},
		{name: "retry: Kafka's, as the partner's", args: []string{"retry", "1", "--publisher", "partner"}, code: 1, stderr: []string{"not retried: " + kafkasID1}},
		{name: "retry: Kafka's beside the partner's", args: []string{"retry", "1", "2", "99"}, code: 1, stdout: []string{"retried 1 event: 1\n"},
			stderr: []string{"not retried: " + partnersID2 + "; id 99 not found in"}, after: map[int64]string{1: "kafka FAILED 0"}},
		{name: "retry --all: Kafka's", args: []string{"retry", "--all"}, stdout: []string{"retried 2 events: 1 4\n"}, stderr: []string{othersNote},
			after: map[int64]string{1: "kafka FAILED 0", 4: "kafka FAILED 0"}},
		{name: "retry --all: the partner's", args: []string{"retry", "--all", "--publisher", "partner"},
			stdout: []string{"retried 3 events of the webhook publisher partner: 2 3 5\n"}, stderr: []string{partnersNote},
			after: map[int64]string{2: "partner FAILED 0", 3: "partner FAILED 0", 5: "partner FAILED 0"}},
		{name: "retry --topic: the partner's", args: []string{"retry", "2", "--publisher", "partner", "--topic", "orders.fixed"},
			stdout: []string{`retried 1 event of the webhook publisher partner: 2, to topic "orders.fixed"`}, after: map[int64]string{2: "partner FAILED 0"}},
		{name: "retry --topic: the partner's, as Kafka's", args: []string{"retry", "2", "--topic", "orders.fixed"}, code: 1,
			stderr: []string{"not retried: " + partnersID2}},

		// skip.
		{name: "skip: the partner's, as Kafka's", args: []string{"skip", "5"}, code: 1, stderr: []string{"not skipped: id 5 is the webhook publisher partner's: add --publisher partner"}},
		{name: "skip: the partner's", args: []string{"skip", "5", "--publisher", "partner"},
			stdout: []string{"skipped 1 event of the webhook publisher partner: 5 (now DEAD, skipped;"}, after: map[int64]string{5: "partner DEAD 5 skipped"}},
		{name: "skip: Kafka's, as the partner's", args: []string{"skip", "4", "--publisher", "partner"}, code: 1,
			stderr: []string{"not skipped: id 4 is Kafka's: leave --publisher out"}},

		// purge.
		{name: "purge: the partner's, as Kafka's", args: []string{"purge", "2"}, code: 1, stderr: []string{"not purged: " + partnersID2}},
		{name: "purge: the partner's", args: []string{"purge", "2", "--publisher", "partner"},
			stdout: []string{"purged 1 event of the webhook publisher partner: 2\n"}, after: map[int64]string{2: ""}},
		{name: "purge: Kafka's, as the partner's", args: []string{"purge", "1", "--publisher", "partner"}, code: 1, stderr: []string{"not purged: " + kafkasID1}},
		{name: "purge --dead: Kafka's", args: []string{"purge", "--dead"}, stdout: []string{"purged 1 event: 4\n"}, stderr: []string{othersNote},
			after: map[int64]string{4: ""}},
		{name: "purge --dead: the partner's", args: []string{"purge", "--dead", "--publisher", "partner"},
			stdout: []string{"purged 2 events of the webhook publisher partner: 2 5\n"}, stderr: []string{partnersNote}, after: map[int64]string{2: "", 5: ""}},
	}
}

// TestFailedPublisher: each subcommand of failed with --publisher reads
// or acts on that publisher's rows only; without it, list and show read
// every publisher's, and retry, skip and purge act on Kafka's; an id of
// another publisher's is refused, saying whose it is and what to add; a
// name is checked, against the config file's publishers when given.
func TestFailedPublisher(t *testing.T) {
	ctx, url, conn := startDB(t)
	var stdout, stderr bytes.Buffer
	if code := Main(ctx, []string{"migrate", "--postgres-url", url}, &stdout, &stderr); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr.String())
	}
	for _, tt := range publisherCases(writeConfig(t, webhookConfig)) {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("COLUMNS", "120")
			t.Setenv("CDC_RELAY_POSTGRES_URL", url)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			resetPublisherRows(ctx, t, conn)
			checkPublisherCase(ctx, t, conn, tt)
		})
	}
}

// checkPublisherCase runs tt's command line and checks what it printed
// and left in the status table.
func checkPublisherCase(ctx context.Context, t *testing.T, conn *pgx.Conn, tt publisherCase) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(ctx, append([]string{"failed"}, tt.args...), &stdout, &stderr)
	report := "stdout:\n" + stdout.String() + "\nstderr:\n" + stderr.String()
	if code != tt.code {
		t.Fatalf("exit code %d, want %d; %s", code, tt.code, report)
	}
	if tt.json != nil {
		var doc any
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatalf("stdout is not JSON: %v; %s", err, report)
		}
		tt.json(t, doc)
	} else {
		checkOutput(t, "stdout", stdout.String(), tt.stdout, report)
	}
	checkOutput(t, "stderr", stderr.String(), tt.stderr, report)
	for _, a := range tt.absent {
		if strings.Contains(stdout.String()+stderr.String(), a) {
			t.Errorf("output has %q; %s", a, report)
		}
	}
	// The rows not named are as they were; the named ones as said.
	states := publisherRows(ctx, t, conn)
	for id, was := range publisherFixture {
		want, named := tt.after[id]
		if !named {
			want = was
		}
		if got := states[id]; got != want {
			t.Errorf("row %d is %q, want %q; %s", id, got, want, report)
		}
	}
}
