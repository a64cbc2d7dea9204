package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestFailedRetryTopic: `failed retry ID --topic T` refuses a topic the
// relay may not write, several ids, --all and a WAITING event, before or
// without changing anything; given one DEAD head, it delivers it to T,
// says how many events it released in its old topic, and `failed show`
// and `list` show the corrected topic and the original one.
func TestFailedRetryTopic(t *testing.T) {
	ctx, url, conn := startDB(t)
	var stdout, stderr bytes.Buffer
	if code := Main(ctx, []string{"migrate", "--postgres-url", url}, &stdout, &stderr); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr.String())
	}
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_delivery (event_id, topic, record_key, status, attempts, last_error) VALUES
		  ('e-1', 'bad topic!', 'k', 'DEAD', 0, 'illegal topic name'),
		  ('e-2', 'bad topic!', 'k', 'WAITING', 0, 'waits for event 1 of its key'),
		  ('e-3', 'bad topic!', 'k', 'WAITING', 0, 'waits for event 1 of its key'),
		  ('e-4', 'orders', 'j', 'DEAD', 0, 'refused'),
		  ('e-5', 'orders', 'j', 'WAITING', 0, 'waits for event 4 of its key'),
		  ('e-4', 'payments', 'j', 'DEAD', 0, 'refused')`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE outbox_delivery SET commit_lsn = '0/7' WHERE event_id = 'e-4'`); err != nil { // one event, two topics
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_delivery (event_id, topic, record_key, status, attempts, last_error, source_table) VALUES
		  ('e-7', 'audit', 'm', 'DEAD', 0, 'refused', 'message:audit')`); err != nil {
		t.Fatal(err)
	}
	messagesFile := filepath.Join(t.TempDir(), "messages.yaml")
	if err := os.WriteFile(messagesFile, []byte("allowed_topics: 'payments\\..*'\ntables:\n  - {table: outbox, value: payload, topic: payments.x}\n"+
		"messages:\n  - {prefix: audit, allowed_topics: 'audit\\..*'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(configFile, []byte("allowed_topics: 'payments\\..*'\ntables:\n  - {table: outbox, value: payload, topic: payments.x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name           string
		args           []string // after "failed"
		code           int
		stdout, stderr []string // each must be in it
		after          map[int64]string
	}{
		{name: "a reserved topic", args: []string{"retry", "1", "--topic", "__consumer_offsets"}, code: 2, stderr: []string{`--topic: topic "__consumer_offsets" is not allowed`}},
		{name: "an illegal topic", args: []string{"retry", "1", "--topic", "still bad!"}, code: 2, stderr: []string{"--topic: ", "still bad!"}},
		{name: "a topic --allowed-topics does not allow", args: []string{"retry", "1", "--topic", "orders", "--allowed-topics", `payments\..*`}, code: 2,
			stderr: []string{`"orders" is not allowed`}},
		{name: "a topic the config file's allowed_topics does not allow", args: []string{"retry", "1", "--topic", "orders", "--config", configFile}, code: 2,
			stderr: []string{`"orders" is not allowed`}},
		{name: "several ids", args: []string{"retry", "1", "2", "--topic", "orders"}, code: 2, stderr: []string{"--topic corrects one event at a time"}},
		{name: "all", args: []string{"retry", "--all", "--topic", "orders"}, code: 2, stderr: []string{"--topic corrects one event at a time"}},
		{name: "an empty topic", args: []string{"retry", "1", "--topic", ""}, code: 2, stderr: []string{"--topic is empty"}},
		{name: "a WAITING event", args: []string{"retry", "2", "--topic", "orders"}, code: 1, stderr: []string{"id 2 is WAITING, held behind id 1 of its key"},
			after: map[int64]string{1: "DEAD 0", 2: "WAITING 0"}},
		{name: "the head", args: []string{"retry", "1", "--topic", "orders"},
			stdout: []string{`retried 1 event: 1, to topic "orders"`, "1 released 2 events of its key waiting behind it"},
			after:  map[int64]string{1: "FAILED 0", 2: "WAITING 0", 3: "WAITING 0"}},
		{name: "show", args: []string{"show", "1"}, stdout: []string{"topic:           orders\n", "original topic:  bad topic! (the topic it was parked for"}},
		{name: "show --json", args: []string{"show", "1", "--json"}, stdout: []string{`"topic": "orders"`, `"original_topic": "bad topic!"`}},
		{name: "show one never corrected", args: []string{"show", "2", "--json"}, stdout: []string{`"original_topic": null`}},
		{name: "list the new topic", args: []string{"list", "--topic", "orders"}, stdout: []string{"\n1   FAILED"}},
		{name: "its own topic again", args: []string{"retry", "4", "--topic", "orders"}, code: 1,
			stderr: []string{`id 4 is already for topic "orders": retry it without --topic`}, after: map[int64]string{4: "DEAD 0", 5: "WAITING 0"}},
		{name: "a topic its event has a row for", args: []string{"retry", "6", "--topic", "orders"}, code: 1,
			stderr: []string{`id 6: its event has a row for topic "orders" already`}, after: map[int64]string{6: "DEAD 0"}},
		{name: "a topic the file allows but not the event's own source", args: []string{"retry", "7", "--topic", "payments.audit", "--config", messagesFile}, code: 1,
			stderr: []string{`--topic: `, `topic "payments.audit" is not allowed`, `audit\\..*`}, after: map[int64]string{7: "DEAD 0"}},
		{name: "a topic the event's own source allows", args: []string{"retry", "7", "--topic", "audit.fixed", "--config", messagesFile},
			stdout: []string{`to topic "audit.fixed"`}, after: map[int64]string{7: "FAILED 0"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("COLUMNS", "120")
			t.Setenv("CDC_RELAY_POSTGRES_URL", url)
			runMain(ctx, t, append([]string{"failed"}, s.args...), s.code, s.stdout, s.stderr)
			states, _ := failedState(ctx, t, conn)
			for id, want := range s.after {
				if states[id] != want {
					t.Errorf("id %d is %q, want %q", id, states[id], want)
				}
			}
		})
	}
}

// TestFailedRetryTopicOfAWebhook: `failed retry ID --topic T --publisher
// P` corrects the topic of a webhook publisher's event as it does Kafka's:
// the row becomes FAILED in T with its original topic kept, the events of
// its key that waited behind it in its old topic are released, and
// Kafka's copy of the same events is left as it was; without
// --publisher, the id is refused as the partner's.
func TestFailedRetryTopicOfAWebhook(t *testing.T) {
	ctx, url, conn := startDB(t)
	var stdout, stderr bytes.Buffer
	if code := Main(ctx, []string{"migrate", "--postgres-url", url}, &stdout, &stderr); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr.String())
	}
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_delivery (event_id, topic, record_key, status, attempts, last_error, publisher, source_table) VALUES
		  ('e-1', 'bad topic!', 'k', 'DEAD', 0, 'illegal topic name', 'partner', 'public.outbox'),
		  ('e-2', 'bad topic!', 'k', 'WAITING', 0, 'waits for event 1 of its key', 'partner', 'public.outbox'),
		  ('e-1', 'bad topic!', 'k', 'DEAD', 0, 'illegal topic name', 'kafka', 'public.outbox'),
		  ('e-2', 'bad topic!', 'k', 'WAITING', 0, 'waits for event 3 of its key', 'kafka', 'public.outbox')`); err != nil {
		t.Fatal(err)
	}
	configFile := writeConfig(t, webhookConfig)
	const unchanged = "kafka DEAD bad topic! - | kafka WAITING bad topic! -"
	steps := []struct {
		name           string
		args           []string // after "failed"
		code           int
		stdout, stderr []string // each must be in it
		rows           string   // "publisher status topic original_topic" of each row, by id, after
	}{
		{name: "the partner's, as Kafka's", args: []string{"retry", "1", "--topic", "orders"}, code: 1,
			stderr: []string{"not retried: id 1 is the webhook publisher partner's: add --publisher partner"},
			rows:   "partner DEAD bad topic! - | partner WAITING bad topic! - | " + unchanged},
		{name: "a topic the relay may not write", args: []string{"retry", "1", "--publisher", "partner", "--topic", "__consumer_offsets"}, code: 2,
			stderr: []string{`--topic: topic "__consumer_offsets" is not allowed`},
			rows:   "partner DEAD bad topic! - | partner WAITING bad topic! - | " + unchanged},
		{name: "the partner's head", args: []string{"retry", "1", "--publisher", "partner", "--topic", "orders", "--config", configFile},
			stdout: []string{`retried 1 event of the webhook publisher partner: 1, to topic "orders"`, "1 released 1 event of its key waiting behind it"},
			rows:   "partner FAILED orders bad topic! | partner WAITING bad topic! - | " + unchanged},
		{name: "show", args: []string{"show", "1"}, stdout: []string{"publisher:       partner\n", "topic:           orders\n", "original topic:  bad topic!"},
			rows: "partner FAILED orders bad topic! | partner WAITING bad topic! - | " + unchanged},
		{name: "its own topic again", args: []string{"retry", "1", "--publisher", "partner", "--topic", "orders"}, code: 1,
			stderr: []string{`id 1 is already for topic "orders": retry it without --topic`},
			rows:   "partner FAILED orders bad topic! | partner WAITING bad topic! - | " + unchanged},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("COLUMNS", "120")
			t.Setenv("CDC_RELAY_POSTGRES_URL", url)
			report := runMain(ctx, t, append([]string{"failed"}, s.args...), s.code, s.stdout, s.stderr)
			var rows string
			if err := conn.QueryRow(ctx, `SELECT string_agg(publisher || ' ' || status || ' ' || topic || ' ' || coalesce(original_topic, '-'), ' | ' ORDER BY id)
				FROM outbox_delivery`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if rows != s.rows {
				t.Errorf("the rows are\n%s\nwant\n%s\n%s", rows, s.rows, report)
			}
		})
	}
}
