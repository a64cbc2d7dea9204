package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// webhookSecret is the test receiver's signing secret, as the relay reads
// it: whsec_ and the base64 of its bytes.
const webhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// hookReceiver is a webhook receiver written from the Standard Webhooks
// specification: it verifies each request's signature on its own (not
// with the relay's code), keeps the events it took, and answers with
// what failing says while it is set.
type hookReceiver struct {
	t       *testing.T
	mu      sync.Mutex
	took    []hookEvent   // in the order taken
	bad     []string      // why requests failed verification
	failing int           // the status answered while set (0: 204; hang: no answer before the relay's timeout)
	refuse  map[int]bool  // the sequence numbers answered 422
	answers map[int]int   // requests by status answered
	delay   time.Duration // how long each request waits before its answer
}

// hookEvent is one event a receiver took.
type hookEvent struct {
	id       string
	key      string
	seq      int
	verified bool
}

func newHookReceiver(t *testing.T) (*hookReceiver, string) {
	h := &hookReceiver{t: t, answers: map[int]int{}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv.URL + "/hooks/wallet?token=s3cret"
}

// hang is hookReceiver.failing's value for a receiver that answers
// nothing before the relay's timeout (webhookTimeout).
const hang = -1

// webhookTimeout is the test publisher's timeout, and hangFor how long a
// hanging receiver takes to answer.
const webhookTimeout, hangFor = 2 * time.Second, 3 * time.Second

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	hanging, delay := h.failing == hang, h.delay
	h.mu.Unlock()
	time.Sleep(delay) // a slow receiver

	if hanging {
		select {
		case <-time.After(hangFor):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusGatewayTimeout)
		return
	}
	body, _ := io.ReadAll(r.Body)
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	err := verifyWebhook(id, ts, r.Header.Get("webhook-signature"), body)
	h.mu.Lock()
	defer h.mu.Unlock()
	status := http.StatusNoContent
	switch {
	case err != nil:
		h.bad = append(h.bad, err.Error())
		status = http.StatusUnauthorized
	case h.failing != 0:
		status = h.failing
	default:
		var v struct {
			Key string `json:"k"`
			Seq int    `json:"seq"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			h.bad = append(h.bad, fmt.Sprintf("body %q: %v", body, err))
			status = http.StatusBadRequest
			break
		}
		if h.refuse[v.Seq] {
			status = http.StatusUnprocessableEntity
			break
		}
		h.took = append(h.took, hookEvent{id: id, key: v.Key, seq: v.Seq, verified: true})
	}
	h.answers[status]++
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
}

// verifyWebhook checks a request's signature as the specification says:
// webhook-signature lists "v1,<base64 HMAC-SHA256 of id.timestamp.body>"
// signatures, separated by spaces, keyed by the secret's decoded bytes;
// the timestamp within five minutes.
func verifyWebhook(id, ts, sigs string, body []byte) error {
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("missing webhook headers: id %q timestamp %q signature %q", id, ts, sigs)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("webhook-timestamp %q is not within five minutes", ts)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(webhookSecret, "whsec_"))
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Fields(sigs) {
		if v, sig, ok := strings.Cut(s, ","); ok && v == "v1" && subtle.ConstantTimeCompare([]byte(sig), []byte(want)) == 1 {
			return nil
		}
	}
	return fmt.Errorf("no valid v1 signature in %q", sigs)
}

func (h *hookReceiver) setFailing(status int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failing = status
}

// distinctIDs is how many distinct events the receiver took.
func (h *hookReceiver) distinctIDs() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	for _, ev := range h.took {
		seen[ev.id] = true
	}
	return len(seen)
}

// webhookEnv is a table routed to Kafka and to a webhook publisher
// "partner" whose receiver is h, migrated: the relay's arguments.
func (e *env) webhookEnv(topic string) (h *hookReceiver, args []string) {
	e.t.Helper()
	return e.webhookEnvWith(topic, "", "")
}

// webhookEnvWith is webhookEnv with more columns in the table (columns,
// each with its leading comma) and more keys in its config entry (table,
// indented as the entry's keys).
func (e *env) webhookEnvWith(topic, columns, table string) (h *hookReceiver, args []string) {
	e.t.Helper()
	e.createTopic1(topic)
	h, url := newHookReceiver(e.t)
	mustExec(e.t, e.conn, `CREATE TABLE wallet_outbox (id bigserial PRIMARY KEY, k text NOT NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now()`+columns+`)`)
	dir := e.t.TempDir()
	secret := filepath.Join(dir, "partner-secret")
	if err := os.WriteFile(secret, []byte(webhookSecret+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(dir, "relay.yaml")
	yaml := fmt.Sprintf(`publishers:
  partner:
    webhook:
      url: %q
      secret_file: %s
      timeout: %s
tables:
  - table: public.wallet_outbox
    id: id
    key: k
    value: payload
    timestamp: created_at
    topic: %s
    publishers: [kafka, partner]
%s`, url, secret, webhookTimeout, topic, table)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
	if out, err := exec.Command(relayBin, "migrate", "--config", path, "--postgres-url", e.url, "--slot", e.slot).CombinedOutput(); err != nil {
		e.t.Fatalf("migrate --config: %v\n%s", err, out)
	}
	return h, e.configArgs(path)
}

// writeWallet starts an application that commits five events every 5 ms
// (about 1,000 a second) to wallet_outbox, of ten keys in turn, each
// payload holding its key and its sequence number.
func (e *env) writeWallet() *appender { return e.writeWalletBy(5) }

// writeWalletBy is writeWallet committing per events every 5 ms (200
// events/s each).
func (e *env) writeWalletBy(per int64) *appender {
	return startAppender(e.t, e.url, per, 5*time.Millisecond, func(i int64) (string, []any) {
		return `INSERT INTO wallet_outbox (k, payload)
			SELECT 'k' || (($1::bigint * $2 + g) % 10), jsonb_build_object('k', 'k' || (($1::bigint * $2 + g) % 10), 'seq', $1::bigint * $2 + g)
			FROM generate_series(0, $2 - 1) AS g ORDER BY g`, []any{i, per}
	})
}

// webhookOutage is how long the receiver answers 500 (CDC_RELAY_TEST_WEBHOOK_OUTAGE,
// 8 s: longer than the relay retries in place, 5 s).
func webhookOutage(t *testing.T) time.Duration {
	d := 8 * time.Second
	if v := os.Getenv("CDC_RELAY_TEST_WEBHOOK_OUTAGE"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("CDC_RELAY_TEST_WEBHOOK_OUTAGE=%q: %v", v, err)
		}
	}
	return d
}

// TestWebhookPublisherBesideKafka: a table routed to Kafka and to a
// webhook publisher, under a writer at about 1,000 events/s; the
// receiver verifies each signature with a verifier written from the
// specification, answers 500 for 8 s (CDC_RELAY_TEST_WEBHOOK_OUTAGE=30s: 30 s), then 429 with Retry-After, then
// hangs past the relay's timeout, then takes everything. Every event
// reaches Kafka once, each key in commit order, and those written while
// the receiver fails reach Kafka meanwhile; every event reaches the
// receiver, each key's first deliveries in commit order; the webhook's
// parked rows drain, and Kafka's status rows hold none of them.
func TestWebhookPublisherBesideKafka(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	topic := e.topic("wallet")
	h, args := e.webhookEnv(topic)
	p := e.startRelayArgs(relayBin, args...)
	app := e.writeWallet()
	e.waitFor("the receiver took events", 30*time.Second, func() bool { return h.distinctIDs() >= 500 })
	phase := func(status int, d time.Duration) {
		h.setFailing(status)
		at := app.appended.Load()
		time.Sleep(d) // the receiver fails so for d, under the load
		if app.appended.Load() < at+100 {
			t.Fatalf("the writer wrote %d events in %s", app.appended.Load()-at, d)
		}
	}
	at := app.appended.Load()
	phase(http.StatusInternalServerError, webhookOutage(t))
	// The metrics say so while the receiver still answers 500.
	e.waitFor("the metrics say the receiver is failing", 30*time.Second, func() bool {
		_, fam := p.scrape()
		return value(fam, "cdc_relay_webhook_receiver_failing", "publisher", "partner") == 1 &&
			value(fam, "cdc_relay_webhook_requests_total", "publisher", "partner", "class", "5xx") > 0 &&
			value(fam, "cdc_relay_webhook_events_parked_total", "publisher", "partner", "reason", "not_sent")+
				value(fam, "cdc_relay_webhook_events_parked_total", "publisher", "partner", "reason", "failed") > 0
	})
	// Kafka's deliveries never wait on the webhook's: the events written
	// while it failed are in Kafka already, or within seconds.
	e.readN(topic, int(app.appended.Load()), 20*time.Second)
	t.Logf("%d events written while the receiver answered 500 reached Kafka meanwhile", app.appended.Load()-at)
	phase(http.StatusTooManyRequests, 3*time.Second)
	phase(hang, 2*webhookTimeout+time.Second)
	phase(0, 3*time.Second)
	if err := app.stop(); err != nil {
		t.Fatal(err)
	}
	n := int(app.appended.Load())
	checkPerKeyOrder(t, topic, e.readN(topic, n, 120*time.Second), n)
	e.waitFor("the receiver took every event", 180*time.Second, func() bool { return h.distinctIDs() >= n })
	h.mu.Lock()
	if len(h.bad) > 0 {
		t.Errorf("%d requests failed verification, the first: %s", len(h.bad), h.bad[0])
	}
	answers := fmt.Sprint(h.answers)
	h.mu.Unlock()
	h.checkKeyOrder(t)
	var kafkaRows, parked, held int
	e.waitFor("the webhook's parked events delivered", 60*time.Second, func() bool {
		if err := e.conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE publisher = 'kafka'),
			count(*) FILTER (WHERE publisher = 'partner'), count(*) FILTER (WHERE publisher = 'partner' AND status <> 'DELIVERED')
			FROM outbox_delivery`).Scan(&kafkaRows, &parked, &held); err != nil {
			t.Fatal(err)
		}
		return held == 0
	})
	if kafkaRows != 0 || parked == 0 {
		t.Errorf("status rows: %d of Kafka (want none), %d of the webhook (want the events parked while it failed)", kafkaRows, parked)
	}
	e.checkWebhookMetricsAfter(p, h)
	p.stop(30 * time.Second)
	log := p.Log()
	for _, line := range []string{"the webhook receiver is failing", "the webhook receiver answers again"} {
		if c := strings.Count(log, line); c != 1 {
			t.Errorf("the relay logged %q %d times, want once for the one outage", line, c)
		}
	}
	if strings.Contains(log, "s3cret") {
		t.Error("the relay's log shows the URL's token")
	}
	t.Logf("%d events; %d parked for the webhook while it failed; the receiver answered %s", n, parked, answers)
}

// TestWebhookSurvivesKill: the relay is killed (SIGKILL) while it sends a
// writer's events to Kafka and to a webhook, and started again: every
// event reaches Kafka and the receiver at least once, each key's first
// deliveries at the receiver in commit order.
func TestWebhookSurvivesKill(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	topic := e.topic("wallet")
	h, args := e.webhookEnv(topic)
	p := e.startRelayArgs(relayBin, args...)
	app := e.writeWallet()
	e.waitFor("the receiver took events", 30*time.Second, func() bool { return h.distinctIDs() >= 1000 })
	p.Kill()
	at := app.appended.Load()
	e.waitFor("the writer went on while the relay was down", 30*time.Second, func() bool { return app.appended.Load() >= at+1000 })
	p = e.startRelayArgs(relayBin, args...)
	e.waitFor("the receiver took events after the restart", 60*time.Second, func() bool { return h.distinctIDs() >= int(at)+500 })
	if err := app.stop(); err != nil {
		t.Fatal(err)
	}
	n := int(app.appended.Load())
	var inOrder []int
	e.waitFor("Kafka holds every event", 120*time.Second, func() bool {
		var distinct map[int]bool
		inOrder, distinct = seqsOf(t, e.readAll(topic))
		return len(distinct) >= n
	})
	e.waitFor("the receiver took every event", 120*time.Second, func() bool { return h.distinctIDs() >= n })
	h.checkKeyOrder(t)
	h.mu.Lock()
	took := len(h.took)
	h.mu.Unlock()
	t.Logf("%d events; Kafka holds %d records, the receiver took %d requests: %d and %d sent again after the kill",
		n, len(inOrder), took, len(inOrder)-n, took-n)
	p.stop(30 * time.Second)
}

// firstSeqs returns, per key, the sequence numbers of the events the
// receiver took, each event once (its first delivery), in the order taken.
func (h *hookReceiver) firstSeqs() map[string][]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := map[string]bool{}
	perKey := map[string][]int{}
	for _, ev := range h.took {
		if !first[ev.id] {
			first[ev.id] = true
			perKey[ev.key] = append(perKey[ev.key], ev.seq)
		}
	}
	return perKey
}

// checkKeyOrder fails t unless the receiver took each key's events,
// each at its first delivery, in commit order.
func (h *hookReceiver) checkKeyOrder(t *testing.T) {
	t.Helper()
	for k, seqs := range h.firstSeqs() {
		if !slices.IsSorted(seqs) {
			t.Errorf("the receiver took key %s's events first as %s, want commit order", k, brief(seqs))
		}
	}
}

// partnerRows counts the webhook publisher's status rows in state.
func (e *env) partnerRows(state string) int {
	e.t.Helper()
	var n int
	if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox_delivery WHERE publisher = 'partner' AND status = $1",
		state).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// writeN commits n events to wallet_outbox, numbered from first, of ten
// keys in turn, one transaction.
func (e *env) writeN(first, n int) {
	e.t.Helper()
	mustExec(e.t, e.conn, fmt.Sprintf(`INSERT INTO wallet_outbox (k, payload)
		SELECT 'k' || (g %% 10), jsonb_build_object('k', 'k' || (g %% 10), 'seq', g)
		FROM generate_series(%d, %d) AS g ORDER BY g`, first, first+n-1))
}

// TestWebhookRefusalDeadForTheWebhookOnly: the receiver refuses one event
// (422) at every attempt: it is DEAD for the webhook only, its key's later
// events WAITING behind it; Kafka has every event. Once the receiver takes
// it, `cdc-relay failed retry ID --publisher partner` delivers it, then
// the key's later events, in order.
func TestWebhookRefusalDeadForTheWebhookOnly(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	topic := e.topic("wallet")
	h, args := e.webhookEnv(topic)
	h.mu.Lock()
	h.refuse = map[int]bool{13: true}
	h.mu.Unlock()
	p := e.startRelayArgs(relayBin, append(args, "--retry-base", "100ms", "--retry-max", "200ms", "--max-attempts", "2")...)
	e.writeN(0, 50)
	e.readN(topic, 50, 60*time.Second)
	e.waitFor("the refused event DEAD for the webhook", 60*time.Second, func() bool { return e.partnerRows("DEAD") == 1 })
	e.waitFor("the receiver took every other key's events", 60*time.Second, func() bool { return h.distinctIDs() >= 46 })
	if got := e.partnerRows("WAITING"); got != 3 {
		t.Errorf("%d of the key's events WAITING behind the DEAD one, want 3 (23, 33, 43)", got)
	}
	if got := e.statusCount("DEAD") - e.partnerRows("DEAD"); got != 0 {
		t.Errorf("Kafka has %d DEAD rows, want none", got)
	}
	var id int64
	if err := e.conn.QueryRow(context.Background(),
		"SELECT id FROM outbox_delivery WHERE publisher = 'partner' AND status = 'DEAD'").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(relayBin, "failed", "retry", strconv.FormatInt(id, 10), "--postgres-url", e.url).CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "--publisher partner") {
		t.Errorf("failed retry of the webhook's event without --publisher: %v\n%s\nwant it refused, naming --publisher partner", err, out)
	}
	h.mu.Lock()
	h.refuse = nil
	h.mu.Unlock()
	e.failedCmd("retry", strconv.FormatInt(id, 10), "--publisher", "partner")
	e.waitFor("the receiver took every event", 60*time.Second, func() bool { return h.distinctIDs() >= 50 })
	if got := h.firstSeqs()["k3"]; !slices.Equal(got, []int{3, 13, 23, 33, 43}) {
		t.Errorf("the receiver took key k3's events as %v, want 3, 13, 23, 33, 43", got)
	}
	p.stop(30 * time.Second)
}

// TestWebhookTopicPausedAcrossRestart: `cdc-relay pause --topic T
// --publisher partner` holds the webhook's events of T, across a restart
// of the relay, while Kafka gets them; `resume` delivers them to the
// receiver in key order.
func TestWebhookTopicPausedAcrossRestart(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	topic := e.topic("wallet")
	h, args := e.webhookEnv(topic)
	pause := func(verb string) {
		cmd := exec.Command(relayBin, verb, "--topic", topic, "--publisher", "partner", "--postgres-url", e.url)
		cmd.Env = append(os.Environ(), "CDC_RELAY_SLOT="+e.slot)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cdc-relay %s --publisher partner: %v\n%s", verb, err, out)
		}
	}
	pause("pause")
	p := e.startRelayArgs(relayBin, args...)
	e.writeN(0, 100)
	e.readN(topic, 100, 60*time.Second)
	e.waitFor("the webhook's events PAUSED", 60*time.Second, func() bool { return e.partnerRows("PAUSED") == 100 })
	p.stop(30 * time.Second)
	p = e.startRelayArgs(relayBin, args...)
	e.writeN(100, 100)
	e.readN(topic, 200, 60*time.Second)
	e.waitFor("the webhook's later events PAUSED too", 60*time.Second, func() bool { return e.partnerRows("PAUSED") == 200 })
	if n := h.distinctIDs(); n != 0 {
		t.Fatalf("the receiver took %d events of a paused topic", n)
	}
	pause("resume")
	e.waitFor("the receiver took every event", 60*time.Second, func() bool { return h.distinctIDs() >= 200 })
	for k, seqs := range h.firstSeqs() {
		if !slices.IsSorted(seqs) || len(seqs) != 20 {
			t.Errorf("the receiver took key %s's events as %v, want its 20 in commit order", k, seqs)
		}
	}
	p.stop(30 * time.Second)
}

// TestWebhookSlowReceiverHoldsNotKafka: a receiver that answers, but at
// a fifth of the rate the writer commits (about 400 events/s; the
// receiver 100 ms a request, eight at a time), with an in-flight limit of
// 2,000 events that the webhook's queue would fill in seconds: the
// webhook's events that wait past their share are parked for it, and
// Kafka gets every event within seconds of the writer stopping, far ahead
// of the receiver (Kafka held by the webhook would be at most the limit
// ahead of it, and would need over 30 s more). Once the receiver is quick
// again, it takes every event, each key's first deliveries in commit
// order.
func TestWebhookSlowReceiverHoldsNotKafka(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	topic := e.topic("wallet")
	h, args := e.webhookEnv(topic)
	h.mu.Lock()
	h.delay = 100 * time.Millisecond
	h.mu.Unlock()
	const limit = 2000
	p := e.startRelayArgs(relayBin, append(args, "--max-in-flight-events", strconv.Itoa(limit))...)
	app := e.writeWalletBy(2)
	e.waitFor("the writer wrote for a while", 60*time.Second, func() bool { return app.appended.Load() >= 5000 })
	if err := app.stop(); err != nil {
		t.Fatal(err)
	}
	n := int(app.appended.Load())
	stopped := time.Now()
	checkPerKeyOrder(t, topic, e.readN(topic, n, 15*time.Second), n)
	took := h.distinctIDs()
	t.Logf("Kafka had all %d events %s after the writer stopped; the receiver had taken %d", n, time.Since(stopped).Round(time.Millisecond), took)
	if took > n-limit {
		t.Errorf("the receiver had taken %d of %d events when Kafka had them all: Kafka kept within the in-flight limit (%d) of the webhook", took, n, limit)
	}
	if got := e.partnerRows("FAILED") + e.partnerRows("WAITING") + e.partnerRows("DELIVERED"); got == 0 {
		t.Error("no event parked for the slow receiver")
	}
	h.mu.Lock()
	h.delay = 0
	h.mu.Unlock()
	e.waitFor("the receiver took every event", 120*time.Second, func() bool { return h.distinctIDs() >= n })
	h.checkKeyOrder(t)
	p.stop(30 * time.Second)
	if log := p.Log(); strings.Contains(log, "the webhook receiver is failing") {
		t.Error("a slow receiver was logged as failing")
	}
}

// TestWebhookOnSlotLossRecover: the relay is killed, events are
// committed, and its slot is dropped, as after a failover to a standby
// without it. Started with --on-slot-loss recover, the relay publishes the
// gap's rows to Kafka again and parks them for the webhook, whose poller
// sends them: every event reaches Kafka and the receiver (some twice),
// each key's first deliveries at the receiver in commit order, and the
// log says how many were parked for the webhook.
func TestWebhookOnSlotLossRecover(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	topic := e.topic("wallet")
	h, args := e.webhookEnv(topic)
	p := e.startRelayArgs(relayBin, args...)
	e.writeN(0, 50)
	e.readN(topic, 50, 60*time.Second)
	e.waitFor("the receiver took the first events", 60*time.Second, func() bool { return h.distinctIDs() >= 50 })
	p.Kill()
	e.writeN(50, 50) // committed, never read
	e.waitFor("the killed relay's walsender exits", 30*time.Second, func() bool { return !e.slotActive() })
	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	e.writeN(100, 50) // in the gap
	p = e.startRelayArgs(relayBin, append(args, "--on-slot-loss", "recover")...)
	e.writeN(150, 50)
	e.waitFor("every event in Kafka", 60*time.Second, func() bool {
		seqs := map[string]bool{}
		for _, r := range e.readAll(topic) {
			seqs[string(r.Value)] = true
		}
		return len(seqs) >= 200
	})
	e.waitFor("the receiver took every event", 60*time.Second, func() bool { return h.distinctIDs() >= 200 })
	h.checkKeyOrder(t)
	parked := regexp.MustCompile(`repaired the gap in the WAL.* parked_for_webhooks=map\[partner:(\d+)\]`).FindStringSubmatch(p.Log())
	if parked == nil {
		t.Fatalf("the relay does not log what it parked for the webhook:\n%s", p.Log())
	}
	if n, _ := strconv.Atoi(parked[1]); n < 100 {
		t.Errorf("the relay parked %d events for the webhook, want at least the 100 of the gap", n)
	}
	e.waitFor("the webhook's parked rows delivered", 60*time.Second, func() bool { return e.partnerRows("FAILED")+e.partnerRows("WAITING") == 0 })
	p.stop(30 * time.Second)
	h.mu.Lock()
	defer h.mu.Unlock()
	t.Logf("%s; the receiver took %d requests", parked[0][strings.Index(parked[0], "parked_for"):], len(h.took))
}

// checkWebhookMetricsAfter checks the partner's metrics once the receiver
// took everything after answering 500, 429 and hanging: not failing; its
// 2xx answers, the retries in place and the latencies counted; its 4xx
// counted as many as the receiver answered 429 (a loaded machine may send
// none in the 429 phase: the outage's probes come a second apart).
func (e *env) checkWebhookMetricsAfter(p *relayProc, h *hookReceiver) {
	e.t.Helper()
	e.waitFor("the metrics say the receiver answers again", 30*time.Second, func() bool {
		_, fam := p.scrape()
		return value(fam, "cdc_relay_webhook_receiver_failing", "publisher", "partner") == 0
	})
	_, fam := p.scrape()
	for _, c := range []struct{ name, label, value string }{
		{"cdc_relay_webhook_requests_total", "class", "2xx"},
		{"cdc_relay_webhook_retries_total", "", ""},
		{"cdc_relay_webhook_request_duration_seconds", "", ""},
	} {
		labels := []string{"publisher", "partner"}
		if c.label != "" {
			labels = append(labels, c.label, c.value)
		}
		if v := value(fam, c.name, labels...); v <= 0 {
			e.t.Errorf("%s%v is %v after the outage, want more than 0", c.name, labels, v)
		}
	}
	h.mu.Lock()
	tooMany := h.answers[http.StatusTooManyRequests]
	h.mu.Unlock()
	if v := value(fam, "cdc_relay_webhook_requests_total", "publisher", "partner", "class", "4xx"); v != float64(tooMany) {
		e.t.Errorf("cdc_relay_webhook_requests_total{class=4xx} is %v, want %d: the receiver's 429 answers", v, tooMany)
	}
}
