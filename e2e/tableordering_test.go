package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestEventStoreTableOrderedByTopic: one relay, two tables: the event
// store's, with `ordering: topic` on the table (not the relay), whose
// events carry no key, beside a keyed outbox table ordered by key (the
// default). While an application appends to both, a topic of each is
// paused (`cdc-relay pause --topic`) and then resumed. The event store's
// topics each hold every event routed to them once, in position order (0
// inversions), although unkeyed; the keyed table's topic holds every
// event once, each key's in commit order; nothing stays held.
// check-config says each table's ordering.
func TestEventStoreTableOrderedByTopic(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	path, wallet, payment := e.eventStoreConfig("\nordering: topic")
	orders := e.topic("orders")
	e.tableOrderingConfig(path, orders)
	for _, topic := range []string{wallet, payment, orders} {
		e.createTopic1(topic)
	}
	e.migrateConfig(path)
	out, err := exec.Command(relayBin, "check-config", "--config", path, "--postgres-url", e.url, "--slot", e.slot).CombinedOutput()
	for _, want := range []string{"ordering: topic, of its topics " + wallet + ", " + payment + ": ", "ordering: key (the default): "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check-config does not say %q (%v):\n%s", want, err, out)
		}
	}
	p := e.startRelayArgs(relayBin, append(e.configArgs(path), orderRelayArgs()...)...)
	app, keyed := e.appendEvents(), e.writeKeyed()
	e.waitFor("both applications wrote", 30*time.Second, func() bool { return app.appended.Load() >= 300 && keyed.appended.Load() >= 100 })
	e.pauseCmd("pause", wallet)
	e.pauseCmd("pause", orders)
	e.waitFor("events of both paused topics held", 30*time.Second, func() bool {
		return e.heldOf(wallet, "PAUSED") > 0 && e.heldOf(orders, "PAUSED") > 0
	})
	at, keyedAt := app.appended.Load(), keyed.appended.Load()
	e.waitFor("the applications wrote while the topics are paused", 30*time.Second, func() bool {
		return app.appended.Load() >= at+1500 && keyed.appended.Load() >= keyedAt+200
	})
	e.pauseCmd("resume", wallet)
	e.pauseCmd("resume", orders)
	at, keyedAt = app.appended.Load(), keyed.appended.Load()
	e.waitFor("the applications wrote after the resume", 30*time.Second, func() bool {
		return app.appended.Load() >= at+1500 && keyed.appended.Load() >= keyedAt+200
	})
	if err := app.stop(); err != nil {
		t.Fatal(err)
	}
	if err := keyed.stop(); err != nil {
		t.Fatal(err)
	}
	e.checkRoutedInPositionOrder(wallet, payment, int(app.appended.Load()))
	n := int(keyed.appended.Load())
	e.readN(orders, n, 120*time.Second)
	checkPerKeyOrder(t, orders, e.readAll(orders), n)
	e.waitFor("no event held", 60*time.Second, func() bool {
		return e.statusCount("FAILED")+e.statusCount("WAITING")+e.statusCount("PAUSED") == 0
	})
	t.Logf("%d events appended to the store, %d keyed; %d went through the status table", app.appended.Load(), n, e.statusCount(""))
	p.stop(30 * time.Second)
}

// tableOrderingConfig rewrites the event store's relay.yaml at path: its
// ordering: topic moves from the relay to the events table, and a keyed
// outbox table, orders_outbox (created here), sends to topic with the
// relay's ordering, key.
func (e *env) tableOrderingConfig(path, topic string) {
	e.t.Helper()
	mustExec(e.t, e.conn, `CREATE TABLE orders_outbox (id bigserial PRIMARY KEY, order_id text NOT NULL, payload jsonb NOT NULL)`)
	data, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	yaml := regexp.MustCompile(`(?m)^ordering: topic.*\n`).ReplaceAllString(string(data), "")
	if yaml == string(data) || !strings.Contains(yaml, "\n    progress: ") {
		e.t.Fatalf("the event store's relay.yaml has no top-level ordering: topic, or no progress: key:\n%s", data)
	}
	yaml = strings.Replace(yaml, "\n    progress: ", "\n    ordering: topic\n    progress: ", 1)
	yaml += fmt.Sprintf("  - {table: public.orders_outbox, id: id, key: order_id, value: payload, topic: %s}\n", topic)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// heldOf counts the status rows of topic in state.
func (e *env) heldOf(topic, state string) int {
	e.t.Helper()
	var n int
	if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox_delivery WHERE topic = $1 AND status = $2", topic, state).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// writeKeyed starts an application that writes an event every 3 ms to
// orders_outbox, of one of 20 keys in turn, its payload holding its seq.
func (e *env) writeKeyed() *appender {
	return startAppender(e.t, e.url, 1, 3*time.Millisecond, func(i int64) (string, []any) {
		return "INSERT INTO orders_outbox (order_id, payload) VALUES ($1, $2)", []any{fmt.Sprintf("k%d", i%20), fmt.Sprintf(`{"seq": %d}`, i)}
	})
}
