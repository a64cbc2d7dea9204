package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

// checkAtLeastOnce requires every written event at least once and, per key,
// commit order apart from redelivered runs: a key's sequence may step back
// (a transaction sent again after a crash) but never skips ahead.
func checkAtLeastOnce(t *testing.T, recs []*kgo.Record, perKey map[string]int) (dups int) {
	t.Helper()
	seen := map[string]int{}
	next := map[string]int{}
	for _, r := range recs {
		p := decodeSeq(t, r)
		if p.Seq > next[p.Key] {
			t.Fatalf("key %s: seq %d arrived before %d (lost or reordered)", p.Key, p.Seq, next[p.Key])
		}
		if p.Seq == next[p.Key] {
			next[p.Key]++
		}
		seen[header(r, "id")]++
	}
	for k, n := range perKey {
		if next[k] != n {
			t.Fatalf("key %s: %d of %d events arrived", k, next[k], n)
		}
	}
	for _, n := range seen {
		dups += n - 1
	}
	return dups
}

func (e *env) totalRecords(cl *kgo.Client, topic string) int {
	n := int64(0)
	for _, o := range e.endOffsets(cl, topic) {
		n += o
	}
	return int(n)
}

// killMidStream waits until topic holds 2000 records and the slot has
// confirmed past where it was, checking throughout that the checkpoint row
// stays ahead of the slot; then it SIGKILLs relay and checks once more
// (else the restart would see a gap that is not there). It returns how
// many records topic held then.
func (e *env) killMidStream(relay *relayProc, cl *kgo.Client, topic string) int {
	e.t.Helper()
	start := e.lsn(slotLSN)
	e.waitFor("some events arrive and are confirmed", 30*time.Second, func() bool {
		e.checkWriteAhead()
		return e.totalRecords(cl, topic) >= 2000 && e.lsn(slotLSN) > start
	})
	relay.Kill()
	e.checkWriteAhead()
	return e.totalRecords(cl, topic)
}

func TestKill9LosesNothing(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	relay := e.startRelay()
	topic := e.topic("order")
	w := e.startWriter(0)
	cl := e.client()
	killedAt := e.killMidStream(relay, cl, topic)
	w.waitWritten(w.count() + 1000) // more while the relay is down
	perKey := w.stop()
	relay = e.startRelay()
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last commit", 60*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	dups := checkAtLeastOnce(t, e.readAll(topic), perKey)
	t.Logf("killed after %d of %d events; %d redelivered after the restart", killedAt, w.count(), dups)
	relay.stop(30 * time.Second)
}

func TestStandbyTakesOverWhenLeaderDies(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	leader := e.startRelay()
	standby := e.spawnRelay()
	e.waitFor("the second relay stands by", 30*time.Second, func() bool {
		return strings.Contains(standby.Log(), "standing by")
	})
	insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
	e.readN(e.topic("order"), 1, 30*time.Second)
	end := e.lsn(insertLSN)
	e.waitFor("the leader confirms the first event", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	if strings.Contains(standby.Log(), "replication started") {
		t.Fatal("the standby started streaming while the leader runs")
	}

	leader.Kill()
	e.waitFor("the standby takes over the slot", 60*time.Second, func() bool {
		return strings.Contains(standby.Log(), "replication started") && e.slotActive()
	})
	insert(t, e.conn, "order", "k", "Two", `{"n": 2}`)
	// The standby resumes from the leader's confirmed position: the first
	// event is not sent again.
	recs := e.readN(e.topic("order"), 2, 30*time.Second)
	assertValues(t, recs, []string{`{"n": 1}`, `{"n": 2}`})
	standby.stop(30 * time.Second)
}

func TestPostgresRestartMidStream(t *testing.T) {
	parallel(t)
	e, pg := newEnvOwnCluster(t)
	relay := e.startRelay()
	topic := e.topic("order")
	perKey := e.writeEvents(1, 300, 10, 10)
	cl := e.client()
	e.waitFor("some events arrive", 30*time.Second, func() bool { return e.totalRecords(cl, topic) >= 300 })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := pg.Restart(ctx, "immediate"); err != nil {
		t.Fatalf("restart PostgreSQL: %v", err)
	}
	e.conn = mustConnect(t, e.url)
	t.Cleanup(func() { e.conn.Close(context.Background()) })
	if !relay.Running() {
		t.Fatalf("the relay exited when PostgreSQL restarted: %v\n%s", relay.Err(), relay.Log())
	}
	// Written after the restart: the relay must reconnect to deliver them.
	more := e.writeEventsFrom(perKey, 100, 10)
	e.waitFor("the relay streams again", 90*time.Second, e.slotActive)
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last commit", 60*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	dups := checkAtLeastOnce(t, e.readAll(topic), more)
	t.Logf("%d events redelivered after the restart", dups)
	relay.stop(30 * time.Second)
}

// writeEventsFrom continues the per-key sequences of perKey from one
// connection: txs transactions of perTx events, round-robin over the keys.
func (e *env) writeEventsFrom(perKey map[string]int, txs, perTx int) map[string]int {
	e.t.Helper()
	next := map[string]int{}
	var keys []string
	for k, n := range perKey {
		next[k] = n
		keys = append(keys, k)
	}
	i := 0
	for x := 0; x < txs; x++ {
		tx, err := e.conn.Begin(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		for j := 0; j < perTx; j++ {
			k := keys[i%len(keys)]
			i++
			insert(e.t, tx, "order", k, "OrderChanged", fmt.Sprintf(`{"key": %q, "seq": %d}`, k, next[k]))
			next[k]++
		}
		if err := tx.Commit(context.Background()); err != nil {
			e.t.Fatal(err)
		}
	}
	return next
}

func TestPoisonRowsGoToTheStatusTable(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.startRelay()
	ctx := context.Background()
	// Each of its own key: a parked event holds its key's later events
	// (TestOrderHeldBehindARefusedRecord), which is not what this shows.
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload)
		VALUES ('order', 'k1', 'BadTopic', 'bad topic!*', '{"n": "bad topic"}')`)
	// 2 MB: over the producer's 1 MB batch limit, and the broker's default.
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('order', 'k2', 'TooLarge', json_build_object('pad', repeat('x', 2000000))::jsonb)`)
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, headers)
		VALUES ('order', 'k3', 'BadHeaders', '{"n": "bad headers"}', '[1]')`)
	insert(t, e.conn, "order", "k", "Good", `{"n": "good"}`)

	recs := e.readN(e.topic("order"), 1, 30*time.Second)
	assertValues(t, recs, []string{`{"n": "good"}`})
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the poison rows", 30*time.Second, func() bool { return e.lsn(slotLSN) >= end })

	rows, err := e.conn.Query(ctx, `SELECT h->>'value', status, last_error, topic, length(record_value)
		FROM outbox_delivery, jsonb_array_elements(headers) h WHERE h->>'key' = 'event_type' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var eventType, status, reason, topic string
		var size int
		if err := rows.Scan(&eventType, &status, &reason, &topic, &size); err != nil {
			t.Fatal(err)
		}
		// What Kafka refused waits for the poller; a row that cannot become
		// its record waits for an operator.
		if want := map[string]string{"TooLarge": "FAILED"}[eventType]; want == "" && status != "DEAD" || want != "" && status != want {
			t.Errorf("%s: status %s, want %s", eventType, status, map[bool]string{true: "FAILED", false: "DEAD"}[eventType == "TooLarge"])
		}
		if size == 0 {
			t.Errorf("%s: the status row has no copy of the record value", eventType)
		}
		got[eventType] = reason
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for eventType, want := range map[string]string{
		"BadTopic":   "illegal character",
		"TooLarge":   "MESSAGE_TOO_LARGE",
		"BadHeaders": "not a JSON object",
	} {
		if !strings.Contains(got[eventType], want) {
			t.Errorf("%s: reason %q, want one mentioning %q (all: %v)", eventType, got[eventType], want, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("status table holds %d rows, want 3: %v", len(got), got)
	}
}

func TestLostSlotIsReportedNotSkipped(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	relay := e.startRelay()
	insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
	e.readN(e.topic("order"), 1, 30*time.Second)
	relay.stop(30 * time.Second)

	mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
	insert(t, e.conn, "order", "k", "Lost", `{"n": "committed while no slot existed"}`)

	args := []string{"run", "--postgres-url", e.url, "--kafka-brokers", strings.Join(e.brokers, ","), "--slot", e.slot, "--metrics-addr", "127.0.0.1:0"}
	out, err := exec.Command(relayBin, args...).CombinedOutput()
	if err == nil {
		t.Fatalf("the relay started on a dropped slot's name without a word:\n%s", out)
	}
	if !strings.Contains(string(out), "does not exist") || !strings.Contains(string(out), "--accept-slot-loss") {
		t.Fatalf("the error does not explain the lost slot and the way out:\n%s", out)
	}

	relay = e.startRelay("--accept-slot-loss")
	insert(t, e.conn, "order", "k", "Two", `{"n": 2}`)
	recs := e.readN(e.topic("order"), 2, 30*time.Second)
	assertValues(t, recs, []string{`{"n": 1}`, `{"n": 2}`})
	relay.stop(30 * time.Second)
}

// writer inserts transactions of 10 events (keys key-0 … key-9, a sequence
// per key) from one connection until stopped.
type writer struct {
	t       *testing.T
	done    chan struct{}
	result  chan map[string]int
	written atomic.Int64
}

// startWriter starts a writer; every > 0 paces it to a transaction per
// interval.
func (e *env) startWriter(every time.Duration) *writer {
	w := &writer{t: e.t, done: make(chan struct{}), result: make(chan map[string]int, 1)}
	conn := mustConnect(e.t, e.url)
	go func() {
		defer conn.Close(context.Background())
		perKey := map[string]int{}
		defer func() { w.result <- perKey }()
		for {
			select {
			case <-w.done:
				return
			default:
			}
			if every > 0 {
				time.Sleep(every) // pacing, not synchronisation
			}
			tx, err := conn.Begin(context.Background())
			if err != nil {
				e.t.Error(err)
				return
			}
			for j := 0; j < 10; j++ {
				k := fmt.Sprintf("key-%d", j)
				if _, err := tx.Exec(context.Background(),
					"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('order', $1, 'OrderChanged', $2)",
					k, fmt.Sprintf(`{"key": %q, "seq": %d}`, k, perKey[k])); err != nil {
					e.t.Error(err)
					return
				}
			}
			if err := tx.Commit(context.Background()); err != nil {
				e.t.Error(err)
				return
			}
			for j := 0; j < 10; j++ {
				perKey[fmt.Sprintf("key-%d", j)]++
			}
			w.written.Add(10)
		}
	}()
	return w
}

// count is how many events the writer has committed.
func (w *writer) count() int { return int(w.written.Load()) }

// waitWritten waits until the writer has committed n events.
func (w *writer) waitWritten(n int) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for w.count() < n {
		if time.Now().After(deadline) {
			w.t.Fatalf("the writer committed %d of %d events within 60s", w.count(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop stops the writer and returns the events committed per key.
func (w *writer) stop() map[string]int {
	close(w.done)
	return <-w.result
}

// TestStopWhileKafkaIsDown: SIGTERM while no produce succeeds ends within
// the stop timeout with exit 0, also while the reader waits for capacity
// at the in-flight limit, and a restart delivers what was pending.
func TestStopWhileKafkaIsDown(t *testing.T) {
	// Alone: it asserts the stop time (within --stop-timeout).
	tests := []struct {
		name  string
		limit string // --max-in-flight-events
		txs   int    // of 10 events each
	}{
		{"in flight below the limit", "10000", 50},
		// Ten times the limit, none of which Kafka accepts: the reader
		// reaches the limit with the first transactions (each is streamed
		// as it commits) and waits there for the rest of the writes.
		{"reader at the in-flight limit", "20", 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.needKfake()
			relay := e.startRelay("--stop-timeout", "2s", "--max-in-flight-events", tt.limit)
			unblock := e.blockProduce()
			perKey := e.writeEvents(1, tt.txs, 10, 10)
			start := time.Now()
			relay.stop(15 * time.Second)
			if took := time.Since(start); took > 6*time.Second {
				t.Fatalf("stop took %s with a 2s stop timeout", took)
			}
			unblock()
			relay = e.startRelay()
			end := e.lsn(insertLSN)
			e.waitFor("the slot confirms past the last commit", 60*time.Second, func() bool { return e.lsn(slotLSN) >= end })
			checkAtLeastOnce(t, e.readAll(e.topic("order")), perKey)
			relay.stop(30 * time.Second)
		})
	}
}

// TestBrokerRejectsRecordTooLarge: a record the client accepts but the
// broker refuses (the topic's max.message.bytes) is classified permanent by
// the broker's own error and goes to the status table; the stream goes on.
// kfake does not enforce message size limits, so this runs on Apache Kafka.
func TestBrokerRejectsRecordTooLarge(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	if brokerKind() != "apache" {
		t.Skipf("needs a broker that enforces max.message.bytes (kfake does not); run with CDC_RELAY_TEST_KAFKA=apache")
	}
	small := e.prefix + ".small"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafkatest.CreateTopic(ctx, e.client(), small, 1, map[string]string{"max.message.bytes": "100000"}); err != nil {
		t.Fatal(err)
	}
	e.startRelay()
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload)
		VALUES ('order', 'k', 'Big', $1, json_build_object('pad', repeat('x', 500000))::jsonb)`, small)
	var reason string
	e.waitFor("the large record is in the status table", 30*time.Second, func() bool {
		err := e.conn.QueryRow(context.Background(), "SELECT last_error FROM outbox_delivery WHERE topic = $1", small).Scan(&reason)
		return err == nil
	})
	if !strings.Contains(reason, "MESSAGE_TOO_LARGE") && !strings.Contains(reason, "RECORD_LIST_TOO_LARGE") {
		t.Fatalf("status table reason %q, want the broker's MESSAGE_TOO_LARGE", reason)
	}
	// The stream goes on (another key: this one's later events wait
	// behind the parked one, TestOrderHeldBehindARefusedRecord).
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload)
		VALUES ('order', 'k2', 'Small', $1, '{"n": "fits"}')`, small)
	recs := e.readN(small, 1, 30*time.Second)
	assertValues(t, recs, []string{`{"n": "fits"}`})
}
