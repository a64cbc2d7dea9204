package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
			var written atomic.Int64
			written.Store(before)
			w := s.writeKeyed(insert, keys, row, &written)
			s.waitFor("the application wrote while no slot exists", 30*time.Second, func() bool { return written.Load() >= before+100 })
			s.migrateConfig(s.path)
			p := s.run()
			at := written.Load()
			s.waitFor("the application wrote while the relay runs", 30*time.Second, func() bool { return written.Load() >= at+1000 })
			if err := w.stop(); err != nil {
				t.Fatal(err)
			}
			recs := s.readN(topic, int(written.Load()), 120*time.Second)
			checkKeyOrder(t, recs, int(written.Load()))
			p.stop(30 * time.Second)
		})
	}
}

// writeKeyed writes rows as the application does, ten a transaction,
// counting them in written (the next n), until stopped.
func (s *statusEnv) writeKeyed(insert string, keys int, row string, written *atomic.Int64) *appender {
	a := &appender{done: make(chan error, 1), quit: make(chan struct{})}
	go func() {
		c, err := pgx.Connect(context.Background(), s.url)
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
			n := written.Load()
			if _, err := c.Exec(context.Background(), insert, n, n+9, keys, row); err != nil {
				a.done <- err
				return
			}
			written.Add(10)
			time.Sleep(2 * time.Millisecond) // an application's pace
		}
	}()
	s.t.Cleanup(func() { _ = a.stop() })
	return a
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
// of one partition, as its document asks ("exact position order" per topic):
// while an application appends about 1,500 events a second, one topic is
// paused for a second and a half and resumed. Each topic holds every
// event routed to it once, in position order: the paused topic's events,
// PAUSED and then the ones parked behind them, all come before the newer
// ones the stream reads after the resume.
func TestEventStoreOrderedByTopic(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.exampleSchema("event-store-tags")
	example, err := os.ReadFile(examplePath("event-store-tags"))
	if err != nil {
		t.Fatal(err)
	}
	wallet, payment := e.topic("wallet-events"), e.topic("payment-events")
	if !strings.Contains(string(example), "\nordering: topic") {
		t.Fatal("the event store's relay.yaml does not say ordering: topic")
	}
	yaml := strings.NewReplacer("wallet-events", wallet, "payment-events", payment).Replace(string(example))
	path := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	e.createTopic1(wallet)
	e.createTopic1(payment)
	e.migrateConfig(path)
	p := e.startRelayArgs(relayBin, e.configArgs(path)...)
	app := e.appendEvents()
	e.waitFor("the application appended", 30*time.Second, func() bool { return app.appended.Load() >= 300 })
	e.pauseCmd("pause", wallet)
	at := app.appended.Load()
	e.waitFor("the application appended while the topic is paused", 30*time.Second, func() bool { return app.appended.Load() >= at+2000 })
	e.pauseCmd("resume", wallet)
	at = app.appended.Load()
	e.waitFor("the application appended after the resume", 30*time.Second, func() bool { return app.appended.Load() >= at+1500 })
	if err := app.stop(); err != nil {
		t.Fatal(err)
	}
	want := e.routedCopies(wallet, payment, 0, int(app.appended.Load()))
	for _, ids := range want { // in position order, not as text
		slices.SortFunc(ids, func(a, b string) int {
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return x - y
		})
	}
	for _, topic := range []string{wallet, payment} {
		recs := e.readN(topic, len(want[topic]), 120*time.Second)
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
		if inversions > 0 || !slices.Equal(got, want[topic]) {
			first := 0
			for first < min(len(got), len(want[topic])) && got[first] == want[topic][first] {
				first++
			}
			t.Errorf("%s: %d records, %d inversions; want the %d events routed to it once each, in position order; the first difference at %d: %q, want %q",
				topic, len(got), inversions, len(want[topic]), first, got[first:min(first+5, len(got))], want[topic][first:min(first+5, len(want[topic]))])
		}
	}
	if n := e.statusCount("PAUSED") + e.statusCount("WAITING") + e.statusCount("FAILED"); n != 0 {
		t.Errorf("%d events still held in the status table, want none", n)
	}
	p.stop(30 * time.Second)
}
