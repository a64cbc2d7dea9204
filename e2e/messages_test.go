package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Messages as events: an application writes its events with
// pg_logical_emit_message(true, prefix, content) inside its business
// transaction, most often through the SQL helper cdc_relay.emit that
// `migrate --message-prefix` creates, and the relay relays the
// transactional messages of the prefixes it maps, with the guarantees of
// an outbox table's rows. PostgreSQL 14 and later: pgoutput sends messages
// only from there (TestMessagesNeedPostgres14).

// messageArgs are the flags of migrate and run that relay the messages of
// the default prefix, in the envelope.
var messageArgs = []string{"--message-prefix", "outbox"}

// messageSource is how the relay names the messages of the default prefix
// where it names an outbox table (the status table's source_table).
const messageSource = "message:outbox"

// clusterVersion is the package cluster's server_version_num.
func clusterVersion(t *testing.T) int {
	t.Helper()
	c := mustConnect(t, cluster.URL("postgres"))
	defer c.Close(context.Background())
	var v int
	if err := c.QueryRow(context.Background(), "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// needMessages skips t on a PostgreSQL before 14, whose pgoutput sends no
// logical decoding messages: there the relay refuses them
// (TestMessagesNeedPostgres14).
func needMessages(t *testing.T) {
	t.Helper()
	if v := clusterVersion(t); v < 140000 {
		t.Skipf("PostgreSQL %d: pgoutput sends logical decoding messages from 14 on", v/10000)
	}
}

// newMessageEnv is newEnv migrated with `migrate --message-prefix outbox`:
// the default outbox table, the relay's tables and the SQL helper
// cdc_relay.emit, which writes messages of the prefix outbox. It skips t
// before PostgreSQL 14.
func newMessageEnv(t *testing.T) *env {
	t.Helper()
	needMessages(t)
	e := newEnvUnprepared(t)
	e.prepare(messageArgs...)
	return e
}

// rowQuerier is a connection or a transaction.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// queryLSN runs sql, which returns one pg_lsn, on q and returns it as
// pglogrepl.LSN writes it: the form of a message's id when its content
// names none.
func queryLSN(t *testing.T, q rowQuerier, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := q.QueryRow(context.Background(), "SELECT ("+sql+")::text", args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	lsn, err := pglogrepl.ParseLSN(s)
	if err != nil {
		t.Fatalf("%s returned %q: %v", sql, s, err)
	}
	return lsn.String()
}

// emit calls cdc_relay.emit(topic, key, payload, headers, id) on q (nil is
// NULL; payload and headers are JSON text) and returns the message's WAL
// position, which the function returns: the id of a message that gives
// none.
func emit(t *testing.T, q rowQuerier, topic string, key, payload, headers, id any) string {
	t.Helper()
	return queryLSN(t, q, "cdc_relay.emit($1, $2, $3::jsonb, $4::jsonb, $5)", topic, key, payload, headers, id)
}

// emitRaw writes content with pg_logical_emit_message(transactional,
// prefix, content) on q and returns the message's WAL position.
func emitRaw(t *testing.T, q rowQuerier, transactional bool, prefix, content string) string {
	t.Helper()
	return queryLSN(t, q, "pg_logical_emit_message($1, $2, $3::text)", transactional, prefix, content)
}

// wantMessage is the record one message must become.
type wantMessage struct {
	topic   string
	key     *string // nil: no key
	id      string
	headers map[string]string // besides id
	value   *string           // nil: no value
}

func ptr(s string) *string { return &s }

// checkMessages requires recs to be exactly the records of want, each
// once: found by the id header, on its topic, with its key, its value and
// its headers, id first, and a timestamp (the commit's) within the test's
// run, since began.
func checkMessages(t *testing.T, recs []*kgo.Record, want []wantMessage, began time.Time) {
	t.Helper()
	byID := map[string]wantMessage{}
	for _, w := range want {
		byID[w.id] = w
	}
	seen := map[string]bool{}
	for _, r := range recs {
		id := header(r, "id")
		w, ok := byID[id]
		switch {
		case !ok:
			t.Errorf("record with id %q on %s was never emitted (key %q, value %q)", id, r.Topic, r.Key, r.Value)
			continue
		case seen[id]:
			t.Errorf("message %s arrived twice", id)
			continue
		}
		seen[id] = true
		checkMessage(t, r, w, began)
	}
	for _, w := range want {
		if !seen[w.id] {
			t.Errorf("message %s (topic %s) never arrived", w.id, w.topic)
		}
	}
}

// checkMessage requires r to be the record of w.
func checkMessage(t *testing.T, r *kgo.Record, w wantMessage, began time.Time) {
	t.Helper()
	if r.Topic != w.topic {
		t.Errorf("message %s: topic %s, want %s", w.id, r.Topic, w.topic)
	}
	if got, want := optBytes(r.Key), optText(w.key); got != want {
		t.Errorf("message %s: key %s, want %s", w.id, got, want)
	}
	if got, want := optBytes(r.Value), optText(w.value); got != want {
		t.Errorf("message %s: value %s, want %s", w.id, got, want)
	}
	if len(r.Headers) == 0 || r.Headers[0].Key != "id" {
		t.Errorf("message %s: headers %v, want id first", w.id, r.Headers)
	}
	got := map[string]string{}
	for _, h := range r.Headers[min(1, len(r.Headers)):] {
		got[h.Key] = string(h.Value)
	}
	if !maps.Equal(got, w.headers) && (len(got) > 0 || len(w.headers) > 0) {
		t.Errorf("message %s: headers after id %v, want %v", w.id, got, w.headers)
	}
	if r.Timestamp.Before(began.Add(-time.Second)) || r.Timestamp.After(time.Now().Add(time.Second)) {
		t.Errorf("message %s: timestamp %s, not the commit's time (the test began at %s)", w.id, r.Timestamp, began)
	}
}

// optBytes shows a key or value, or that there is none (nil).
func optBytes(b []byte) string {
	if b == nil {
		return "(none)"
	}
	return fmt.Sprintf("%q", b)
}

func optText(s *string) string {
	if s == nil {
		return "(none)"
	}
	return fmt.Sprintf("%q", *s)
}

// readTopics reads n records of each topic, then, once the slot has
// confirmed every commit so far, requires no more to be there.
func (e *env) readTopics(n map[string]int) []*kgo.Record {
	e.t.Helper()
	var recs []*kgo.Record
	for topic, count := range n {
		recs = append(recs, e.readN(topic, count, 60*time.Second)...)
	}
	e.waitConfirmed(60 * time.Second)
	for topic, count := range n {
		if got := len(e.readAll(topic)); got != count {
			e.t.Fatalf("%s holds %d records, want %d", topic, got, count)
		}
	}
	return recs
}

// jsonbText is how PostgreSQL writes the JSON text j as jsonb: what a
// payload that cdc_relay.emit wrote reads as in the content.
func (e *env) jsonbText(j string) string {
	e.t.Helper()
	var s string
	if err := e.conn.QueryRow(context.Background(), "SELECT $1::jsonb::text", j).Scan(&s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// TestMessagesArriveOnceWithKeyHeadersAndID: `migrate --message-prefix
// outbox` then `run --message-prefix outbox`; an application emits events
// with cdc_relay.emit, one or several in a transaction, and with
// pg_logical_emit_message itself. Each arrives once, on the topic its
// envelope names, with its key (text, a number's JSON text, or none), the
// headers of its envelope after the id header (its own id, or its WAL
// position when it names none: the position emit returned), and its
// payload: a JSON string's text, null as no value, any other JSON as it
// is written in the content.
func TestMessagesArriveOnceWithKeyHeadersAndID(t *testing.T) {
	parallel(t)
	e := newMessageEnv(t)
	began := time.Now()
	p := e.startRelay(messageArgs...)
	a, b := e.prefix+".msg-a", e.prefix+".msg-b"
	var want []wantMessage
	ctx := context.Background()

	// One event in a transaction of its own, with everything given.
	emit(t, e.conn, a, "order-1", `{"total": 12.5, "items": [1, 2]}`, `{"source": "shop", "trace": "abc"}`, "evt-1")
	want = append(want, wantMessage{topic: a, key: ptr("order-1"), id: "evt-1",
		headers: map[string]string{"source": "shop", "trace": "abc"}, value: ptr(e.jsonbText(`{"total": 12.5, "items": [1, 2]}`))})

	// Three in one transaction: a JSON string as the payload, no key and
	// no id (the WAL position), an array.
	tx, err := e.conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	emit(t, tx, a, "order-2", `"plain text é"`, nil, "evt-2")
	lsn := emit(t, tx, b, nil, `{"n": 3}`, `{"h": "v"}`, nil)
	emit(t, tx, a, "order-1", `[1, "two", null]`, nil, "evt-3")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want = append(want,
		wantMessage{topic: a, key: ptr("order-2"), id: "evt-2", value: ptr("plain text é")},
		wantMessage{topic: b, id: lsn, headers: map[string]string{"h": "v"}, value: ptr(e.jsonbText(`{"n": 3}`))},
		wantMessage{topic: a, key: ptr("order-1"), id: "evt-3", value: ptr(e.jsonbText(`[1, "two", null]`))})

	// The envelope written by hand: numbers as key and id, the payload's
	// text as written (spaces kept), null as no value, an escaped string.
	tx, err = e.conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	emitRaw(t, tx, true, "outbox", fmt.Sprintf(`{"topic": %q, "key": 42, "id": 7, "headers": {"x": "y"}, "payload": {"a" :  1,"b":[ ]}}`, b))
	tombstone := emitRaw(t, tx, true, "outbox", fmt.Sprintf(`{"topic": %q, "key": "gone", "payload": null}`, b))
	escaped := emitRaw(t, tx, true, "outbox", fmt.Sprintf(`{"payload": "line\nbreak \"q\" \u00e9", "topic": %q, "key": null, "id": null, "headers": null}`, a))
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want = append(want,
		wantMessage{topic: b, key: ptr("42"), id: "7", headers: map[string]string{"x": "y"}, value: ptr(`{"a" :  1,"b":[ ]}`)},
		wantMessage{topic: b, key: ptr("gone"), id: tombstone},
		wantMessage{topic: a, id: escaped, value: ptr("line\nbreak \"q\" é")})

	// More, from a second connection: 1 to 3 events a transaction.
	want = append(want, e.emitBulk(a, 60)...)

	counts := map[string]int{}
	for _, w := range want {
		counts[w.topic]++
	}
	checkMessages(t, e.readTopics(counts), want, began)
	checkEventCounts(p, len(want))
	p.stop(30 * time.Second)
}

// emitBulk emits n events to topic with cdc_relay.emit from a connection
// of its own, 1 to 3 in a transaction, keys bulk-0 … bulk-4, ids bulk-i,
// and returns the records they must become.
func (e *env) emitBulk(topic string, n int) []wantMessage {
	e.t.Helper()
	c := mustConnect(e.t, e.url)
	defer c.Close(context.Background())
	var want []wantMessage
	for i, txn := 0, 0; i < n; txn++ {
		size := 1 + txn%3
		err := pgx.BeginFunc(context.Background(), c, func(tx pgx.Tx) error {
			for j := 0; j < size && i < n; j, i = j+1, i+1 {
				key, id, payload := fmt.Sprintf("bulk-%d", i%5), fmt.Sprintf("bulk-%d", i), fmt.Sprintf(`{"i": %d}`, i)
				emit(e.t, tx, topic, key, payload, `{"kind": "bulk"}`, id)
				want = append(want, wantMessage{topic: topic, key: ptr(key), id: id,
					headers: map[string]string{"kind": "bulk"}, value: ptr(payload)})
			}
			return nil
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
	return want
}

// checkEventCounts requires the relay's counters to say that it read and
// produced n events.
func checkEventCounts(p *relayProc, n int) {
	p.t.Helper()
	_, families := p.scrape()
	for _, name := range []string{"cdc_relay_events_read_total", "cdc_relay_events_produced_total"} {
		if got := value(families, name); got != float64(n) {
			p.t.Errorf("%s is %v, want %d", name, got, n)
		}
	}
}

// TestMessagesRolledBackSendNothing: messages emitted in a transaction
// that rolls back, or in a savepoint rolled back within one that commits,
// send nothing; neither does a non-transactional message (in a committed
// transaction or a rolled-back one), counted and warned of once, nor a
// message of a prefix no one mapped, which is counted by prefix and warned
// of. The committed rest
// arrives, in commit order (one key).
func TestMessagesRolledBackSendNothing(t *testing.T) {
	parallel(t)
	e := newMessageEnv(t)
	p := e.startRelay(messageArgs...)
	ctx := context.Background()
	topic := e.prefix + ".msg"
	env := func(n string) string {
		return fmt.Sprintf(`{"topic": %q, "key": "k", "payload": %q}`, topic, n)
	}
	emit(t, e.conn, topic, "k", `"first"`, nil, nil)

	tx, err := e.conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	emit(t, tx, topic, "k", `"rolled back"`, nil, nil)
	emitRaw(t, tx, false, "outbox", env("non-transactional, in a rolled-back transaction"))
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	tx, err = e.conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	emit(t, tx, topic, "k", `"kept before savepoint"`, nil, nil)
	mustExecTx(t, tx, "SAVEPOINT s1")
	emit(t, tx, topic, "k", `"after savepoint"`, nil, nil)
	emitRaw(t, tx, true, "outbox", env("raw, after savepoint"))
	mustExecTx(t, tx, "ROLLBACK TO SAVEPOINT s1")
	emitRaw(t, tx, false, "outbox", env("non-transactional"))
	emitRaw(t, tx, true, "other", env("unmapped prefix"))
	emitRaw(t, tx, true, "outbox-2", env("a longer prefix"))
	emit(t, tx, topic, "k", `"kept after savepoint"`, nil, nil)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	emitRaw(t, e.conn, false, "outbox", env("non-transactional, alone"))
	emit(t, e.conn, topic, "k", `"last"`, nil, nil)

	recs := e.readN(topic, 4, 30*time.Second)
	assertValues(t, recs, []string{"first", "kept before savepoint", "kept after savepoint", "last"})
	e.waitConfirmed(30 * time.Second)
	if all := e.readAll(topic); len(all) != 4 {
		t.Fatalf("topic holds %d records, want 4", len(all))
	}
	if n := e.statusCount(""); n != 0 {
		t.Fatalf("the status table holds %d rows, want none: nothing ignored is parked", n)
	}
	_, families := p.scrape()
	for prefix, want := range map[string]float64{"other": 1, "outbox-2": 1, "outbox": -1} {
		if got := value(families, "cdc_relay_messages_ignored_total", "prefix", prefix); got != want {
			t.Errorf("ignored messages of prefix %q: %v, want %v (-1: none)", prefix, got, want)
		}
	}
	for _, prefix := range []string{"other", "outbox-2"} {
		if !strings.Contains(p.Log(), "no messages: entry maps") || !strings.Contains(p.Log(), "prefix="+prefix) {
			t.Errorf("the relay does not warn of the messages of prefix %q:\n%s", prefix, p.Log())
		}
	}
	if got := value(families, "cdc_relay_messages_non_transactional_total", "prefix", "outbox"); got != 3 {
		t.Errorf("non-transactional messages of the mapped prefix: %v, want 3", got)
	}
	if strings.Count(p.Log(), "ignored a non-transactional message of a mapped prefix") != 1 {
		t.Errorf("want one warning of the non-transactional messages:\n%s", p.Log())
	}
}

// TestMessagesAndRowsInCommitOrder: transactions from two connections,
// each alternating outbox-table inserts and emitted messages on one topic
// and key: the records arrive once each, in commit order, rows and
// messages interleaved as written, each a row's record or a message's as
// its id shows. A counter row that each transaction updates first orders
// their commits.
func TestMessagesAndRowsInCommitOrder(t *testing.T) {
	parallel(t)
	e := newMessageEnv(t)
	e.startRelay(messageArgs...)
	mustExec(t, e.conn, "CREATE TABLE mix_seq (n int NOT NULL); INSERT INTO mix_seq VALUES (0)")
	const workers, txs, perTx = 2, 40, 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- e.writeMixed(w, txs, perTx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	total := workers * txs * perTx
	recs := e.readTopics(map[string]int{e.topic("order"): total})
	checkExactlyOnce(t, recs, total, map[string]int{"shared": total})
	for _, r := range recs {
		m := decodeMixed(t, r)
		if from := origin(header(r, "id")); m.Via != m.wantVia() || from != m.Via {
			t.Fatalf("seq %d of worker %d, written as a %s, says %s and arrived with the id %q of a %s",
				m.Seq, m.Worker, m.wantVia(), m.Via, header(r, "id"), from)
		}
	}
}

// writeMixed commits txs transactions on a connection of its own, each
// taking the next number n of mix_seq and then writing perTx events of
// the key shared with seq n*perTx+j, alternately a row and a message:
// worker 0 starts with a row, worker 1 with a message.
func (e *env) writeMixed(worker, txs, perTx int) error {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, e.url)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	for range txs {
		err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			var n int
			if err := tx.QueryRow(ctx, "UPDATE mix_seq SET n = n + 1 RETURNING n - 1").Scan(&n); err != nil {
				return err
			}
			for j := range perTx {
				seq := n*perTx + j
				if (seq+worker)%2 == 0 {
					_, err = tx.Exec(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
						VALUES ('order', 'shared', 'Mixed', json_build_object('key', 'shared', 'seq', $1::int, 'worker', $2::int, 'via', 'row'))`, seq, worker)
				} else {
					_, err = tx.Exec(ctx, `SELECT cdc_relay.emit($1, 'shared', json_build_object('key', 'shared', 'seq', $2::int, 'worker', $3::int, 'via', 'message')::jsonb)`,
						e.topic("order"), seq, worker)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("worker %d: %w", worker, err)
		}
	}
	return nil
}

// mixedPayload is a value writeMixed wrote.
type mixedPayload struct {
	Seq    int    `json:"seq"`
	Worker int    `json:"worker"`
	Via    string `json:"via"`
}

// wantVia is how writeMixed wrote the event: a row or a message.
func (m mixedPayload) wantVia() string {
	if (m.Seq+m.Worker)%2 == 0 {
		return "row"
	}
	return "message"
}

// origin tells a row's record from a message's by its id: an outbox row's
// is its uuid, a message's (which gives none) its WAL position.
func origin(id string) string {
	if _, err := pglogrepl.ParseLSN(id); err == nil {
		return "message"
	}
	if len(id) == 36 && strings.Count(id, "-") == 4 {
		return "row"
	}
	return "neither"
}

func decodeMixed(t *testing.T, r *kgo.Record) mixedPayload {
	t.Helper()
	var m mixedPayload
	if err := json.Unmarshal(r.Value, &m); err != nil {
		t.Fatalf("record value %q: %v", r.Value, err)
	}
	return m
}

// TestMessagesOnlyNoTable: a config file with messages: and no tables:
// `migrate --config` creates the relay's tables, the publication and
// cdc_relay.emit, and no outbox table; `run --config` relays the messages
// of both sources: envelopes of the first prefix, and payload-only
// contents of the second, on its topic, keyed by a member of the content;
// check-config accepts the file.
func TestMessagesOnlyNoTable(t *testing.T) {
	parallel(t)
	needMessages(t)
	e := newEnvUnprepared(t)
	plain := e.prefix + ".plain"
	path := filepath.Join(t.TempDir(), "relay.yaml")
	file := fmt.Sprintf(`messages:
  - prefix: outbox
  - prefix: plain
    payload_only: true
    topic: %s
    key_field: order_id
`, plain)
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	e.prepare("--config", path)
	var outbox *string
	if err := e.conn.QueryRow(context.Background(), "SELECT to_regclass('outbox')::text").Scan(&outbox); err != nil {
		t.Fatal(err)
	}
	if outbox != nil {
		t.Fatalf("migrate --config with messages only created the table %s", *outbox)
	}
	began := time.Now()
	p := e.startRelayArgs(relayBin, e.configArgs(path)...)
	topic := e.prefix + ".msg"
	lsn := emit(t, e.conn, topic, "k1", `{"n": 1}`, nil, nil)
	content := `{"order_id": 17, "status": "paid"}`
	plainLSN := emitRaw(t, e.conn, true, "plain", content)
	checkMessages(t, e.readTopics(map[string]int{topic: 1, plain: 1}), []wantMessage{
		{topic: topic, key: ptr("k1"), id: lsn, value: ptr(e.jsonbText(`{"n": 1}`))},
		{topic: plain, key: ptr("17"), id: plainLSN, value: ptr(content)},
	}, began)
	out, err := exec.Command(relayBin, "check-config", "--config", path, "--postgres-url", e.url, "--slot", e.slot).CombinedOutput()
	if err != nil {
		t.Errorf("check-config of the file it runs with: %v\n%s", err, out)
	}
	p.stop(30 * time.Second)
}

// TestMessagesNeedPostgres14: on PostgreSQL 13, whose pgoutput has no
// messages option, `run --message-prefix outbox` stops at once with an
// error that names 14 and what to do, before it streams. It
// skips on 14 and later; `make test-pg PG=13` runs it.
func TestMessagesNeedPostgres14(t *testing.T) {
	parallel(t)
	if v := clusterVersion(t); v >= 140000 {
		t.Skipf("PostgreSQL %d relays messages; this test needs 13 (CDC_RELAY_TEST_PG=13)", v/10000)
	}
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, relayBin, e.relayArgs(messageArgs...)...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("run --message-prefix on PostgreSQL 13 did not stop within 60s:\n%s", out)
	}
	if err == nil {
		t.Fatalf("run --message-prefix on PostgreSQL 13 exited 0:\n%s", out)
	}
	for _, want := range []string{"14", "upgrade", "--message-prefix"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the error does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "replication started") {
		t.Errorf("the relay streamed before it refused:\n%s", out)
	}
	t.Logf("refused: %s", lineWith(string(out), "14"))
}
