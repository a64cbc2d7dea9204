package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/replication"
)

// messagesMapping maps the outbox table of TestStreamMessagesBesideRows.
var messagesMapping = decoder.Mapping{Schema: "public", Table: "ob", IDColumn: "id", TopicColumn: "topic", KeyColumn: "k", PayloadColumn: "body"}

// TestStreamMessagesBesideRows: a session's stream from a real
// PostgreSQL, with a table and a message source, produces the rows and
// the messages of committed transactions in commit order, each message
// with its topic, key, id (its WAL position when the envelope has none)
// and headers; nothing of a rolled-back transaction or savepoint, of a
// non-transactional message, or of another prefix; and parks a message
// that is not an envelope DEAD.
func TestStreamMessagesBesideRows(t *testing.T) {
	t.Parallel()
	ctx, db, admin := sharedPG.ConnectDB(t, 2*time.Minute,
		"CREATE TABLE ob (id bigint PRIMARY KEY, topic text NOT NULL, k text, body text)", "CREATE PUBLICATION p FOR TABLE ob")
	var version int
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 140000 {
		t.Skip("pgoutput sends messages from PostgreSQL 14 on")
	}
	conn, err := replication.Connect(ctx, db.URL(), "test", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	slot, err := conn.CreateSlot(ctx, db.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`BEGIN; INSERT INTO ob VALUES (1, 'orders', 'o-1', 'row 1');
		 SELECT pg_logical_emit_message(true, 'outbox', '{"topic": "orders", "key": "o-1", "id": "m-1", "headers": {"type": "created"}, "payload": {"a": 1}}');
		 INSERT INTO ob VALUES (2, 'orders', 'o-1', 'row 2'); COMMIT`,
		`BEGIN; SELECT pg_logical_emit_message(true, 'outbox', '{"topic": "orders", "key": "o-1", "id": "rolled back", "payload": null}'); ROLLBACK`,
		`BEGIN; SAVEPOINT s; SELECT pg_logical_emit_message(true, 'outbox', '{"topic": "orders", "key": "o-1", "id": "savepoint", "payload": null}');
		 ROLLBACK TO s; SELECT pg_logical_emit_message(true, 'outbox', '{"topic": "audit", "key": 7, "payload": "text"}'); COMMIT`,
		`BEGIN; SELECT pg_logical_emit_message(false, 'outbox', '{"topic": "orders", "id": "not transactional", "payload": null}'); ROLLBACK`,
		`BEGIN; SELECT pg_logical_emit_message(true, 'other', '{"topic": "orders", "id": "other prefix", "payload": null}');
		 SELECT pg_logical_emit_message(true, 'outbox', 'not json'); INSERT INTO ob VALUES (3, 'orders', 'o-2', 'row 3'); COMMIT`,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var auditLSN pglogrepl.LSN // the WAL position of the message without an id
	if err := admin.QueryRow(ctx, `SELECT lsn FROM pg_logical_slot_peek_binary_changes($1, NULL, NULL,
		'proto_version', '1', 'publication_names', 'p', 'messages', 'true') WHERE position('audit' in encode(data, 'escape')) > 0`, db.Name).Scan(&auditLSN); err != nil {
		t.Fatal(err)
	}

	store := &fakeStore{}
	tp := newTestPipeline(t, store)
	tp.dec, err = decoder.NewSources([]decoder.Mapping{messagesMapping}, []decoder.MessageMapping{{Prefix: "outbox"}})
	if err != nil {
		t.Fatal(err)
	}
	got := streamRecords(t, ctx, conn, tp, replication.Options{Slot: db.Name, Publication: "p", Messages: true, Start: slot.ConsistentPoint}, 5)
	want := []string{
		"orders o-1 row 1 [id=1]",
		`orders o-1 {"a": 1} [id=m-1 type=created]`,
		"orders o-1 row 2 [id=2]",
		"audit 7 text [id=" + auditLSN.String() + "]",
		"orders o-2 row 3 [id=3]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("produced:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if parked := store.ids(); len(parked) != 1 || !strings.HasPrefix(parked[0], "DEAD ") || !strings.Contains(parked[0], `messages "outbox"`) {
		t.Errorf("parked %q, want the message that is not an envelope DEAD", parked)
	}
}

// streamRecords streams opts into tp until n records are produced (or
// 20s passed), acks them, stops, and returns each as "topic key value
// [headers]", in produce order.
func streamRecords(t *testing.T, ctx context.Context, conn *replication.Conn, tp *testPipeline, opts replication.Options, n int) []string {
	t.Helper()
	opts.Tracker = tp.Tracker
	opts.StatusInterval, opts.StopTimeout, opts.Timeout = 200*time.Millisecond, 5*time.Second, 10*time.Second
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- conn.Stream(sctx, opts, tp.Handle) }()
	var recs []*kgo.Record
	for deadline := time.Now().Add(20 * time.Second); len(recs) < n && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		tp.prod.mu.Lock()
		recs = append([]*kgo.Record(nil), tp.prod.pending...)
		tp.prod.mu.Unlock()
	}
	tp.prod.answer(nil)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		hs := make([]string, len(r.Headers))
		for j, h := range r.Headers {
			hs[j] = h.Key + "=" + string(h.Value)
		}
		out[i] = fmt.Sprintf("%s %s %s %v", r.Topic, r.Key, r.Value, hs)
	}
	return out
}

// TestPipelineMessageEventsBesideWriteBack: events of a message source
// (indexes past the tables) are never told to write-back, whose tables
// they are not, and are confirmed once acked; those of the table that
// writes back wait for their rows, as before.
func TestPipelineMessageEventsBesideWriteBack(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	out := &fakeOutcomes{hold: true}
	tp.Outcomes, tp.WriteBack, tp.TableNames = out, []bool{true}, []string{"public.ob", "message:outbox"}
	apply := func(end uint64, tables ...int) {
		msgs := []decoder.Message{{Kind: decoder.KindBegin}}
		for i, table := range tables {
			id := fmt.Sprintf("%d-%d", end, i)
			msgs = append(msgs, decoder.Message{Kind: decoder.KindEvent, Event: decoder.Event{Table: table,
				ID: []byte(id), Topic: "orders", Value: []byte(`{}`), CommitLSN: end - 8, Headers: []decoder.Header{{Key: "id", Value: []byte(id)}}}})
		}
		msgs = append(msgs, decoder.Message{Kind: decoder.KindCommit, EndLSN: end})
		for _, m := range msgs {
			if err := tp.apply(0, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(0x200, 1, 1)
	apply(0x300, 0, 1)
	tp.prod.answer(nil)
	if got := tp.Tracker.Safe(); got != 0x200 {
		t.Fatalf("safe %s once acked, want 0/200: the messages' transaction confirmed, the row's waiting for write-back", got)
	}
	out.mu.Lock()
	told := fmt.Sprint(out.delivered)
	out.mu.Unlock()
	if told != "[768-0]" {
		t.Errorf("write-back told of %s, want only the row's event", told)
	}
	out.written()
	if got := tp.Tracker.Safe(); got != 0x300 {
		t.Fatalf("safe %s once the row was written, want 0/300", got)
	}
}

// TestPipelineCountsUnmappedMessages: the transactional messages of a
// prefix no source maps are counted by prefix and warned of at once, one
// line for a burst, while the transaction's events go on and its position
// is confirmed.
func TestPipelineCountsUnmappedMessages(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	msgs := []decoder.Message{{Kind: decoder.KindBegin}}
	for range 3 {
		msgs = append(msgs, decoder.Message{Kind: decoder.KindUnmappedMessage, Prefix: "renamed"})
	}
	msgs = append(msgs, decoder.Message{Kind: decoder.KindEvent, Event: decoder.Event{ID: []byte("a"), Topic: "orders", Value: []byte(`{}`),
		CommitLSN: 0x1f8, Headers: []decoder.Header{{Key: "id", Value: []byte("a")}}}},
		decoder.Message{Kind: decoder.KindCommit, EndLSN: 0x200})
	for _, m := range msgs {
		if err := tp.apply(0x1f0, m); err != nil {
			t.Fatal(err)
		}
	}
	tp.prod.answer(nil)
	if got := tp.Tracker.Safe(); got != 0x200 {
		t.Fatalf("safe %s, want 0/200", got)
	}
	var m dto.Metric
	if err := tp.Metrics.MessagesIgnored.WithLabelValues("renamed").Write(&m); err != nil || m.GetCounter().GetValue() != 3 {
		t.Errorf("ignored %v (%v), want 3", m.GetCounter().GetValue(), err)
	}
	if tp.logs.count("level=WARN") != 1 || tp.logs.count("prefix=renamed") != 1 || tp.logs.count("no messages: entry maps") != 1 {
		t.Errorf("want one warning naming the prefix:\n%s", tp.logs)
	}
	if got := tp.Count.Read.Load(); got != 1 {
		t.Errorf("read %d events, want 1", got)
	}
}

// TestPipelineBoundsUnmappedPrefixes: any role may write messages, so the
// prefixes of unmapped ones are bounded: the first 64 by name, every later
// one counted as other, a warning each for the first 64 and one for all
// the others; the sum of the series is every message.
func TestPipelineBoundsUnmappedPrefixes(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	const prefixes = 1000
	msgs := []decoder.Message{{Kind: decoder.KindBegin}}
	for i := range prefixes {
		msgs = append(msgs, decoder.Message{Kind: decoder.KindUnmappedMessage, Prefix: fmt.Sprint("p", i)})
	}
	msgs = append(msgs, decoder.Message{Kind: decoder.KindCommit, EndLSN: 0x200})
	for _, m := range msgs {
		if err := tp.apply(0x1f0, m); err != nil {
			t.Fatal(err)
		}
	}
	families, err := tp.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series, sum := 0, 0.0
	for _, f := range families {
		if f.GetName() == "cdc_relay_messages_ignored_total" {
			for _, m := range f.GetMetric() {
				series++
				sum += m.GetCounter().GetValue()
			}
		}
	}
	if series != metrics.MaxLabelValues+1 || sum != prefixes {
		t.Errorf("%d series counting %v messages, want %d counting %d", series, sum, metrics.MaxLabelValues+1, prefixes)
	}
	var other dto.Metric
	if err := tp.Metrics.MessagesIgnored.WithLabelValues(metrics.OtherLabel).Write(&other); err != nil || other.GetCounter().GetValue() != prefixes-metrics.MaxLabelValues {
		t.Errorf("other counts %v (%v), want %d", other.GetCounter().GetValue(), err, prefixes-metrics.MaxLabelValues)
	}
	if n := tp.logs.count("level=WARN"); n != metrics.MaxLabelValues+1 || tp.logs.count("prefix=other example_prefix=p64") != 1 {
		t.Errorf("%d warnings, want %d, the last for other naming p64:\n%s", n, metrics.MaxLabelValues+1, tp.logs)
	}
}

// TestPipelineCountsNonTransactionalMessages: a non-transactional message
// of a mapped prefix is no event, but counted by prefix and warned of,
// one line for a burst.
func TestPipelineCountsNonTransactionalMessages(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	for range 3 {
		if err := tp.apply(0x1f0, decoder.Message{Kind: decoder.KindNonTransactionalMessage, Prefix: "outbox"}); err != nil {
			t.Fatal(err)
		}
	}
	var m dto.Metric
	if err := tp.Metrics.MessagesNonTransactional.WithLabelValues("outbox").Write(&m); err != nil || m.GetCounter().GetValue() != 3 {
		t.Errorf("counted %v (%v), want 3", m.GetCounter().GetValue(), err)
	}
	if tp.logs.count("level=WARN") != 1 || tp.logs.count("non-transactional message of a mapped prefix") != 1 || tp.logs.count("prefix=outbox") != 1 {
		t.Errorf("want one warning naming the prefix:\n%s", tp.logs)
	}
	if got := tp.Count.Read.Load(); got != 0 {
		t.Errorf("read %d events, want 0", got)
	}
}
