package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// keyedInserts add the rows n = $1 … $2 of a team's outbox, pending, each
// of one of $3 keys (n modulo $3), its payload holding n: rows of one key
// are written in the order of n.
var keyedInserts = map[string]string{
	"order-service-outbox": `INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload, status, created_at)
		SELECT gen_random_uuid(), 'Order' || $4::text, md5('key-' || i % $3)::uuid, 'OrderCreated', json_build_object('n', i)::text, 'NEW', now() AT TIME ZONE 'UTC'
		FROM generate_series($1::int, $2::int) AS i`,
	"publisher-worker-outbox": `INSERT INTO outbox (topic, key, payload_json, idempotency_key, status)
		SELECT $4, 'conversation-' || i % $3, jsonb_build_object('n', i), gen_random_uuid()::text, 'pending'
		FROM generate_series($1::int, $2::int) AS i`,
}

// TestSwitchOverKeepsEachKeysOrder: two teams switch over, with 4,000
// pending rows of 20 keys and the application writing more of the same
// keys while `migrate` adopts the backlog and while the relay runs. Every
// row arrives once, and each key's records arrive in the order its rows
// were written: an adopted row holds its key, so that no event the
// stream reads overtakes it.
func TestSwitchOverKeepsEachKeysOrder(t *testing.T) {
	parallel(t)
	const before, keys = 4000, 20
	for _, l := range statusLayouts {
		insert, ok := keyedInserts[l.dir]
		if !ok {
			continue
		}
		t.Run(l.dir, func(t *testing.T) {
			t.Parallel()
			s := newStatusEnv(t, l)
			row, topic := s.l.topic(s.prefix, "switch")
			s.createTopic(topic, nil)
			mustExec(t, s.conn, insert, 0, before-1, keys, row)
			w := s.writeKeyed(insert, keys, row, before)
			written := func() int64 { return before + w.appended.Load() }
			s.waitFor("the application wrote while no slot exists", 30*time.Second, func() bool { return written() >= before+100 })
			s.migrateConfig(s.path)
			p := s.run()
			at := written()
			s.waitFor("the application wrote while the relay runs", 30*time.Second, func() bool { return written() >= at+1000 })
			if err := w.stop(); err != nil {
				t.Fatal(err)
			}
			recs := s.readN(topic, int(written()), 120*time.Second)
			checkKeyOrder(t, recs, int(written()))
			p.stop(30 * time.Second)
		})
	}
}

// writeKeyed writes rows as the application does, ten a transaction,
// from n = from on, counting them in appended, until stopped.
func (s *statusEnv) writeKeyed(insert string, keys int, row string, from int64) *appender {
	return startAppender(s.t, s.url, 10, 2*time.Millisecond, func(i int64) (string, []any) {
		n := from + 10*i
		return insert, []any{n, n + 9, keys, row}
	})
}

// rowN reads n from a record's payload.
var rowN = regexp.MustCompile(`"n"\s*:\s*(\d+)`)

// checkKeyOrder checks that recs hold each n of 0 … total-1 once, and
// that each key's come in increasing n, as its partition's offsets order
// them.
func checkKeyOrder(t *testing.T, recs []*kgo.Record, total int) {
	t.Helper()
	slices.SortFunc(recs, func(a, b *kgo.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	seen := make([]int, total)
	last := map[string]int{}
	inversions := 0
	for _, r := range recs {
		m := rowN.FindSubmatch(r.Value)
		if m == nil {
			t.Fatalf("record %s/%d@%d: no n in %q", r.Topic, r.Partition, r.Offset, r.Value)
		}
		n, _ := strconv.Atoi(string(m[1]))
		if n >= total {
			t.Fatalf("record of n %d, but only %d rows were written", n, total)
		}
		seen[n]++
		if prev, ok := last[string(r.Key)]; ok && n < prev {
			if inversions++; inversions <= 5 {
				t.Errorf("key %s: row %d arrived after row %d, written later", r.Key, n, prev)
			}
		}
		last[string(r.Key)] = max(last[string(r.Key)], n)
	}
	if inversions > 0 {
		t.Errorf("%d records arrived after a later row of their key", inversions)
	}
	for n, c := range seen {
		if c != 1 {
			t.Errorf("row %d arrived %d times, want once", n, c)
		}
	}
}

// TestEventStoreOrderedByTopic: the event store of examples/, whose
// events carry no key, with its relay.yaml's `ordering: topic` and topics
// of one partition, as its document asks ("exact position order" per
// topic), and its progress table: while an application appends about
// 1,500 events a second, the team pauses one topic with its own SQL
// (`UPDATE outbox_topic_progress SET status = 'PAUSED'`) and resumes it
// (`status = 'ACTIVE', error_count = 0`) a few seconds later. Each topic
// holds every event routed to it once, in position order: the paused
// topic's events, PAUSED and then the ones parked behind them, all come
// before the newer ones the stream reads after the resume. The paused
// topic's last_position stays before its first parked event while the
// other's moves on, and the team's lag query reads 0 for both within
// seconds of the application stopping.
func TestEventStoreOrderedByTopic(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	path, wallet, payment := e.eventStoreConfig("\nordering: topic", "progress: {table: outbox_topic_progress, publisher: KafkaPublisher}")
	e.createTopic1(wallet)
	e.createTopic1(payment)
	e.migrateConfig(path)
	p := e.startRelayArgs(relayBin, e.configArgs(path)...)
	app := e.appendEvents()
	e.waitFor("the application appended, and the relay wrote both topics' progress", 30*time.Second, func() bool {
		return app.appended.Load() >= 300 && e.progressPosition(wallet) > 0 && e.progressPosition(payment) > 0
	})
	mustExec(t, e.conn, "UPDATE outbox_topic_progress SET status = 'PAUSED' WHERE topic = $1 AND publisher = 'KafkaPublisher'", wallet)
	e.waitFor("the paused topic's events are parked", 30*time.Second, func() bool { return e.statusCount("PAUSED") > 0 })
	at := app.appended.Load()
	e.waitFor("the application appended while the topic is paused", 30*time.Second, func() bool { return app.appended.Load() >= at+2000 })
	var firstParked int64
	if err := e.conn.QueryRow(context.Background(), "SELECT min(event_id::bigint) FROM outbox_delivery WHERE topic = $1 AND status IN ('PAUSED', 'WAITING')", wallet).Scan(&firstParked); err != nil {
		t.Fatal(err)
	}
	paymentAt := e.progressPosition(payment)
	e.waitFor("the other topic's progress moves on", 30*time.Second, func() bool { return e.progressPosition(payment) > paymentAt })
	if got := e.progressPosition(wallet); got >= firstParked {
		t.Fatalf("the paused topic's last_position is %d, at or past its first parked event %d", got, firstParked)
	}
	// The relay's status and `resume` say where the topic is paused, and
	// what resumes it.
	var out []byte
	var err error
	e.waitFor("cdc-relay status says the team paused the topic (its database reading is every few seconds)", 30*time.Second, func() bool {
		out, err = exec.Command(relayBin, "status", "--config", path, "--metrics-addr", strings.TrimPrefix(p.endpoint(), "http://")).CombinedOutput()
		return err == nil && strings.Contains(string(out), "paused      topics "+wallet+" in public.outbox_topic_progress")
	})
	out, err = exec.Command(relayBin, "resume", "--topic", wallet, "--config", path, "--postgres-url", e.url, "--slot", e.slot).CombinedOutput()
	if want := "is still paused in public.outbox_topic_progress for publisher \"KafkaPublisher\""; err != nil || !strings.Contains(string(out), want) {
		t.Errorf("cdc-relay resume --topic: %v, want %q:\n%s", err, want, out)
	}
	mustExec(t, e.conn, "UPDATE outbox_topic_progress SET status = 'ACTIVE', error_count = 0, last_error = NULL WHERE publisher = 'KafkaPublisher'")
	at = app.appended.Load()
	e.waitFor("the application appended after the resume", 30*time.Second, func() bool { return app.appended.Load() >= at+1500 })
	if err := app.stop(); err != nil {
		t.Fatal(err)
	}
	e.waitTeamLagZero()
	e.checkRoutedInPositionOrder(wallet, payment, int(app.appended.Load()))
	if n := e.statusCount("PAUSED") + e.statusCount("WAITING") + e.statusCount("FAILED"); n != 0 {
		t.Errorf("%d events still held in the status table, want none", n)
	}
	p.stop(30 * time.Second)
}

// checkRoutedInPositionOrder fails the test unless each of the event
// store's topics holds every event of the log its tags route to it (at
// least appended of them), once each, in position order.
func (e *env) checkRoutedInPositionOrder(wallet, payment string, appended int) {
	e.t.Helper()
	want := e.routedCopies(wallet, payment, 0, appended)
	for _, ids := range want { // in position order, not as text
		slices.SortFunc(ids, func(a, b string) int {
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return x - y
		})
	}
	for _, topic := range []string{wallet, payment} {
		checkPositionOrder(e.t, topic, e.readN(topic, len(want[topic]), 120*time.Second), want[topic])
	}
}

// checkPositionOrder fails the test unless recs hold the ids of want,
// once each, in want's order, counting the records that came after a
// later position.
func checkPositionOrder(t *testing.T, topic string, recs []*kgo.Record, want []string) {
	t.Helper()
	got := make([]string, len(recs))
	for i, r := range recs {
		got[i] = header(r, "id")
	}
	inversions := 0
	for i := 1; i < len(got); i++ {
		a, _ := strconv.Atoi(got[i-1])
		b, _ := strconv.Atoi(got[i])
		if b < a {
			if inversions++; inversions <= 5 {
				t.Errorf("%s: position %d at offset %d, after %d", topic, b, i, a)
			}
		}
	}
	if inversions > 0 || !slices.Equal(got, want) {
		first := 0
		for first < min(len(got), len(want)) && got[first] == want[first] {
			first++
		}
		t.Errorf("%s: %d records, %d inversions; want the %d events routed to it once each, in position order; the first difference at %d: %q, want %q",
			topic, len(got), inversions, len(want), first, got[first:min(first+5, len(got))], want[first:min(first+5, len(want))])
	}
}

// waitTeamLagZero waits until the event store team's lag query, over its
// progress table, reads 0 (every topic's last_position at the newest
// event), and logs how long that took from the call: the application has
// just stopped.
func (e *env) waitTeamLagZero() {
	e.t.Helper()
	stopped := time.Now()
	const lag = "SELECT count(*) FROM outbox_topic_progress WHERE publisher = 'KafkaPublisher' AND (SELECT max(position) FROM events) - last_position > 0"
	e.waitFor("the team's lag query reads 0", 60*time.Second, func() bool {
		var behind int
		if err := e.conn.QueryRow(context.Background(), lag).Scan(&behind); err != nil {
			e.t.Fatal(err)
		}
		return behind == 0
	})
	e.t.Logf("the team's lag query read 0 %v after the application stopped", time.Since(stopped).Round(10*time.Millisecond))
}

// progressPosition is the last_position of the relay's row of topic in
// the event store's progress table; 0 without one.
func (e *env) progressPosition(topic string) int64 {
	e.t.Helper()
	var pos int64
	err := e.conn.QueryRow(context.Background(), "SELECT coalesce(max(last_position), 0) FROM outbox_topic_progress WHERE topic = $1 AND publisher = 'KafkaPublisher'", topic).Scan(&pos)
	if err != nil {
		e.t.Fatal(err)
	}
	return pos
}

// TestEventStoreProgressFollowsRefusals: the event store's progress row
// of a topic says why its first parked event is not delivered: a record
// larger than the topic's max.message.bytes is parked, and while it is,
// error_count counts its failed attempts and last_error says why, and
// last_position stays before it although later events arrive (held
// behind it: ordering: topic). Once the operator raises the limit, it is
// delivered, with every event after it, and the row reads 0 errors, no
// error, and the newest position.
func TestEventStoreProgressFollowsRefusals(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	path, wallet, _ := e.eventStoreConfig()
	e.createTopic(wallet, map[string]string{"max.message.bytes": "100000"})
	e.migrateConfig(path)
	p := e.startRelayArgs(relayBin, e.configArgs(path)...)
	appendWallet := func(data string) int64 {
		var pos int64
		err := e.conn.QueryRow(context.Background(), "INSERT INTO events (type, tags, data, transaction_id) VALUES ('DepositMade', '{wallet_id=w1}', $1, pg_current_xact_id()) RETURNING position", data).Scan(&pos)
		if err != nil {
			t.Fatal(err)
		}
		return pos
	}
	appendWallet(`{"n": "before"}`)
	e.waitFor("the first event's position written", 30*time.Second, func() bool { return e.progressPosition(wallet) > 0 })
	large := appendWallet(`{"n": "` + strings.Repeat("x", 300_000) + `"}`)
	after := appendWallet(`{"n": "after"}`)

	row := func() (pos int64, errors int, lastErr *string) {
		err := e.conn.QueryRow(context.Background(), "SELECT last_position, error_count, last_error FROM outbox_topic_progress WHERE topic = $1 AND publisher = 'KafkaPublisher'", wallet).
			Scan(&pos, &errors, &lastErr)
		if err != nil {
			t.Fatal(err)
		}
		return pos, errors, lastErr
	}
	e.waitFor("the progress row counts the refused event's attempts", 60*time.Second, func() bool {
		_, n, _ := row()
		return n >= 1
	})
	pos, n, lastErr := row()
	if pos >= large || lastErr == nil || !strings.Contains(*lastErr, "max.message.bytes") {
		t.Fatalf("while position %d is refused the row says last_position %d, error_count %d, last_error %v; want a position before it, and why", large, pos, n, lastErr)
	}
	t.Logf("while refused: last_position %d, error_count %d, last_error %q", pos, n, *lastErr)
	e.setMaxMessageBytes(wallet, "1000000")
	e.waitFor("the refused event and the one after it delivered, the row clear", 60*time.Second, func() bool {
		pos, n, lastErr := row()
		return pos >= after && n == 0 && lastErr == nil
	})
	e.readN(wallet, 3, 30*time.Second)
	p.stop(30 * time.Second)
}

// eventStoreConfig creates the event store's schema and writes its
// relay.yaml with topics of the test's own, failing the test unless the
// file says each of says; it returns the file's path and the two topics.
func (e *env) eventStoreConfig(says ...string) (path, wallet, payment string) {
	e.t.Helper()
	e.exampleSchema("event-store-tags")
	example, err := os.ReadFile(examplePath("event-store-tags"))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, want := range says {
		if !strings.Contains(string(example), want) {
			e.t.Fatalf("the event store's relay.yaml does not say %q", want)
		}
	}
	wallet, payment = e.topic("wallet-events"), e.topic("payment-events")
	yaml := strings.NewReplacer("wallet-events", wallet, "payment-events", payment).Replace(string(example))
	path = filepath.Join(e.t.TempDir(), "relay.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path, wallet, payment
}
