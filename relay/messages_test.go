package relay

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/recovery"
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
	go func() { done <- conn.Stream(sctx, opts, tp.handle) }()
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

// TestConfigWithMessages: the sources are named tables first, then
// message:<prefix>; a prefix must be set and given once, and a relay
// needs a table or a message source, and a table to recover a gap; with
// no table the start-up check has no outbox table.
func TestConfigWithMessages(t *testing.T) {
	table := outbox.Table{Mapping: messagesMapping}
	for _, tc := range []struct {
		name    string
		cfg     Config
		names   string
		invalid string
	}{
		{name: "tables and messages", cfg: Config{Tables: []outbox.Table{table}, Messages: []decoder.MessageMapping{{Prefix: "outbox"}, {Prefix: "audit"}}},
			names: "public.ob, message:outbox, message:audit"},
		{name: "messages only", cfg: Config{Messages: []decoder.MessageMapping{{Prefix: "outbox"}}}, names: "message:outbox"},
		{name: "nothing", cfg: Config{}, invalid: "nothing to relay"},
		{name: "no prefix", cfg: Config{Messages: []decoder.MessageMapping{{}}}, invalid: "prefix is not set"},
		{name: "a prefix twice", cfg: Config{Tables: []outbox.Table{table}, Messages: []decoder.MessageMapping{{Prefix: "outbox"}, {Prefix: "outbox"}}},
			invalid: `messages "outbox": the prefix is given twice`},
		{name: "messages only, recover", cfg: Config{Messages: []decoder.MessageMapping{{Prefix: "outbox"}}, OnSlotLoss: SlotLossRecover},
			invalid: "--on-slot-loss recover cannot repair a relay of messages only"},
		{name: "messages only, refuse", cfg: Config{Messages: []decoder.MessageMapping{{Prefix: "outbox"}}, OnSlotLoss: SlotLossRefuse}, names: "message:outbox"},
		{name: "a table and messages, recover", cfg: Config{Tables: []outbox.Table{table}, Messages: []decoder.MessageMapping{{Prefix: "outbox"}}, OnSlotLoss: SlotLossRecover},
			names: "public.ob, message:outbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.invalid == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.invalid != "" && (err == nil || !strings.Contains(err.Error(), tc.invalid)):
				t.Fatalf("Validate: %v, want %q", err, tc.invalid)
			case tc.invalid != "":
				return
			}
			if got := strings.Join(tc.cfg.SourceNames(), ", "); got != tc.names {
				t.Errorf("sources %q, want %q", got, tc.names)
			}
			checked := tc.cfg.checkedMigrations()
			if len(checked) != max(len(tc.cfg.Tables), 1) {
				t.Fatalf("%d start-up checks, want one per table, or one", len(checked))
			}
			if len(tc.cfg.Tables) == 0 && (checked[0].OutboxTable != "" || checked[0].OutboxSchema != "") {
				t.Errorf("a relay of messages only checks outbox %s.%s, want none", checked[0].OutboxSchema, checked[0].OutboxTable)
			}
		})
	}
}

// TestSourceTopicCheck: a parked event's topic (the poller's, a corrected
// one's) is checked by the allowed topics of the source that wrote it,
// and an event of a source no longer configured by those of every source.
func TestSourceTopicCheck(t *testing.T) {
	orders := decoder.DefaultMapping()
	orders.AllowedTopics = `orders\..*`
	tablesAndAudit := Config{Tables: []outbox.Table{{Mapping: orders}},
		Messages: []decoder.MessageMapping{{Prefix: "audit", AllowedTopics: `audit\..*`}}}
	twoPrefixes := Config{Messages: []decoder.MessageMapping{{Prefix: "a", AllowedTopics: `a\..*`}, {Prefix: "b", AllowedTopics: `b\..*|shared`}}}
	tests := []struct {
		name          string
		cfg           Config
		source, topic string
		allowed       bool
	}{
		{"a table's topic", tablesAndAudit, "public.outbox", "orders.created", true},
		{"a table's topic its table refuses", tablesAndAudit, "public.outbox", "audit.login", false},
		{"a message source's topic", tablesAndAudit, "message:audit", "audit.login", true},
		{"a message source's topic it refuses", tablesAndAudit, "message:audit", "orders.created", false},
		{"the second message source", twoPrefixes, "message:b", "b.events", true},
		{"the first message source", twoPrefixes, "message:a", "a.events", true},
		{"one source's topic for another", twoPrefixes, "message:a", "b.events", false},
		{"a removed source: a topic one source refuses", twoPrefixes, "public.gone", "b.events", false},
		{"a removed source: no recorded source", twoPrefixes, "", "a.events", false},
		{"not a Kafka topic", twoPrefixes, "message:b", "b.bad topic", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check, err := tt.cfg.SourceTopicCheck()
			if err != nil {
				t.Fatal(err)
			}
			if err := check(tt.source, tt.topic); (err == nil) != tt.allowed {
				t.Errorf("check(%q, %q) = %v, want allowed %v", tt.source, tt.topic, err, tt.allowed)
			}
		})
	}
	every := Config{Messages: []decoder.MessageMapping{{Prefix: "a", AllowedTopics: `a\..*|shared`}, {Prefix: "b", AllowedTopics: `b\..*|shared`}}}
	check, err := every.SourceTopicCheck()
	if err != nil {
		t.Fatal(err)
	}
	if err := check("public.gone", "shared"); err != nil {
		t.Errorf("a removed source's event to a topic every source allows: %v", err)
	}
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

// TestSlotLossRecoverWarnsOfMessages: with message sources, --on-slot-loss
// recover is warned about once at start (it cannot publish messages
// again); without messages, or without recover, nothing is said.
func TestSlotLossRecoverWarnsOfMessages(t *testing.T) {
	for _, tc := range []struct {
		name     string
		messages []decoder.MessageMapping
		loss     SlotLoss
		warned   bool
	}{
		{"messages and recover", []decoder.MessageMapping{{Prefix: "outbox"}}, SlotLossRecover, true},
		{"messages, refuse", []decoder.MessageMapping{{Prefix: "outbox"}}, SlotLossRefuse, false},
		{"no messages, recover", nil, SlotLossRecover, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logBuffer{}
			r := &Relay{cfg: Config{Tables: []outbox.Table{{Mapping: messagesMapping}}, Messages: tc.messages, OnSlotLoss: tc.loss},
				log: slog.New(slog.NewTextHandler(logs, nil))}
			r.warnMessagesNotRecovered()
			if got := logs.count("level=WARN") == 1 && logs.count("message:outbox") == 1 && logs.count("failover slot") == 1; got != tc.warned {
				t.Errorf("warned %v, want %v:\n%s", got, tc.warned, logs)
			}
		})
	}
}

// TestRepairedGapWarnsOfLostMessages: once a gap is repaired, a relay with
// message sources warns that the messages committed in the gap are lost,
// naming the gap; without messages it says nothing more.
func TestRepairedGapWarnsOfLostMessages(t *testing.T) {
	saved := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		messages []decoder.MessageMapping
		gap      SlotGapError
		resume   pglogrepl.LSN
		want     []string
	}{
		{"slot ahead", []decoder.MessageMapping{{Prefix: "outbox"}}, SlotGapError{Checkpoint: checkpoint.Checkpoint{LSN: 0x100, CommitTime: saved}, SlotLSN: 0x900}, 0x900,
			[]string{"level=WARN", "are lost", "message:outbox", "gap_from=0/100", "gap_to=0/900", "committed_since=2026-01-02T03:04:05"}},
		{"slot dropped", []decoder.MessageMapping{{Prefix: "outbox"}}, SlotGapError{Checkpoint: checkpoint.Checkpoint{LSN: 0x100, UpdatedAt: saved}, Dropped: true}, 0xA00,
			[]string{"gap_from=0/100", "gap_to=0/A00", "the time the checkpoint was saved"}},
		{"no messages", nil, SlotGapError{Checkpoint: checkpoint.Checkpoint{LSN: 0x100}, SlotLSN: 0x900}, 0x900, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logBuffer{}
			cfg := Config{Tables: []outbox.Table{{Mapping: messagesMapping}}, Messages: tc.messages}
			warnMessagesLost(slog.New(slog.NewTextHandler(logs, nil)), cfg, recovery.Result{Gap: tc.gap, Resume: tc.resume})
			if tc.want == nil && logs.String() != "" {
				t.Errorf("logged without messages:\n%s", logs)
			}
			for _, w := range tc.want {
				if logs.count(w) != 1 {
					t.Errorf("no %q once in:\n%s", w, logs)
				}
			}
		})
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
