package e2e

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/relayproc"
)

// TestWebhookBackfill: `cdc-relay backfill` of a table routed to Kafka
// and a webhook publisher sends each row to both, in each key's order.
// The receiver answers 500 for a while: the backfill waits for it, says
// so once, and goes on. It then refuses one event (422): the backfill
// stops, naming the row, and prints the command that resumes it; once
// the receiver takes the event, that command sends the rest. Nothing is
// missing at Kafka or at the receiver, whose every request's signature
// verifies.
func TestWebhookBackfill(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	topic := e.topic("wallet")
	h, args := e.webhookEnv(topic)
	const n, refused = 3000, 2345
	e.writeN(0, n) // the relay never ran: no record of them anywhere
	h.mu.Lock()
	h.refuse = map[int]bool{refused: true}
	h.mu.Unlock()
	path := args[2] // run --config PATH …
	bf := []string{"backfill", "--config", path, "--table", "public.wallet_outbox", "--where", "true", "--rate", "0", "--batch", "100",
		"--postgres-url", e.url, "--kafka-brokers", strings.Join(e.brokers, ",")}
	first, err := relayproc.Start(relayBin, bf...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(first.Kill)
	e.waitFor("the receiver took the backfill's first rows", 60*time.Second, func() bool { return h.distinctIDs() >= 500 })
	h.setFailing(http.StatusInternalServerError)
	e.waitFor("the backfill says the receiver is not taking its rows", 30*time.Second, func() bool {
		return strings.Contains(first.Log(), "is not taking the backfill's records")
	})
	took := h.distinctIDs()
	h.setFailing(0)
	e.waitFor("the backfill stopped at the refused row", 120*time.Second, func() bool { return !first.Running() })
	log := first.Log()
	if first.Err() == nil || !strings.Contains(log, "publisher partner refuses the record of the row with key") || !strings.Contains(log, "422") {
		t.Fatalf("the backfill ended %v, want it stopped by the refusal (422), naming the publisher and the row:\n%s", first.Err(), log)
	}
	if h.distinctIDs() <= took {
		t.Errorf("the receiver took %d rows before its outage and %d after: the backfill did not go on", took, h.distinctIDs())
	}
	m := resumeLine.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("the stopped backfill printed no command to resume:\n%s", log)
	}
	h.mu.Lock()
	h.refuse = nil
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "sh", "-c", relayBin+strings.TrimPrefix(m[1], "cdc-relay")).CombinedOutput(); err != nil {
		t.Fatalf("the resumed backfill: %v\n%s", err, out)
	}
	all := map[int]bool{}
	for i := range n {
		all[i] = true
	}
	if k, first := missing(all, h.seqsTaken()); k > 0 {
		t.Errorf("the receiver lacks %d of %d rows, the first seq %d", k, n, first)
	}
	_, inKafka := seqsOf(t, e.readN(topic, n, 60*time.Second))
	if k, first := missing(all, inKafka); k > 0 {
		t.Errorf("Kafka lacks %d of %d rows, the first seq %d", k, n, first)
	}
	h.checkKeyOrder(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.bad) > 0 {
		t.Errorf("%d requests failed verification, the first: %s", len(h.bad), h.bad[0])
	}
}
