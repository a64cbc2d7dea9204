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

// TestEventStoreWebhookSwitchOver: the event store switches over from a
// poller whose progress rows say Kafka had wallet-events up to 40% of the
// 3,000 events written before, the partner's webhook up to 20%, and Kafka
// payment-events up to 30%; the wallet route adopts per publisher (adopt:
// {kafka: …, partner: …}), while an application appends through the
// switch. Kafka gets exactly the events after its positions, once; the
// receiver exactly the wallet events after the webhook's, once, in
// position order; both publishers' rows then read the newest position.
func TestEventStoreWebhookSwitchOver(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	h, url := newHookReceiver(t)
	path, wallet, payment := e.eventStoreWebhookConfig(url)
	e.adoptPerPublisher(path, wallet, payment)
	e.createTopic1(wallet)
	e.createTopic1(payment)
	const events = 3000
	mustExec(t, e.conn, `INSERT INTO events (type, tags, data, transaction_id)
		SELECT 'DepositMade', `+adoptTags+`, json_build_object('n', i), pg_current_xact_id() FROM generate_series(1, $1) AS i`, events)
	mustExec(t, e.conn, `INSERT INTO outbox_topic_progress (topic, publisher, last_position) VALUES ($1, 'KafkaPublisher', $2), ($1, 'WebhookPublisher', $3), ($4, 'KafkaPublisher', $5)`,
		wallet, events*2/5, events/5, payment, events*3/10)
	app := e.appendEvents()
	e.waitFor("the application appended while no slot exists", 30*time.Second, func() bool { return app.appended.Load() >= 100 })
	p, _ := e.switchOver("migrate", path, events*3/5)
	since := app.appended.Load()
	e.waitFor("the application appended while the relay streams", 60*time.Second, func() bool { return app.appended.Load() >= since+300 })
	if err := app.stop(); err != nil {
		t.Fatal(err)
	}
	kafka := e.routedCopies(wallet, payment, events*2/5, events*3/5)
	kafka[payment] = e.routedCopies(wallet, payment, events*3/10, events*7/10)[payment]
	hook := e.routedCopies(wallet, payment, events/5, events*4/5)[wallet]
	for _, topic := range []string{wallet, payment} {
		e.readIDs(topic, kafka[topic], 120*time.Second)
	}
	deadline := time.Now().Add(60 * time.Second)
	for h.distinctIDs() < len(hook) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if h.distinctIDs() < len(hook) {
		h.mu.Lock()
		seen := map[string]bool{}
		for _, ev := range h.took {
			seen[ev.id] = true
		}
		h.mu.Unlock()
		var missing []string
		for _, id := range hook {
			if !seen[id] {
				missing = append(missing, id)
			}
		}
		rows, _ := e.conn.Query(context.Background(), "SELECT topic = $1, status, count(*), min(event_id::bigint), max(event_id::bigint) FROM outbox_delivery WHERE publisher = 'partner' GROUP BY 1, 2", wallet)
		for rows.Next() {
			var w bool
			var st string
			var n, lo, hi int64
			_ = rows.Scan(&w, &st, &n, &lo, &hi)
			t.Logf("partner rows: wallet %v %s %d [%d, %d]", w, st, n, lo, hi)
		}
		rows.Close()
		t.Fatalf("the receiver took %d distinct of %d; missing %d, first %v", h.distinctIDs(), len(hook), len(missing), missing[:min(10, len(missing))])
	}
	for _, topic := range []string{wallet, payment} {
		e.checkOnce(topic, kafka[topic])
	}
	h.mu.Lock()
	took := map[string]int{}
	for _, ev := range h.took {
		took[ev.id]++
	}
	h.mu.Unlock()
	for _, id := range hook {
		if took[id] != 1 {
			t.Errorf("the receiver took event %s %d times, want once", id, took[id])
		}
		delete(took, id)
	}
	if len(took) > 0 {
		t.Errorf("the receiver took %d events at or before the webhook's position (or not routed to it)", len(took))
	}
	checkFirstDeliveriesInOrder(t, h)
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
	t.Logf("%d events appended around the switch-over; Kafka %d and %d records, the receiver %d events", app.appended.Load(), len(kafka[wallet]), len(kafka[payment]), len(hook))
	p.stop(30 * time.Second)
}

// adoptPerPublisher turns on the adopt: lines of the event store's
// relay.yaml at path: the wallet route's as a mapping, Kafka's and the
// webhook's own positions, the payment route's as it is.
func (e *env) adoptPerPublisher(path, wallet, payment string) {
	e.t.Helper()
	yaml, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	const pred = "position > (SELECT last_position FROM outbox_topic_progress WHERE topic = '%s' AND publisher = '%s')"
	walletAdopt := "        # adopt: " + fmt.Sprintf(pred, wallet, "KafkaPublisher") + "\n"
	paymentAdopt := "        # adopt: " + fmt.Sprintf(pred, payment, "KafkaPublisher") + "\n"
	for _, line := range []string{walletAdopt, paymentAdopt} {
		if !strings.Contains(string(yaml), line) {
			e.t.Fatalf("the event store's relay.yaml lacks the line %q", line)
		}
	}
	out := strings.NewReplacer(
		walletAdopt, "        adopt:\n          kafka: "+fmt.Sprintf(pred, wallet, "KafkaPublisher")+"\n          partner: "+fmt.Sprintf(pred, wallet, "WebhookPublisher")+"\n",
		paymentAdopt, strings.Replace(paymentAdopt, "# adopt:", "adopt:", 1),
	).Replace(string(yaml))
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		e.t.Fatal(err)
	}
}
