package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSwitchOverByPredicate: the event store of examples/ switches over
// from a poller whose progress row says it sent up to position 4,000:
// 10,000 events were written before, and an application keeps appending
// while the slot is created, by `migrate --config` (with the example's own
// adopt: line) or by the first `run`, and while `run` streams. Exactly
// events 4,001 to 10,000 of those before arrive, once per topic their tags
// route them to, and so does every event appended later, whether its
// commit came before the slot's snapshot (adopted) or after (streamed);
// none up to 4,000 arrives. CDC_RELAY_TEST_ADOPT_EVENTS sets the events
// before (the progress row at 40% of them); the test logs how long the
// adoption and the poller's sending took.
func TestSwitchOverByPredicate(t *testing.T) {
	events := 10000
	if v := os.Getenv("CDC_RELAY_TEST_ADOPT_EVENTS"); v != "" {
		var err error
		if events, err = strconv.Atoi(v); err != nil {
			t.Fatalf("CDC_RELAY_TEST_ADOPT_EVENTS=%q: %v", v, err)
		}
	}
	for _, by := range []string{"migrate", "run"} {
		t.Run("slot_by_"+by, func(t *testing.T) {
			e := newEnv(t)
			e.exampleSchema("event-store-tags")
			path, wallet, payment := e.adoptExampleConfig()
			mustExec(t, e.conn, `INSERT INTO events (type, tags, data, transaction_id)
				SELECT 'DepositMade', `+adoptTags+`, json_build_object('n', i), pg_current_xact_id() FROM generate_series(1, $1) AS i`, events)
			mustExec(t, e.conn, `INSERT INTO publisher_progress VALUES ('wallet-publisher', $1)`, events*2/5)

			app := e.appendEvents()
			e.waitFor("the application appended while no slot exists", 30*time.Second, func() bool { return app.appended.Load() >= 100 })
			start := time.Now()
			var p *relayProc
			if by == "migrate" {
				out := e.migrateConfig(path)
				e.checkAdoptedLine(out, events)
				t.Logf("migrate adopted in %v", time.Since(start).Round(time.Millisecond))
				start = time.Now()
				p = e.startRelayArgs(relayBin, e.configArgs(path)...)
			} else {
				e.migrateConfig(path, "--no-slot")
				p = e.startRelayArgs(relayBin, e.configArgs(path)...)
			}
			since := app.appended.Load()
			e.waitFor("the application appended while the relay streams", 60*time.Second, func() bool { return app.appended.Load() >= since+300 })
			if err := app.stop(); err != nil {
				t.Fatal(err)
			}

			want := e.routedCopies(wallet, payment, events*2/5, events*3/5)
			for _, topic := range []string{wallet, payment} {
				e.readIDs(topic, want[topic], 180*time.Second+time.Duration(events)*time.Millisecond)
			}
			end := e.lsn(currentLSN)
			e.waitFor("the stream confirmed and the poller sent every adopted row", 60*time.Second, func() bool {
				return e.lsn(slotLSN) >= end && e.statusCount("FAILED") == 0
			})
			t.Logf("the relay sent every adopted row within %v", time.Since(start).Round(time.Millisecond))
			for _, topic := range []string{wallet, payment} {
				e.checkOnce(topic, want[topic])
			}
			if n := e.statusCount("DEAD"); n != 0 {
				t.Errorf("%d adopted rows DEAD, want none", n)
			}
			if by == "run" {
				var adopted int
				if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox_delivery WHERE reload").Scan(&adopted); err != nil {
					t.Fatal(err)
				}
				if adopted < events*3/5 || !saysAdopted(p.Log(), adopted) {
					t.Errorf("run adopted %d copies, want at least %d, and its log should say so", adopted, events*3/5)
				}
			}
			t.Logf("%d events appended around the switch-over; %d and %d records", app.appended.Load(), len(want[wallet]), len(want[payment]))
			p.stop(30 * time.Second)
		})
	}
}

// checkAdoptedLine checks that migrate's output says how many copies it
// adopted, as many as the status table holds, and at least those of the
// events after the progress row of the events before.
func (e *env) checkAdoptedLine(out string, events int) {
	e.t.Helper()
	var adopted int
	if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox_delivery WHERE reload").Scan(&adopted); err != nil {
		e.t.Fatal(err)
	}
	if adopted < events*3/5 || !regexp.MustCompile(`adopted `+strconv.Itoa(adopted)+` row\(s\) that adopt selected`).MatchString(out) {
		e.t.Errorf("migrate adopted %d copies (want at least the %d of the events after the progress row), and says:\n%s", adopted, events*3/5, out)
	}
}

// adoptTags are the tags of event i: one in three to wallet-events, one to
// both topics, one to no topic.
const adoptTags = `CASE i % 3 WHEN 0 THEN ARRAY['wallet_id=w' || i] WHEN 1 THEN ARRAY['wallet_id=w' || i, 'payment_id=p' || i]
	ELSE ARRAY['from_wallet_id=a' || i, 'to_wallet_id=b' || i] END`

// adoptExampleConfig writes the event store's relay.yaml with its adopt:
// line in force, and topics of the test's own on a broker the suite
// shares; it returns its path and the two topics.
func (e *env) adoptExampleConfig() (path, wallet, payment string) {
	e.t.Helper()
	example, err := os.ReadFile(examplePath("event-store-tags"))
	if err != nil {
		e.t.Fatal(err)
	}
	yaml := strings.Replace(string(example), "    # adopt: ", "    adopt: ", 1)
	if yaml == string(example) {
		e.t.Fatal("the event store's relay.yaml has no adopt: line to uncomment")
	}
	wallet, payment = e.topic("wallet-events"), e.topic("payment-events")
	yaml = strings.NewReplacer("wallet-events", wallet, "payment-events", payment).Replace(yaml)
	path = filepath.Join(e.t.TempDir(), "relay.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path, wallet, payment
}

// appender is an application appending to the event log until stopped.
type appender struct {
	appended atomic.Int64 // events committed
	done     chan error
	quit     chan struct{}
}

// appendEvents starts an application that appends three events per
// transaction, tagged as adoptTags, at an application's pace.
func (e *env) appendEvents() *appender {
	a := &appender{done: make(chan error, 1), quit: make(chan struct{})}
	go func() {
		c, err := pgx.Connect(context.Background(), e.url)
		if err != nil {
			a.done <- err
			return
		}
		defer c.Close(context.Background())
		for {
			select {
			case <-a.quit:
				a.done <- nil
				return
			default:
			}
			if _, err := c.Exec(context.Background(), `INSERT INTO events (type, tags, data, transaction_id)
				SELECT 'PaymentMade', `+adoptTags+`, '{}', pg_current_xact_id() FROM generate_series(1, 3) AS i`); err != nil {
				a.done <- err
				return
			}
			a.appended.Add(3)
			time.Sleep(2 * time.Millisecond) // an application's pace
		}
	}()
	e.t.Cleanup(func() { _ = a.stop() })
	return a
}

// stop stops the application and returns its error; it may be called
// twice.
func (a *appender) stop() error {
	select {
	case <-a.quit:
		return nil
	default:
		close(a.quit)
	}
	return <-a.done
}

// routedCopies reads the positions of the events after progress (at
// least atLeast of them) and returns, per topic, those their tags route to
// it, as the example's routes do.
func (e *env) routedCopies(wallet, payment string, progress, atLeast int) map[string][]string {
	e.t.Helper()
	rows, _ := e.conn.Query(context.Background(), "SELECT position::text, tags FROM events WHERE position > $1 ORDER BY position", progress)
	defer rows.Close()
	want := map[string][]string{}
	var n int
	for rows.Next() {
		var id string
		var tags []string
		if err := rows.Scan(&id, &tags); err != nil {
			e.t.Fatal(err)
		}
		n++
		if hasTagKey(tags, "wallet_id") {
			want[wallet] = append(want[wallet], id)
		}
		if hasTagKey(tags, "payment_id") || hasTagKey(tags, "transfer_id") {
			want[payment] = append(want[payment], id)
		}
	}
	if rows.Err() != nil || n < atLeast {
		e.t.Fatalf("%d events after position %d (%v), want at least %d", n, progress, rows.Err(), atLeast)
	}
	return want
}

// hasTagKey reports whether tags hold the tag key, alone or with a value.
func hasTagKey(tags []string, key string) bool {
	for _, tag := range tags {
		if tag == key || strings.HasPrefix(tag, key+"=") {
			return true
		}
	}
	return false
}

// checkOnce reads topic whole and fails the test unless it holds each of
// ids once and nothing else.
func (e *env) checkOnce(topic string, ids []string) {
	e.t.Helper()
	got := map[string]int{}
	for _, r := range e.readAll(topic) {
		got[header(r, "id")]++
	}
	var bad []string
	for _, id := range ids {
		if got[id] != 1 {
			bad = append(bad, fmt.Sprintf("%s %d times", id, got[id]))
		}
		delete(got, id)
	}
	for id, n := range got {
		bad = append(bad, fmt.Sprintf("%s %d times, want never", id, n))
	}
	if len(bad) > 0 {
		e.t.Errorf("%s: %d of %d events not once: %s", topic, len(bad), len(ids), strings.Join(bad[:min(len(bad), 20)], ", "))
	}
}
