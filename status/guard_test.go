package status

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// The publisher guard: every operation of a store that touches rows, run
// by one publisher's store beside another publisher's rows of the same
// topics, keys, event ids and commits, in every state (guardfixture_test.go
// parks them), leaves the other's rows as they were, and does what it
// does without them. A new operation is one line of guardOps.

// guardRun is what an operation of guardOps runs with: the acting
// publisher's store (with the operation's options) on the run's
// database q, the ids of its rows (mine) and of the other publisher's
// (theirs) by event id, and the other publisher's name.
type guardRun struct {
	s            *Store
	q            pgdb.DB
	mine, theirs map[string]int64
	other        string
}

// guardOp is an operation of a store that touches rows, for the guard:
// run returns what it read or did (compared between the guard's runs) and
// its error; writes says it changes the acting publisher's rows or
// pauses, else it reads (and must read something).
type guardOp struct {
	name   string
	opts   []Option
	writes bool
	run    func(ctx context.Context, g guardRun) (any, error)
}

// guardOps are the operations the guard runs: every exported operation
// of the store that touches the status table or the pause table.
var guardOps = []guardOp{
	{name: "Failed", writes: true, run: parkEvery(Failed)},
	{name: "Dead", writes: true, run: parkEvery(Dead)},
	{name: "Waiting", writes: true, run: parkEvery(Waiting)},
	{name: "Paused", writes: true, run: parkEvery(Paused)},
	{name: "ParkHeld", writes: true, run: parkHeldAll},
	{name: "Claim delivered", writes: true, run: claimAll(func(int, Row) Outcome { return Outcome{Delivered: true} })},
	{name: "Claim failed", writes: true, run: claimAll(func(int, Row) Outcome { return Outcome{Err: errors.New("again"), RetryIn: time.Hour} })},
	{name: "Claim dead", writes: true, run: claimAll(func(int, Row) Outcome { return Outcome{Dead: true, Err: errors.New("no more")} })},
	{name: "Claim every outcome", writes: true, run: claimAll(mixedOutcome)},
	{name: "Failed, written back", opts: []Option{WriteBack(writesNothing{})}, writes: true, run: parkEvery(Failed)},
	{name: "Claim superseded by a reset", opts: []Option{WriteBack(writesNothing{})}, writes: true, run: claimAll(func(int, Row) Outcome { return Outcome{Err: errors.New("again")} })},
	{name: "Claim unordered", opts: []Option{Unordered()}, writes: true, run: claimAll(mixedOutcome)},
	{name: "Claim by topic", opts: []Option{ByTopic()}, writes: true, run: claimAll(mixedOutcome)},
	{name: "Claim by topics", opts: []Option{ByTopics("orders")}, writes: true, run: claimAll(mixedOutcome)},
	{name: "Claim bounded", opts: []Option{ClaimBytes(1)}, writes: true, run: claimAll(mixedOutcome)},
	{name: "BeginClaim aborted", run: beginClaim(false)},
	{name: "BeginClaim leaving rows out", writes: true, run: beginClaim(true)},
	{name: "NextDue", run: nextDue},
	{name: "HeldKeys", run: heldKeys},
	{name: "HeldKeys by topic", opts: []Option{ByTopic()}, run: heldKeys},
	{name: "HeldKeys by topics", opts: []Option{ByTopics("orders")}, run: heldKeys},
	{name: "StillHeld", run: stillHeld},
	{name: "StillHeld by topic", opts: []Option{ByTopic()}, run: stillHeld},
	{name: "StillHeld by topics", opts: []Option{ByTopics(teamPaused)}, run: stillHeld},
	{name: "CorrectedHeldKeys", run: correctedHeldKeys},
	{name: "CorrectedHeldKeys by topics", opts: []Option{ByTopics("orders")}, run: correctedHeldKeys},
	{name: "ReloadKeys", run: reloadKeys},
	{name: "Retry ids", writes: true, run: retry(func(g guardRun) RetryOptions { return RetryOptions{IDs: g.ids(retried...)} })},
	{name: "Retry all", writes: true, run: retry(func(guardRun) RetryOptions { return RetryOptions{All: true} })},
	{name: "Retry all DEAD", writes: true, run: retry(func(guardRun) RetryOptions { return RetryOptions{All: true, Status: Dead} })},
	{name: "Retry to a topic", writes: true, run: retry(func(g guardRun) RetryOptions { return RetryOptions{IDs: g.ids("dead")[:1], Topic: "fixed"} })},
	{name: "Retry to the other's topic", writes: true, run: retry(func(g guardRun) RetryOptions { return RetryOptions{IDs: g.ids("dead")[:1], Topic: "second-" + g.other} })},
	{name: "Retry the other's to a topic", run: retry(func(g guardRun) RetryOptions { return RetryOptions{IDs: g.ids("dead")[1:], Topic: "fixed"} })},
	{name: "Skip", writes: true, run: skip},
	{name: "Purge ids", writes: true, run: purge(func(g guardRun) PurgeOptions { return PurgeOptions{IDs: g.ids("dead", "due", "delivered")} })},
	{name: "Purge DEAD", writes: true, run: purge(func(guardRun) PurgeOptions { return PurgeOptions{Dead: true} })},
	{name: "Purge DEAD older", writes: true, run: purge(func(guardRun) PurgeOptions { return PurgeOptions{Dead: true, OlderThan: time.Minute} })},
	{name: "List", run: list(ListOptions{})},
	{name: "List FAILED", run: list(ListOptions{Status: Failed})},
	{name: "List a topic", run: list(ListOptions{Topic: "orders", Limit: 5})},
	{name: "Get", run: get},
	{name: "Adopt", writes: true, run: adopt},
	{name: "PauseTopic", writes: true, run: pauseTopics},
	{name: "ResumeTopic", writes: true, run: resumeTopics},
	{name: "PausedTopics", run: func(ctx context.Context, g guardRun) (any, error) { return g.s.PausedTopics(ctx) }},
	{name: "Heads", run: heads},
	{name: "ParkedBetween", run: parkedBetween},
}

// TestPublisherGuard runs each of guardOps on Kafka's store beside the
// partner's rows and on the partner's store beside Kafka's, each in a
// database of its own (guard).
func TestPublisherGuard(t *testing.T) {
	t.Parallel()
	for _, op := range guardOps {
		for _, dir := range [][2]string{{KafkaPublisher, partner}, {partner, KafkaPublisher}} {
			t.Run(op.name+"/"+dir[0], func(t *testing.T) {
				t.Parallel()
				guard(t, op, dir[0], dir[1])
			})
		}
	}
}

// guard runs op by acting's store twice: once in a transaction rolled
// back, without other's rows and pauses, then beside them. Beside them,
// it must leave other's rows as they were, not even locked (exactRows);
// return what it returned without them; leave acting's rows as it left
// them without them; change acting's rows when it writes, or read
// something when it reads; and run no statement on the two tables that
// does not name the publisher (unscoped).
func guard(t *testing.T, op guardOp, acting, other string) {
	ctx, conn := guardDB(t)
	mine, theirs := guardIDs(ctx, t, conn, acting), guardIDs(ctx, t, conn, other)
	aloneRes, alone, aloneErr := runAlone(ctx, t, conn, op, guardRun{mine: mine, theirs: theirs, other: other}, acting)
	theirRows, before := exactRows(ctx, t, conn, other), stateOfRows(ctx, t, conn, acting)
	var sqls []string
	rec := recorder{DB: conn, sql: &sqls}
	res, err := op.run(ctx, guardRun{s: guardStore(rec, acting, op.opts...), q: rec, mine: mine, theirs: theirs, other: other})
	if after := exactRows(ctx, t, conn, other); !slices.Equal(after, theirRows) {
		t.Errorf("%s by %s changed or locked %s's rows:\n%s", op.name, acting, other, lineDiff(theirRows, after))
	}
	if fmt.Sprint(err) != fmt.Sprint(aloneErr) || !reflect.DeepEqual(res, aloneRes) {
		t.Errorf("%s by %s beside %s's rows: %v, %v\nwithout them: %v, %v", op.name, acting, other, res, err, aloneRes, aloneErr)
	}
	after := stateOfRows(ctx, t, conn, acting)
	if !slices.Equal(after, alone) {
		t.Errorf("%s by %s left its rows otherwise beside %s's rows than without them:\n%s", op.name, acting, other, lineDiff(alone, after))
	}
	switch {
	case op.writes && slices.Equal(after, before):
		t.Errorf("%s by %s changed none of its rows (%v, %v): the case proves nothing", op.name, acting, res, err)
	case !op.writes && err == nil && (res == nil || reflect.ValueOf(res).IsZero()):
		t.Errorf("%s by %s read nothing: the case proves nothing", op.name, acting)
	}
	for _, sql := range sqls {
		if bad := unscoped(sql, acting); len(bad) > 0 {
			t.Errorf("%s by %s ran a statement not scoped to its publisher (%s):\n%s", op.name, acting, strings.Join(bad, "; "), sql)
		}
	}
}

// runAlone runs op as g's acting publisher's in a transaction of conn
// without the other publisher's rows and pauses, and returns what it
// returned, the acting publisher's rows after it, and its error; the
// transaction is rolled back.
func runAlone(ctx context.Context, t *testing.T, conn *pgx.Conn, op guardOp, g guardRun, acting string) (any, []string, error) {
	t.Helper()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, table := range []string{"outbox_delivery", "cdc_relay_paused_topics"} {
		if _, err := tx.Exec(ctx, "DELETE FROM "+table+" WHERE publisher = $1", g.other); err != nil {
			t.Fatal(err)
		}
	}
	g.s, g.q = guardStore(tx, acting, op.opts...), tx
	res, opErr := op.run(ctx, g)
	return res, stateOfRows(ctx, t, tx, acting), opErr
}

// ids returns the ids of the acting publisher's rows of events, then of
// the other publisher's.
func (g guardRun) ids(events ...string) []int64 {
	var ids []int64
	for _, of := range []map[string]int64{g.mine, g.theirs} {
		for _, e := range events {
			ids = append(ids, of[e])
		}
	}
	return ids
}

// lineDiff lists the lines of want missing from got (-) and of got
// missing from want (+).
func lineDiff(want, got []string) string {
	var b strings.Builder
	for _, l := range want {
		if !slices.Contains(got, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// sorted returns the text of each of items, sorted, with err.
func sorted[T any](items []T, err error) ([]string, error) {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = fmt.Sprintf("%+v", it)
	}
	slices.Sort(out)
	return out, err
}

// rowName says what of a row the guard compares: its event, state, topic,
// key and publisher.
func rowName(r Row) string {
	return fmt.Sprintf("%s %s %s %q %s", r.EventID, r.Status, r.Topic, r.Key, r.Publisher)
}

// parkEvery parks every guard event again as state (each is parked already:
// no row is added) and one new to both publishers.
func parkEvery(state string) func(context.Context, guardRun) (any, error) {
	return func(ctx context.Context, g guardRun) (any, error) {
		var errs []error
		for i := range guardEvents {
			errs = append(errs, park(ctx, g.s, guardEvent(i), state))
		}
		ev := guardEvent(0)
		ev.ID = []byte("new")
		return nil, errors.Join(append(errs, park(ctx, g.s, ev, state))...)
	}
}

// parkHeldAll is parkEvery of ParkHeld, every other event PAUSED.
func parkHeldAll(ctx context.Context, g guardRun) (any, error) {
	var held []Held
	for i := range guardEvents {
		held = append(held, Held{Event: guardEvent(i), Reason: errors.New("waits"), Paused: i%2 == 0})
	}
	ev := guardEvent(1)
	ev.ID = []byte("new")
	return nil, g.s.ParkHeld(ctx, append(held, Held{Event: ev, Reason: errors.New("waits")}))
}

// claimAll claims every deliverable row with outcome (the row's index in
// the claim, and the row; its ID set here), and returns the rows claimed.
func claimAll(outcome func(int, Row) Outcome) func(context.Context, guardRun) (any, error) {
	return func(ctx context.Context, g guardRun) (any, error) {
		var got []string
		_, err := g.s.Claim(ctx, 100, func(_ context.Context, rows []Row) []Outcome {
			out := make([]Outcome, len(rows))
			for i, r := range rows {
				got = append(got, rowName(r))
				out[i] = outcome(i, r)
				out[i].ID = r.ID
			}
			return out
		})
		return got, err
	}
}

// mixedOutcome gives the claimed rows, in turn, every outcome: delivered,
// dead, failed again, and a record loaded that is delivered, paused or
// failed again.
func mixedOutcome(i int, r Row) Outcome {
	loaded := &Row{Topic: "orders", Key: r.Key, Value: []byte(`{"loaded": true}`)}
	again := errors.New("again")
	return []Outcome{
		{Delivered: true}, {Dead: true, Err: again}, {Err: again, RetryIn: time.Hour},
		{Loaded: loaded, Delivered: true}, {Loaded: loaded, Paused: true}, {Loaded: loaded, Err: again, RetryIn: time.Hour},
	}[i%6]
}

// beginClaim begins a claim, leaving out the acting publisher's and the
// other's due rows of key k1 (an earlier claim's) when leaveOut, and
// finishes it with every row delivered, or else aborts it.
func beginClaim(leaveOut bool) func(context.Context, guardRun) (any, error) {
	return func(ctx context.Context, g guardRun) (any, error) {
		var exclude []int64
		if leaveOut {
			exclude = g.ids("due")
		}
		c, err := g.s.BeginClaim(ctx, 100, exclude)
		if err != nil {
			return nil, err
		}
		var got []string
		outcomes := make([]Outcome, len(c.Rows))
		for i, r := range c.Rows {
			got, outcomes[i] = append(got, rowName(r)), Outcome{ID: r.ID, Delivered: true}
		}
		if !leaveOut {
			c.Abort(ctx)
			return got, nil
		}
		return got, c.Finish(ctx, outcomes)
	}
}

// retried are the events whose rows "Retry ids" retries: FAILED, DEAD,
// skipped, WAITING and DELIVERED.
var retried = []string{"due", "later", "dead", "skipped", "behind-due", "delivered"}

// parkedBetween is ParkedBetween of every commit, sorted.
func parkedBetween(ctx context.Context, g guardRun) (any, error) {
	return sorted(g.s.ParkedBetween(ctx, 0, 0xFFFFFFFF))
}

// nextDue is NextDue, to the minute.
func nextDue(ctx context.Context, g guardRun) (any, error) {
	d, ok, err := g.s.NextDue(ctx)
	return fmt.Sprint(d.Round(time.Minute), ok), err
}

// heldKeys is HeldKeys, sorted.
func heldKeys(ctx context.Context, g guardRun) (any, error) { return sorted(g.s.HeldKeys(ctx)) }

// stillHeld is StillHeld of every key and topic either publisher parked,
// sorted.
func stillHeld(ctx context.Context, g guardRun) (any, error) {
	keys := []Key{{Topic: "orders", Key: "only-" + KafkaPublisher}, {Topic: "orders", Key: "only-" + partner},
		{Topic: "second-" + KafkaPublisher, Key: "k3"}, {Topic: "second-" + partner, Key: "k3"}}
	for i, e := range guardEvents {
		keys = append(keys, Key{Topic: e.topic, Key: e.key}, Key{Topic: guardEvent(i).Topic})
	}
	return sorted(g.s.StillHeld(ctx, keys))
}

// correctedHeldKeys is CorrectedHeldKeys, sorted.
func correctedHeldKeys(ctx context.Context, g guardRun) (any, error) {
	return sorted(g.s.CorrectedHeldKeys(ctx))
}

// reloadKeys is ReloadKeys' keys, sorted.
func reloadKeys(ctx context.Context, g guardRun) (any, error) {
	var keys []Key
	err := g.s.ReloadKeys(ctx, func(topic string, key []byte) { keys = append(keys, Key{Topic: topic, Key: string(key)}) })
	return sorted(keys, err)
}

// retry is Retry with the options opts makes, holding the key of a row
// retried to a topic; it returns the changes and the keys held.
func retry(opts func(guardRun) RetryOptions) func(context.Context, guardRun) (any, error) {
	return func(ctx context.Context, g guardRun) (any, error) {
		o := opts(g)
		var held []Key
		o.Hold = func(k Key) func() { held = append(held, k); return func() {} }
		changes, err := g.s.Retry(ctx, o)
		return fmt.Sprint(changes, held), err
	}
}

// skip skips the acting publisher's and the other's DEAD and FAILED rows.
func skip(ctx context.Context, g guardRun) (any, error) {
	return g.s.Skip(ctx, SkipOptions{IDs: g.ids("dead", "later", "due")})
}

// purge is Purge with the options opts makes.
func purge(opts func(guardRun) PurgeOptions) func(context.Context, guardRun) (any, error) {
	return func(ctx context.Context, g guardRun) (any, error) { return g.s.Purge(ctx, opts(g)) }
}

// list is List with opts: each row's name, id and what it waits for.
func list(opts ListOptions) func(context.Context, guardRun) (any, error) {
	return func(ctx context.Context, g guardRun) (any, error) {
		rows, err := g.s.List(ctx, opts)
		var out []string
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%d %s waits for %d", r.ID, rowName(r), r.WaitsFor))
		}
		return out, err
	}
}

// get is Get of the acting publisher's held rows of key k1 and the
// other's (not found).
func get(ctx context.Context, g guardRun) (any, error) {
	var out []string
	var errs []error
	for _, id := range g.ids("behind-due", "due") {
		r, err := g.s.Get(ctx, id)
		out, errs = append(out, fmt.Sprintf("%d %s waits for %d", r.ID, rowName(r), r.WaitsFor)), append(errs, err)
	}
	return out, errors.Join(errs...)
}

// adopt adopts every row of adopt_src: each publisher holds one of them
// already.
func adopt(ctx context.Context, g guardRun) (any, error) {
	return g.s.Adopt(ctx, g.q, Adoptable{Schema: "public", Name: "adopt_src", Source: "public.adopt_src", IDColumn: "id", Where: "true"})
}

// pauseTopics pauses a topic new to both publishers, one only the other
// has paused, and one both have.
func pauseTopics(ctx context.Context, g guardRun) (any, error) {
	var changed []bool
	var errs []error
	for _, topic := range []string{"orders", "only-" + g.other + "-topic", "paused-topic"} {
		ok, err := g.s.PauseTopic(ctx, topic)
		changed, errs = append(changed, ok), append(errs, err)
	}
	return changed, errors.Join(errs...)
}

// resumeTopics resumes the topic both publishers paused (with PAUSED
// rows), the one only the other paused, and the team's.
func resumeTopics(ctx context.Context, g guardRun) (any, error) {
	var changed []bool
	var errs []error
	for _, topic := range []string{"paused-topic", "only-" + g.other + "-topic", teamPaused} {
		ok, err := g.s.ResumeTopic(ctx, topic)
		changed, errs = append(changed, ok), append(errs, err)
	}
	return changed, errors.Join(errs...)
}

// heads is Heads of every topic parked (without the sessions writing,
// which a transaction of the run without the other's rows is one of),
// and of the rows parked after the acting publisher's "dead" row.
func heads(ctx context.Context, g guardRun) (any, error) {
	topics := []string{"orders", "paused-topic", teamPaused, "wrong", "second-" + KafkaPublisher, "second-" + partner}
	var out []string
	for _, after := range []int64{0, g.mine["dead"]} {
		read, err := g.s.Heads(ctx, HeadsQuery{Topics: topics, AfterID: after})
		if err != nil {
			return nil, err
		}
		heads, _ := sorted(read.Heads, nil)
		out = append(out, fmt.Sprint(read.MaxID, heads))
	}
	return out, nil
}

// writesNothing is the OutboxRows of tables that write back and have
// reset triggers, but whose rows are never written: the store runs its
// statements of write-back (a park's in a transaction, the next attempts
// read back, a claim's rows superseded by a reset looked for).
type writesNothing struct{}

func (writesNothing) Writes(string) bool { return true }

func (writesNothing) Write(context.Context, pgdb.Tx, string, string, outboxrow.Outcome) error {
	return nil
}

func (writesNothing) WriteMany(context.Context, pgdb.Tx, string, []outboxrow.RowOutcome) error {
	return nil
}

func (writesNothing) Resets(string) bool { return true }

func (writesNothing) Lock(context.Context, pgdb.Tx, string, []string) error { return nil }

// TestSameEventParkedPerPublisher: an event parked for Kafka and for a
// webhook publisher (the same commit, id, topic and source) is two rows,
// and each publisher's park of it again adds none.
func TestSameEventParkedPerPublisher(t *testing.T) {
	t.Parallel()
	ctx, db := newTestDB(t)
	ev := &decoder.Event{ID: []byte("e-1"), Topic: "orders", Key: []byte("k"), Value: []byte(`{}`), CommitLSN: 0x1000}
	for i := 0; i < 2; i++ {
		for _, p := range []string{KafkaPublisher, partner} {
			s := NewStore(db.conn, "public", "outbox_delivery", SourceTables("public.outbox"), Publisher(p))
			if err := s.Failed(ctx, ev, errors.New("refused")); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows, _ := db.conn.Query(ctx, "SELECT publisher FROM outbox_delivery ORDER BY id")
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || !slices.Equal(got, []string{KafkaPublisher, partner}) {
		t.Fatalf("rows of the event parked twice per publisher: %v (%v), want one of kafka, one of partner", got, err)
	}
}
