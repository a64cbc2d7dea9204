package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// eventStoreWebhookConfig writes the event store's relay.yaml with a
// webhook publisher "partner" (its receiver at url) beside Kafka on the
// wallet route, and its rows kept in outbox_topic_progress as
// WebhookPublisher's; it returns its path and the two topics.
func (e *env) eventStoreWebhookConfig(url string) (path, wallet, payment string) {
	e.t.Helper()
	path, wallet, payment = e.eventStoreConfig()
	example, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	secret := filepath.Join(filepath.Dir(path), "partner-secret")
	if err := os.WriteFile(secret, []byte(webhookSecret+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	yaml := string(example)
	for old, repl := range map[string]string{
		"        required_tags: [wallet_id]\n":                                "        required_tags: [wallet_id]\n        publishers: [kafka, partner]\n",
		"progress: {table: outbox_topic_progress, publisher: KafkaPublisher}": "progress: {table: outbox_topic_progress, publisher: KafkaPublisher, publishers: {partner: WebhookPublisher}}",
	} {
		if strings.Count(yaml, old) != 1 {
			e.t.Fatalf("the event store's relay.yaml does not say %q once", old)
		}
		yaml = strings.Replace(yaml, old, repl, 1)
	}
	yaml += fmt.Sprintf("publishers:\n  partner:\n    webhook: {url: %q, secret_file: %s, timeout: %s}\n", url, secret, webhookTimeout)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path, wallet, payment
}

// progressOf is the last_position and status of publisher's row of topic
// in the event store's progress table; -1 without one.
func (e *env) progressOf(topic, publisher string) (int64, string) {
	e.t.Helper()
	pos, status := int64(-1), ""
	err := e.conn.QueryRow(context.Background(), "SELECT last_position, status FROM outbox_topic_progress WHERE topic = $1 AND publisher = $2",
		topic, publisher).Scan(&pos, &status)
	if err != nil && !strings.Contains(err.Error(), "no rows") {
		e.t.Fatal(err)
	}
	return pos, status
}

// TestEventStoreWebhookBesideKafka: the event store routes wallet-events
// to Kafka and to its partner's webhook, payment-events to Kafka alone,
// and keeps a row per (topic, publisher) in outbox_topic_progress. While
// the application appends (about 1,500 events/s), the team pauses the
// webhook's wallet-events in its own table: the webhook's events are
// held, its row's last_position stays below them, while Kafka's row of
// the same topic goes on; `cdc-relay status` says where it is paused.
// Resumed, the receiver takes every wallet event in position order, and
// once the application stops each row reads the newest position; the
// webhook has no row of payment-events, which does not go to it.
func TestEventStoreWebhookBesideKafka(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	h, url := newHookReceiver(t)
	path, wallet, payment := e.eventStoreWebhookConfig(url)
	e.createTopic1(wallet)
	e.createTopic1(payment)
	e.migrateConfig(path)
	p := e.startRelayArgs(relayBin, e.configArgs(path)...)
	app := e.appendEvents()
	e.waitFor("both publishers' rows of wallet-events written", 30*time.Second, func() bool {
		k, _ := e.progressOf(wallet, "KafkaPublisher")
		w, _ := e.progressOf(wallet, "WebhookPublisher")
		return app.appended.Load() >= 600 && k > 0 && w > 0
	})

	mustExec(t, e.conn, "UPDATE outbox_topic_progress SET status = 'PAUSED' WHERE topic = $1 AND publisher = 'WebhookPublisher'", wallet)
	e.waitFor("the webhook's wallet events held", 30*time.Second, func() bool { return e.partnerRows("PAUSED") >= 300 })
	var firstHeld int64
	if err := e.conn.QueryRow(context.Background(), "SELECT min(event_id::bigint) FROM outbox_delivery WHERE publisher = 'partner' AND status = 'PAUSED'").Scan(&firstHeld); err != nil {
		t.Fatal(err)
	}
	kafkaAt, _ := e.progressOf(wallet, "KafkaPublisher")
	e.waitFor("Kafka's row of wallet-events past the webhook's held events", 30*time.Second, func() bool {
		k, _ := e.progressOf(wallet, "KafkaPublisher")
		return k > kafkaAt && k > firstHeld
	})
	if w, status := e.progressOf(wallet, "WebhookPublisher"); w >= firstHeld || status != "PAUSED" {
		t.Errorf("the webhook's row of wallet-events: last_position %d, status %s; want below its first held event %d, PAUSED", w, status, firstHeld)
	}
	out, _ := exec.Command(relayBin, "status", "--config", path, "--postgres-url", e.url, "--slot", e.slot).CombinedOutput()
	if want := "topics " + wallet + " for publisher partner in public.outbox_topic_progress"; !strings.Contains(string(out), want) {
		t.Errorf("cdc-relay status does not say %q:\n%s", want, out)
	}
	took, held := h.distinctIDs(), e.partnerRows("PAUSED")

	mustExec(t, e.conn, "UPDATE outbox_topic_progress SET status = 'ACTIVE' WHERE topic = $1 AND publisher = 'WebhookPublisher'", wallet)
	at := app.appended.Load()
	e.waitFor("the application appended after the resume", 30*time.Second, func() bool { return app.appended.Load() >= at+600 })
	if err := app.stop(); err != nil {
		t.Fatal(err)
	}
	want := e.routedCopies(wallet, payment, 0, int(app.appended.Load()))
	for _, topic := range []string{wallet, payment} {
		e.readIDs(topic, want[topic], 60*time.Second)
	}
	e.waitFor("the receiver took every wallet event", 60*time.Second, func() bool { return h.distinctIDs() >= len(want[wallet]) })
	if n := h.distinctIDs(); n != len(want[wallet]) {
		t.Errorf("the receiver took %d distinct events, want the %d of wallet-events", n, len(want[wallet]))
	}
	var newest int64
	if err := e.conn.QueryRow(context.Background(), "SELECT max(position) FROM events").Scan(&newest); err != nil {
		t.Fatal(err)
	}
	e.waitFor("every row at the newest position", 30*time.Second, func() bool {
		k, _ := e.progressOf(wallet, "KafkaPublisher")
		w, _ := e.progressOf(wallet, "WebhookPublisher")
		kp, _ := e.progressOf(payment, "KafkaPublisher")
		return k == newest && w == newest && kp == newest
	})
	if pos, _ := e.progressOf(payment, "WebhookPublisher"); pos != -1 {
		t.Errorf("the webhook has a row of payment-events (last_position %d), which does not go to it", pos)
	}
	checkFirstDeliveriesInOrder(t, h)
	p.stop(30 * time.Second)
	h.mu.Lock()
	defer h.mu.Unlock()
	t.Logf("the receiver took %d wallet events (%d before the pause, %d held), %d requests answered %v",
		len(want[wallet]), took, held, len(h.took), h.answers)
}

// checkFirstDeliveriesInOrder fails t unless the receiver took each
// event, at its first delivery, in the order of its id (the event
// store's position: ordering: topic).
func checkFirstDeliveriesInOrder(t *testing.T, h *hookReceiver) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	var last int64
	for _, ev := range h.took {
		if seen[ev.id] {
			continue
		}
		seen[ev.id] = true
		id, err := strconv.ParseInt(ev.id, 10, 64)
		if err != nil {
			t.Fatalf("webhook-id %q is not the event's position", ev.id)
		}
		if id < last {
			t.Errorf("the receiver took event %d first after %d: out of position order", id, last)
			return
		}
		last = id
	}
}
