package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The status values of the write-back beside a webhook.
const (
	hookPending, hookDelivered, hookFailed, hookDead = "PENDING", "DELIVERED", "FAILED", "DEAD"
)

// webhookWriteBackEnv is webhookEnv with write-back: wallet_outbox has a
// status column (pending until written back), its error, and the reset
// trigger migrate makes for its pending value.
func (e *env) webhookWriteBackEnv(topic string) (*hookReceiver, []string) {
	e.t.Helper()
	return e.webhookEnvWith(topic, ", status text NOT NULL DEFAULT '"+hookPending+"', last_error text", fmt.Sprintf(`    write_back:
      status_column: status
      delivered: %s
      failed: %s
      dead: %s
      pending: [%s]
      error_column: last_error
`, hookDelivered, hookFailed, hookDead, hookPending))
}

// walletStatuses counts wallet_outbox's rows by status.
func (e *env) walletStatuses() map[string]int {
	e.t.Helper()
	rows, err := e.conn.Query(context.Background(), "SELECT status, count(*) FROM wallet_outbox GROUP BY status")
	if err != nil {
		e.t.Fatal(err)
	}
	got := map[string]int{}
	var st string
	var n int
	for rows.Next() {
		if err := rows.Scan(&st, &n); err != nil {
			e.t.Fatal(err)
		}
		got[st] = n
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return got
}

// deliveredTooSoon counts the rows of wallet_outbox that say delivered
// while the webhook's copy of their event is still parked.
func (e *env) deliveredTooSoon() int {
	e.t.Helper()
	var n int
	if err := e.conn.QueryRow(context.Background(), `SELECT count(*) FROM wallet_outbox AS o WHERE o.status = $1
		AND EXISTS (SELECT 1 FROM outbox_delivery AS d WHERE d.source_table = 'public.wallet_outbox' AND d.event_id = o.id::text
			AND d.publisher = 'partner' AND d.status <> 'DELIVERED')`, hookDelivered).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestWebhookWriteBack: a table that writes each event's outcome back to
// its row (a status column with its error, a pending value and the reset
// trigger), whose events go to Kafka and a webhook publisher, under a
// writer at about 1,000 events/s. While the receiver answers 500, Kafka
// gets every event and the webhook's copies are parked: their rows say
// failed (each key's first) or pending (the copies waiting behind it),
// never delivered. Once it answers again, every row says
// delivered, but the one event the receiver refuses (422): its row says
// dead though Kafka has it, and its key's later events, whose webhook
// copies wait behind it, say pending. A runbook's reset of that row and
// of two delivered ones sends each again to both publishers, and every
// row ends delivered.
func TestWebhookWriteBack(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	topic := e.topic("wallet")
	h, args := e.webhookWriteBackEnv(topic)
	h.mu.Lock()
	h.refuse = map[int]bool{13: true}
	h.mu.Unlock()
	p := e.startRelayArgs(relayBin, append(args, "--retry-base", "100ms", "--retry-max", "500ms", "--max-attempts", "3")...)
	w := e.writeWallet()
	e.waitFor("the receiver took events", 60*time.Second, func() bool { p.requireRunning(); return h.distinctIDs() >= 500 })
	h.setFailing(http.StatusInternalServerError)
	e.waitFor("the webhook's events parked while the receiver answers 500", 60*time.Second, func() bool {
		p.requireRunning()
		if n := e.deliveredTooSoon(); n > 0 {
			t.Fatalf("%d rows say delivered while the webhook's copy of their event is parked", n)
		}
		return e.partnerHeld() >= 1000
	})
	// The head of each key's parked copies failed; the copies behind them
	// wait, unsent, and their rows stay pending, as Kafka's would.
	if got := e.walletStatuses(); got[hookFailed] == 0 || got[hookPending] == 0 {
		t.Errorf("while the webhook's copies are parked: the rows say %v, want some %s (each key's first) and the rest %s", got, hookFailed, hookPending)
	}
	h.setFailing(0)
	w.stop()
	var n, behind int
	if err := e.conn.QueryRow(context.Background(), "SELECT count(*), count(*) FILTER (WHERE k = 'k3' AND (payload->>'seq')::int > 13) FROM wallet_outbox").
		Scan(&n, &behind); err != nil {
		t.Fatal(err)
	}
	// Every row says delivered but event 13's, which the receiver refuses,
	// and its key's later events, whose webhook copies wait behind it.
	e.waitDrained("the rows not yet delivered", 60*time.Second, func() int {
		p.requireRunning()
		if tooSoon := e.deliveredTooSoon(); tooSoon > 0 {
			t.Fatalf("%d rows say delivered while the webhook's copy of their event is parked", tooSoon)
		}
		return n - 1 - behind - e.walletStatuses()[hookDelivered]
	})
	e.waitFor("event 13's row dead, through its attempts", 30*time.Second, func() bool { return e.walletStatuses()[hookDead] == 1 })
	if got := e.walletStatuses(); got[hookPending] != behind || got[hookDead] != 1 {
		t.Errorf("the rows say %v, want %d %s (key k3's after event 13, waiting behind it for the webhook) and 1 %s", got, behind, hookPending, hookDead)
	}
	var deadSeq string
	if err := e.conn.QueryRow(context.Background(), "SELECT payload->>'seq' FROM wallet_outbox WHERE status = $1", hookDead).Scan(&deadSeq); err != nil || deadSeq != "13" {
		t.Fatalf("the row that says %s: seq %q (%v), want 13, the event the receiver refuses; the rows say %v", hookDead, deadSeq, err, e.walletStatuses())
	}
	if got := e.readAll(topic); len(got) < n {
		t.Fatalf("Kafka holds %d records of %d events", len(got), n)
	}

	// The runbook: the receiver takes event 13 now; its row and two
	// delivered ones are set back to pending.
	h.mu.Lock()
	h.refuse = nil
	h.mu.Unlock()
	kafkaBefore, hookBefore := len(e.readAll(topic)), h.requests()
	mustExec(t, e.conn, "UPDATE wallet_outbox SET status = '"+hookPending+"' WHERE payload->>'seq' IN ('13', '14', '15') AND status <> '"+hookPending+"'")
	e.waitFor("every row delivered after the reset", 60*time.Second, func() bool {
		p.requireRunning()
		return e.walletStatuses()[hookDelivered] == n
	})
	e.waitFor("the reset events sent again to the receiver", 30*time.Second, func() bool { return h.requests() >= hookBefore+3 })
	e.readN(topic, kafkaBefore+3, 30*time.Second) // and to Kafka
	if got := h.seqsTaken(); !got[13] {
		t.Errorf("the receiver never took event 13, whose row was reset")
	}
	h.checkKeyOrder(t)
	p.stop(30 * time.Second)
}

// requests is the number of events the receiver took, each time it took
// one.
func (h *hookReceiver) requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.took)
}
