package status

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// This file is the rows the publisher guard (guard_test.go) parks for two
// publishers, and how it reads and checks them.

// partner is the guard's webhook publisher, beside Kafka.
const partner = "partner"

// guardSlot is the slot of the guard's pauses.
const guardSlot = "guard"

// teamPaused is the topic the guard's team pauses in a table of its own
// (PausedBy), for each publisher.
const teamPaused = "team-paused"

// guardStore is a store of publisher on db with the guard's options (its
// outbox table, pauses, a team's pause), then opts.
func guardStore(db DB, publisher string, opts ...Option) *Store {
	base := []Option{SourceTables("public.outbox"), Pauses("public", migrations.PauseTable, guardSlot),
		PausedBy("SELECT '" + teamPaused + "'::text"), Publisher(publisher)}
	return NewStore(db, "public", "outbox_delivery", append(base, opts...)...)
}

// guardEvents are the events the guard parks for each publisher, the same
// for both (commit, id, topic, source, key), in every state: parked as
// state, then changed by then (a SET of the row's own columns), if set.
var guardEvents = []struct{ id, topic, key, state, then string }{
	{id: "due", topic: "orders", key: "k1", state: Failed},
	{id: "behind-due", topic: "orders", key: "k1", state: Waiting},
	{id: "later", topic: "orders", key: "k2", state: Failed, then: "next_attempt_at = now() + interval '1 hour'"},
	{id: "behind-later", topic: "orders", key: "k2", state: Waiting},
	{id: "dead", topic: "orders", key: "k3", state: Dead},
	{id: "behind-dead", topic: "orders", key: "k3", state: Waiting},
	{id: "skipped", topic: "orders", key: "k4", state: Dead, then: "skipped_at = now(), updated_at = now() - interval '1 hour'"},
	{id: "paused", topic: "paused-topic", key: "k6", state: Paused},
	{id: "delivered", topic: "orders", key: "k7", state: Failed, then: "status = 'DELIVERED', delivered_at = now(), attempts = 1"},
	{id: "nokey", topic: "orders", state: Failed},
	{id: "corrected", topic: "wrong", key: "k9", state: Failed, then: "original_topic = topic, topic = 'orders'"},
	{id: "behind-corrected", topic: "orders", key: "k9", state: Waiting},
	{id: "team", topic: teamPaused, key: "k11", state: Failed},
	{id: "sup", topic: "orders", key: "k12", state: Failed},
	{topic: "orders", key: "k13", state: Failed}, // no event id
}

// guardEvent is guardEvents[i] as the stream decodes it.
func guardEvent(i int) *decoder.Event {
	e := guardEvents[i]
	ev := &decoder.Event{Topic: e.topic, Value: []byte(`{"v": 1}`), CommitLSN: uint64(0x1000 + 0x10*i),
		Headers: []decoder.Header{{Key: "h", Value: []byte(e.id)}}}
	if e.id != "" {
		ev.ID = []byte(e.id)
	}
	if e.key != "" {
		ev.Key = []byte(e.key)
	}
	return ev
}

// park parks ev with s as state would be parked.
func park(ctx context.Context, s *Store, ev *decoder.Event, state string) error {
	switch state {
	case Dead:
		return s.Dead(ctx, ev, errors.New("poison"))
	case Waiting:
		return s.Waiting(ctx, ev, errors.New("waits"))
	case Paused:
		return s.Paused(ctx, ev)
	}
	return s.Failed(ctx, ev, errors.New("refused"))
}

// guardRows are the rows parked by SQL for each publisher (its name is
// $1): reload rows (a reset of a row whose event was never parked, with
// no topic yet; an adopted row with its key) and an event of adopt_src
// held, Kafka's one and the partner's another.
var guardRows = []string{
	"INSERT INTO outbox_delivery (event_id, source_table, topic, status, reload, last_error, publisher) VALUES ('r-reset', 'public.outbox', '', 'FAILED', true, 'reset', $1)",
	"INSERT INTO outbox_delivery (event_id, source_table, topic, record_key, status, reload, last_error, publisher) VALUES ('r-adopted', 'public.outbox', 'orders', 'k14', 'FAILED', true, 'adopted', $1)",
	"INSERT INTO outbox_delivery (event_id, source_table, topic, status, last_error, publisher) VALUES (CASE $1 WHEN 'kafka' THEN '1' ELSE '2' END, 'public.adopt_src', 'adopted', 'FAILED', 'x', $1)",
}

// parkGuardRows parks, for Kafka and the partner in turn (so that their
// ids interleave), guardEvents, guardRows, and what only one publisher
// has (parkOwnRows). The
// partner's also has a reload row of event "sup" after its parked one, as
// a reset during a claim adds. It creates adopt_src, a table whose rows
// 1 to 3 Adopt may adopt.
func parkGuardRows(ctx context.Context, t *testing.T, conn *pgx.Conn) {
	t.Helper()
	stores := map[string]*Store{KafkaPublisher: guardStore(conn, KafkaPublisher), partner: guardStore(conn, partner)}
	publishers := []string{KafkaPublisher, partner}
	for i, e := range guardEvents {
		for _, p := range publishers {
			if err := park(ctx, stores[p], guardEvent(i), e.state); err != nil {
				t.Fatal(err)
			}
			if e.then == "" {
				continue
			}
			if _, err := conn.Exec(ctx, "UPDATE outbox_delivery SET "+e.then+" WHERE event_id = $1 AND publisher = $2", e.id, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, p := range publishers {
		for _, sql := range guardRows {
			if _, err := conn.Exec(ctx, sql, p); err != nil {
				t.Fatal(err)
			}
		}
		parkOwnRows(ctx, t, conn, stores[p], p)
	}
	for _, p := range publishers {
		parkBehindTheOthers(ctx, t, stores[p], p)
	}
	for _, sql := range []string{
		"INSERT INTO outbox_delivery (event_id, source_table, topic, status, reload, last_error, publisher) VALUES ('sup', 'public.outbox', '', 'FAILED', true, 'reset', 'partner')",
		"CREATE TABLE adopt_src (id bigint PRIMARY KEY)",
		"INSERT INTO adopt_src SELECT generate_series(1, 3)",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
}

// ownEvent is an event of commit 0/9000 of the given id, topic and key.
func ownEvent(id, topic, key string) *decoder.Event {
	return &decoder.Event{ID: []byte(id), Topic: topic, Key: []byte(key), Value: []byte(`{}`), CommitLSN: 0x9000}
}

// parkOwnRows parks with s, publisher's store, what only publisher has: a
// held key of its own, due later (Kafka's in 10 minutes, the partner's in
// 20); the event "dead" in a topic of its own; a key held back by a DEAD
// row and one by a FAILED row not due (in which the other publisher parks
// rows due later: parkBehindTheOthers); a topic paused of its own, beside
// the topic paused for both.
func parkOwnRows(ctx context.Context, t *testing.T, conn *pgx.Conn, s *Store, publisher string) {
	t.Helper()
	second := guardEvent(4) // "dead", in a topic of its own
	second.Topic = "second-" + publisher
	err := errors.Join(park(ctx, s, ownEvent("only-"+publisher, "orders", "only-"+publisher), Failed), park(ctx, s, second, Dead),
		park(ctx, s, ownEvent("holds-dead", "orders", "held-by-"+publisher+"-dead"), Dead),
		park(ctx, s, ownEvent("holds-later", "orders", "held-by-"+publisher+"-later"), Failed),
		pause(ctx, s, "paused-topic"), pause(ctx, s, "only-"+publisher+"-topic"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() + CASE WHEN $1 = 'kafka' AND event_id <> 'holds-later' THEN interval '10 minutes'"+
		" ELSE interval '20 minutes' END WHERE event_id IN ('only-' || $1, 'holds-later') AND publisher = $1", publisher); err != nil {
		t.Fatal(err)
	}
}

// parkBehindTheOthers parks with s, publisher's store, a row due in each
// key the other publisher holds back (parkOwnRows), after the row that
// holds it back, and one in the topic only the other paused.
func parkBehindTheOthers(ctx context.Context, t *testing.T, s *Store, publisher string) {
	t.Helper()
	other := partner
	if publisher == partner {
		other = KafkaPublisher
	}
	err := errors.Join(park(ctx, s, ownEvent("free-dead", "orders", "held-by-"+other+"-dead"), Failed),
		park(ctx, s, ownEvent("free-later", "orders", "held-by-"+other+"-later"), Failed),
		park(ctx, s, ownEvent("free-paused", "only-"+other+"-topic", "kp"), Failed))
	if err != nil {
		t.Fatal(err)
	}
}

// pause pauses topic with s.
func pause(ctx context.Context, s *Store, topic string) error {
	_, err := s.PauseTopic(ctx, topic)
	return err
}

// guardIDs returns the ids of publisher's rows by event id ("noid" for
// the row without one), the lowest of an event's.
func guardIDs(ctx context.Context, t *testing.T, q pgdb.Querier, publisher string) map[string]int64 {
	t.Helper()
	rows, _ := q.Query(ctx, "SELECT id, coalesce(event_id, 'noid') FROM outbox_delivery WHERE publisher = $1 ORDER BY id", publisher)
	ids := map[string]int64{}
	var (
		id    int64
		event string
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &event}, func() error {
		if _, ok := ids[event]; !ok {
			ids[event] = id
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// exactRows returns publisher's rows of the status table and the pause
// table, every column as stored, with the row versions' xmin, xmax and
// ctid: a row written, or locked (FOR UPDATE sets xmax, also when the
// locker rolls back), reads otherwise.
func exactRows(ctx context.Context, t *testing.T, q pgdb.Querier, publisher string) []string {
	t.Helper()
	rows, _ := q.Query(ctx, "SELECT format('%s %s %s %s', d.xmin, d.xmax, d.ctid, row_to_json(d)) FROM outbox_delivery AS d WHERE d.publisher = $1"+
		" UNION ALL SELECT format('%s %s %s %s', p.xmin, p.xmax, p.ctid, row_to_json(p)) FROM cdc_relay_paused_topics AS p WHERE p.publisher = $1 ORDER BY 1", publisher)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stateOfRows returns publisher's rows of the status table and pauses as
// they compare between the guard's two runs of an operation: in id
// order, without the id (the id sequence moves on in the run rolled
// back), and with each time as whether it is set and past (by the clock:
// now() is the transaction's in the run rolled back).
func stateOfRows(ctx context.Context, t *testing.T, q pgdb.Querier, publisher string) []string {
	t.Helper()
	rows, _ := q.Query(ctx, "SELECT x.line FROM (SELECT 0 AS kind, d.id, concat_ws(' | ', d.event_id, d.source_table, d.topic, encode(d.record_key, 'escape'),"+
		" encode(d.record_value, 'escape'), d.headers, d.record_timestamp IS NOT NULL, d.status, d.attempts, d.last_error, d.next_attempt_at <= clock_timestamp(),"+
		" d.commit_lsn, d.delivered_at IS NOT NULL, d.reload, d.skipped_at IS NOT NULL, d.original_topic, d.publisher) AS line FROM outbox_delivery AS d WHERE d.publisher = $1"+
		" UNION ALL SELECT 1, 0, 'pause ' || p.slot_name || ' ' || p.topic FROM cdc_relay_paused_topics AS p WHERE p.publisher = $1) AS x ORDER BY x.kind, x.id, x.line", publisher)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// guardDB is a database of the guard's own, its rows parked.
func guardDB(t *testing.T) (context.Context, *pgx.Conn) {
	t.Helper()
	ctx, _, conn := pg.ConnectDB(t, 2*time.Minute)
	parkGuardRows(ctx, t, conn)
	return ctx, conn
}

// recorder is a DB that records the statements run through it (and the
// transactions it begins): the guard checks that each one reads and
// writes the publisher's rows only (unscoped).
type recorder struct {
	DB
	sql *[]string
}

func (r recorder) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	*r.sql = append(*r.sql, sql)
	return r.DB.Exec(ctx, sql, args...)
}

func (r recorder) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	*r.sql = append(*r.sql, sql)
	return r.DB.Query(ctx, sql, args...)
}

func (r recorder) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	*r.sql = append(*r.sql, sql)
	return r.DB.QueryRow(ctx, sql, args...)
}

func (r recorder) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := r.DB.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return recordedTx{Tx: tx, sql: r.sql}, nil
}

// recordedTx is a transaction a recorder began.
type recordedTx struct {
	pgx.Tx
	sql *[]string
}

func (r recordedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	*r.sql = append(*r.sql, sql)
	return r.Tx.Exec(ctx, sql, args...)
}

func (r recordedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	*r.sql = append(*r.sql, sql)
	return r.Tx.Query(ctx, sql, args...)
}

func (r recordedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	*r.sql = append(*r.sql, sql)
	return r.Tx.QueryRow(ctx, sql, args...)
}

func (r recordedTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	for _, q := range b.QueuedQueries {
		*r.sql = append(*r.sql, q.SQL)
	}
	return r.Tx.SendBatch(ctx, b)
}

func (r recordedTx) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := r.Tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return recordedTx{Tx: tx, sql: r.sql}, nil
}

// guardTables are the tables whose every statement is scoped, as the
// store names them.
var guardTables = []string{`"public"."outbox_delivery"`, `"public"."cdc_relay_paused_topics"`}

// aliasOf reads the alias a table is named by: " AS x".
var aliasOf = regexp.MustCompile(`^ AS (\w+)`)

// unscoped returns what of sql reads or writes the status table or the
// pause table without publisher's condition: an INSERT whose columns lack
// the publisher, a table named without an alias, or an alias named more
// often than its condition (alias.publisher = 'name') is written.
func unscoped(sql, publisher string) []string {
	var bad []string
	named := map[string]int{}
	for _, table := range guardTables {
		for rest := sql; ; {
			i := strings.Index(rest, table)
			if i < 0 {
				break
			}
			before, after := rest[:i], rest[i+len(table):]
			rest = after
			if strings.HasSuffix(strings.TrimSpace(before), "INSERT INTO") {
				if cols, _, _ := strings.Cut(after, ")"); !strings.Contains(cols, "publisher") {
					bad = append(bad, "INSERT INTO "+table+" without the publisher")
				}
				continue
			}
			m := aliasOf.FindStringSubmatch(after)
			if m == nil {
				bad = append(bad, table+" without an alias")
				continue
			}
			named[m[1]]++
		}
	}
	for alias, n := range named {
		cond := regexp.MustCompile(`\b` + regexp.QuoteMeta(alias+".publisher = "+pgdb.QuoteLiteral(publisher)))
		if c := len(cond.FindAllStringIndex(sql, -1)); c < n {
			bad = append(bad, fmt.Sprintf("%s named %d times, scoped %d", alias, n, c))
		}
	}
	return bad
}
