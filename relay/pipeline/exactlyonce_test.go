package pipeline

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay/delivery/exactlyonce"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Exactly-once delivery against kfake, a Kafka broker in-process with
// transactions and read_committed fetches; the status store is the fake.

type eoSession struct {
	*testPipeline
	txn     *exactlyonce.Batcher
	snk     *sink.Sink
	commits []pglogrepl.LSN // the safe position just before each commit
	mu      sync.Mutex
	stopped []error
}

// newEOSession starts a session's transactional producer (fencing the
// last one) and a pipeline whose records go through an exactlyonce.Batcher
// that commits after at most maxEvents records, never for time.
func newEOSession(t *testing.T, brokers []string, store *fakeStore, state *exactlyonce.State, maxEvents int) *eoSession {
	t.Helper()
	return newEOSessionEvery(t, brokers, store, state, maxEvents, time.Hour)
}

// newEOSessionEvery is newEOSession with the batcher's interval.
func newEOSessionEvery(t *testing.T, brokers []string, store *fakeStore, state *exactlyonce.State, maxEvents int, interval time.Duration) *eoSession {
	t.Helper()
	snk, err := sink.New(sink.Config{Brokers: brokers, TransactionalID: "cdc-relay.test", AutoCreateTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(snk.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := snk.EnsureCheckpointTopic(ctx, "checkpoints"); err != nil {
		t.Fatal(err)
	}
	if err := snk.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	s := &eoSession{testPipeline: newTestPipeline(t, store), snk: snk}
	s.Stop = func(err error) {
		s.mu.Lock()
		s.stopped = append(s.stopped, err)
		s.mu.Unlock()
	}
	s.txn = exactlyonce.New(s.Ledger, snk, state, sink.Checkpoint{Slot: "test"}, exactlyonce.Options{Interval: interval, MaxEvents: maxEvents, CheckpointTopic: "checkpoints"})
	s.txn.CommitHook = func() { s.commits = append(s.commits, s.Tracker.Safe()) }
	s.Pipeline = New(s.Ledger, Options{Delivery: s.txn})
	return s
}

// commitIfDue does what the batcher's goroutine does when told a commit
// is due (the test runs none, to know when it commits).
func (s *eoSession) commitIfDue(ctx context.Context) {
	s.txn.CommitIfDue(ctx)
}

// pgTxn applies one PostgreSQL transaction ending at end, with an event
// per value, each with id its index in ids.
func (s *eoSession) pgTxn(t *testing.T, end pglogrepl.LSN, ids []string, values ...[]byte) {
	t.Helper()
	msgs := []decoder.Message{{Kind: decoder.KindBegin, CommitLSN: uint64(end) - 8}}
	for i, id := range ids {
		v := []byte(`{}`)
		if i < len(values) {
			v = values[i]
		}
		msgs = append(msgs, decoder.Message{Kind: decoder.KindEvent, Event: decoder.Event{
			ID: []byte(id), Topic: "orders", Key: []byte("k"), Value: v, CommitLSN: uint64(end) - 8,
			Headers: []decoder.Header{{Key: "id", Value: []byte(id)}},
		}})
	}
	msgs = append(msgs, decoder.Message{Kind: decoder.KindCommit, EndLSN: uint64(end)})
	for _, m := range msgs {
		if err := s.apply(end-16, m); err != nil {
			t.Fatal(err)
		}
	}
}

func newBroker(t *testing.T) []string {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	return kc.ListenAddrs()
}

// committedIDs reads the id headers a read_committed consumer sees on
// topic, up to its end offsets now.
func committedIDs(t *testing.T, brokers []string, topic string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ids []string
	for {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %v", topic, ctx.Err())
		}
		done := false
		f.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				if !r.Attrs.IsControl() {
					ids = append(ids, header(r, "id"))
				}
			}
			done = done || p.HighWatermark == p.LastStableOffset && len(p.Records) > 0 && p.Records[len(p.Records)-1].Offset == p.HighWatermark-1
		})
		if done {
			return ids
		}
	}
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestExactlyOnceCommitsWholeTransactions: a Kafka transaction holds whole
// PostgreSQL transactions, however many records that makes; the position
// moves only when it commits, though Kafka acked the records before; and
// the checkpoint topic says where it stands.
func TestExactlyOnceCommitsWholeTransactions(t *testing.T) {
	brokers := newBroker(t)
	s := newEOSession(t, brokers, &fakeStore{}, &exactlyonce.State{}, 3)
	ctx := context.Background()
	s.pgTxn(t, 0x200, []string{"a", "b"})
	if s.commitIfDue(ctx); len(s.commits) != 0 {
		t.Fatal("committed after 2 of at most 3 records")
	}
	s.pgTxn(t, 0x300, []string{"c", "d", "e", "f", "g"}) // past the 3: due at its end, not in it
	if s.commitIfDue(ctx); len(s.commits) != 1 || s.commits[0] != 0x100 {
		t.Fatalf("commits %v, want one, with the position still at the start 0/100 before it", s.commits)
	}
	if got := s.Tracker.Safe(); got != 0x300 {
		t.Fatalf("safe %s after the commit, want 0/300", got)
	}
	s.pgTxn(t, 0x400, []string{"h"})
	if err := s.snk.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev, _ := s.Tracker.InFlight(); ev != 0 || s.Tracker.Safe() != 0x300 {
		t.Fatalf("acked, not committed: %d in flight (want 0: acks free the capacity), safe %s (want 0/300)", ev, s.Tracker.Safe())
	}
	if err := s.txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.Tracker.Safe(); got != 0x400 {
		t.Fatalf("safe %s after the second commit, want 0/400", got)
	}
	if got := s.Count.Events.Load(); got != 8 {
		t.Fatalf("counted %d events delivered, want 8", got)
	}
	cp, found, err := s.snk.ReadCheckpoint(context.Background(), "checkpoints", "test", true)
	if err != nil || !found || cp.LSN != 0x400 {
		t.Fatalf("checkpoint topic: %s, %v, %v; want 0/400", cp.LSN, found, err)
	}
	if got := strings.Join(committedIDs(t, brokers, "orders"), ","); got != "a,b,c,d,e,f,g,h" {
		t.Fatalf("read_committed sees %s", got)
	}
}

// TestExactlyOnceCommitsAtOnceWithoutAnInterval: with no interval (the
// default), the end of each PostgreSQL transaction makes a commit due at
// once, however few records the Kafka transaction holds.
func TestExactlyOnceCommitsAtOnceWithoutAnInterval(t *testing.T) {
	brokers := newBroker(t)
	s := newEOSessionEvery(t, brokers, &fakeStore{}, &exactlyonce.State{}, 10000, 0)
	ctx := context.Background()
	s.pgTxn(t, 0x200, []string{"a"})
	if s.commitIfDue(ctx); len(s.commits) != 1 {
		t.Fatalf("%d commits after one PostgreSQL transaction of one record, want 1", len(s.commits))
	}
	s.pgTxn(t, 0x300, []string{"b", "c"})
	if s.commitIfDue(ctx); len(s.commits) != 2 {
		t.Fatalf("%d commits after two PostgreSQL transactions, want 2", len(s.commits))
	}
	if got := s.Tracker.Safe(); got != 0x300 {
		t.Fatalf("safe %s after the second commit, want 0/300", got)
	}
	if got := strings.Join(committedIDs(t, brokers, "orders"), ","); got != "a,b,c" {
		t.Fatalf("read_committed sees %s", got)
	}
}

// TestExactlyOnceCommitsNoMoreOftenThanTheInterval: with an interval, a
// transaction whose PostgreSQL transactions ended commits once the
// interval has passed since the last commit began (the batcher's start,
// for the first), woken by a timer, not before.
func TestExactlyOnceCommitsNoMoreOftenThanTheInterval(t *testing.T) {
	const interval = 500 * time.Millisecond
	brokers := newBroker(t)
	began := time.Now()
	s := newEOSessionEvery(t, brokers, &fakeStore{}, &exactlyonce.State{}, 10000, interval)
	var at []time.Time // when each commit began
	hook := s.txn.CommitHook
	s.txn.CommitHook = func() { at = append(at, time.Now()); hook() }
	ctx := context.Background()
	waitCommits := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for s.commitIfDue(ctx); len(at) < n; s.commitIfDue(ctx) {
			if time.Now().After(deadline) {
				t.Fatalf("%d commits after 10 s, want %d", len(at), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	s.pgTxn(t, 0x200, []string{"a"})
	waitCommits(1)
	s.pgTxn(t, 0x300, []string{"b"})
	waitCommits(2)
	// The hook runs just after a commit begins: allow it that much.
	const slack = 50 * time.Millisecond
	if d := at[0].Sub(began); d < interval {
		t.Errorf("the first commit began %s after the batcher, before the interval of %s", d, interval)
	}
	if d := at[1].Sub(at[0]); d < interval-slack {
		t.Errorf("the second commit began %s after the first, before the interval of %s", d, interval)
	}
	if got := strings.Join(committedIDs(t, brokers, "orders"), ","); got != "a,b" {
		t.Fatalf("read_committed sees %s", got)
	}
}

// TestExactlyOnceParksATooLargeRecordWithoutProducingIt: a record the
// producer says Kafka would refuse (larger than a batch) is parked before
// it is produced, so its Kafka transaction is not aborted: the session
// commits the rest, and a read_committed consumer sees every other event
// once.
func TestExactlyOnceParksATooLargeRecordWithoutProducingIt(t *testing.T) {
	brokers := newBroker(t)
	store := &fakeStore{}
	state := &exactlyonce.State{}
	big := make([]byte, sink.DefaultBatchMaxBytes+1)
	ids := []string{"a", "big", "b"}
	values := [][]byte{[]byte(`{}`), big, []byte(`{}`)}

	s := newEOSession(t, brokers, store, state, 100)
	s.pgTxn(t, 0x200, ids, values...)
	if err := s.txn.Commit(context.Background()); err != nil || len(s.stopped) != 0 {
		t.Fatalf("commit: %v, session stopped with %v; want it committed", err, s.stopped)
	}
	if got := store.ids(); len(got) != 1 || !strings.HasPrefix(got[0], "FAILED big: MESSAGE_TOO_LARGE") {
		t.Fatalf("parked %q, want the large record only", got)
	}
	if s.Tracker.Safe() != 0x200 {
		t.Fatalf("safe %s, want 0/200", s.Tracker.Safe())
	}
	if got := strings.Join(committedIDs(t, brokers, "orders"), ","); got != "a,b" {
		t.Fatalf("read_committed sees %s, want a,b once", got)
	}
}

// TestExactlyOnceHoldsTheKeyOfAParkedRecord: with ordering by key, the
// record parked before it is produced holds its key at once: the key's
// events before it are produced, those after it, and its key's later
// transactions, parked WAITING, in order.
func TestExactlyOnceHoldsTheKeyOfAParkedRecord(t *testing.T) {
	brokers := newBroker(t)
	store := &fakeStore{}
	state := &exactlyonce.State{}
	big := make([]byte, sink.DefaultBatchMaxBytes+1)
	ids := []string{"a", "big", "b", "c"}
	values := [][]byte{[]byte(`{}`), big, []byte(`{}`), []byte(`{}`)}

	s := newEOSession(t, brokers, store, state, 100)
	s.orderedEO(t, state)
	s.pgTxn(t, 0x200, ids, values...)
	s.pgTxn(t, 0x300, []string{"d"})
	if err := s.txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(s.stopped) != 0 || s.Tracker.Safe() != 0x300 {
		t.Fatalf("stopped %v, safe %s; want it to commit to 0/300", s.stopped, s.Tracker.Safe())
	}
	if got := strings.Join(committedIDs(t, brokers, "orders"), ","); got != "a" {
		t.Fatalf("read_committed sees %s, want a: b, c and d wait behind big", got)
	}
	if got := strings.Join(parkedAs(store), ","); got != "FAILED big,WAITING b,WAITING c,WAITING d" {
		t.Fatalf("parked %s, want big, then b, c and d waiting behind it", got)
	}
}

// orderedEO makes the session hold keys as a session's start does: from
// the store and what state learnt.
func (s *eoSession) orderedEO(t *testing.T, state *exactlyonce.State) {
	t.Helper()
	o := keyorder.New(true, s.Log)
	held, _ := s.store.HeldKeys(context.Background())
	o.Rebuild(held, nil, state.Holds())
	s.Order = o
	s.parkedBefore = state.IsParked
}

// TestTrackerHold: a held transaction is not safe until released, while its
// events no longer count in flight.
func TestTrackerHold(t *testing.T) {
	tr := checkpoint.NewTracker(0x100, checkpoint.Limits{Events: 1})
	tx := tr.Begin(time.Now())
	tr.Hold(tx)
	tr.Add(tx, 10)
	tr.Commit(tx, 0x200)
	tr.Done(tx, 10)
	if ev, _ := tr.InFlight(); ev != 0 || tr.Full() || tr.Safe() != 0x100 {
		t.Fatalf("held: %d in flight, full %v, safe %s; want 0, false, 0/100", ev, tr.Full(), tr.Safe())
	}
	tr.Release(tx)
	if tr.Safe() != 0x200 {
		t.Fatalf("released: safe %s, want 0/200", tr.Safe())
	}
}

// TestExactlyOnceReadsOnDuringACommit: records read while a commit is under
// way wait, and go into the next Kafka transaction, not the one
// committing; the stream never waits for Kafka.
func TestExactlyOnceReadsOnDuringACommit(t *testing.T) {
	brokers := newBroker(t)
	s := newEOSession(t, brokers, &fakeStore{}, &exactlyonce.State{}, 1)
	ctx := context.Background()
	s.pgTxn(t, 0x200, []string{"a"})
	hooked := false
	s.txn.CommitHook = func() {
		if !hooked {
			hooked = true
			s.pgTxn(t, 0x300, []string{"b", "c"}) // read during the first commit
			if n := s.txn.Pending(); n != 2 {
				t.Errorf("%d records waiting during the commit, want 2", n)
			}
		}
	}
	s.commitIfDue(ctx)
	if got := s.Tracker.Safe(); got != 0x200 {
		t.Fatalf("safe %s after the first commit, want 0/200 (b and c are in the next transaction)", got)
	}
	cp, _, err := s.snk.ReadCheckpoint(ctx, "checkpoints", "test", true)
	if err != nil || cp.LSN != 0x200 {
		t.Fatalf("checkpoint %s, %v after the first commit, want 0/200", cp.LSN, err)
	}
	s.commitIfDue(ctx)
	if got := s.Tracker.Safe(); got != 0x300 {
		t.Fatalf("safe %s after the second commit, want 0/300", got)
	}
	if got := strings.Join(committedIDs(t, brokers, "orders"), ","); got != "a,b,c" {
		t.Fatalf("read_committed sees %s, want a,b,c", got)
	}
}

// TestExactlyOnceNeverCommitsACancelledRecord: a record that the end of the
// session failed (a stop that timed out cancels the produce context) keeps
// the final commit from committing the transaction without it.
func TestExactlyOnceNeverCommitsACancelledRecord(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	brokers := kc.ListenAddrs()
	s := newEOSession(t, brokers, &fakeStore{}, &exactlyonce.State{}, 100)
	msgs := []decoder.Message{{Kind: decoder.KindBegin, CommitLSN: 0x1f8}}
	for _, ev := range []struct{ id, topic string }{{"a", "orders"}, {"b", "offline"}} { // no topic "offline": b waits
		msgs = append(msgs, decoder.Message{Kind: decoder.KindEvent, Event: decoder.Event{
			ID: []byte(ev.id), Topic: ev.topic, Key: []byte("k"), Value: []byte(`{}`), CommitLSN: 0x1f8,
			Headers: []decoder.Header{{Key: "id", Value: []byte(ev.id)}},
		}})
	}
	msgs = append(msgs, decoder.Message{Kind: decoder.KindCommit, EndLSN: 0x200})
	for _, m := range msgs {
		if err := s.apply(0x1f0, m); err != nil {
			t.Fatal(err)
		}
	}
	s.cancel() // the stop timed out
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.txn.Commit(ctx); err == nil {
		t.Fatal("the final commit committed a transaction whose record b was cancelled")
	}
	// The next session's producer aborts what this one left open.
	next := newEOSession(t, brokers, &fakeStore{}, &exactlyonce.State{}, 100)
	if cp, found, err := next.snk.ReadCheckpoint(ctx, "checkpoints", "test", true); err != nil || found {
		t.Fatalf("checkpoint topic holds %s (found %v, err %v), want nothing", cp.LSN, found, err)
	}
	if s.Tracker.Safe() != 0x100 {
		t.Fatalf("safe %s, want the start 0/100", s.Tracker.Safe())
	}
}

// TestExactlyOnceCommitWaitsForAPoisonRow: a row that cannot become a
// record is parked beside the transaction; no commit passes it before its
// status row is stored, and none at all if the session ends first.
func TestExactlyOnceCommitWaitsForAPoisonRow(t *testing.T) {
	brokers := newBroker(t)
	store := &fakeStore{block: true, called: make(chan struct{}, 1)}
	s := newEOSession(t, brokers, store, &exactlyonce.State{}, 100)
	ev := func(id string, poison error) decoder.Message {
		return decoder.Message{Kind: decoder.KindEvent, Poison: poison, Event: decoder.Event{ID: []byte(id), Topic: "orders",
			Key: []byte("k"), Value: []byte(`{}`), CommitLSN: 0x1f8, Headers: []decoder.Header{{Key: "id", Value: []byte(id)}}}}
	}
	for _, m := range []decoder.Message{{Kind: decoder.KindBegin, CommitLSN: 0x1f8}, ev("a", nil), ev("bad", errors.New("unfit row")), {Kind: decoder.KindCommit, EndLSN: 0x200}} {
		if err := s.apply(0x1f0, m); err != nil {
			t.Fatal(err)
		}
	}
	<-store.called // the park began, and blocks
	done := make(chan error, 1)
	go func() { done <- s.txn.Commit(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("the commit ended (%v) while the poison row's park was still under way", err)
	case <-time.After(300 * time.Millisecond): // a negative: nothing to wait for
	}
	s.cancel() // the session ends: the park gives up, unstored
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("committed past a poison row that was never stored")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the commit still waits after the session ended")
	}
	next := newEOSession(t, brokers, &fakeStore{}, &exactlyonce.State{}, 100)
	if cp, found, err := next.snk.ReadCheckpoint(context.Background(), "checkpoints", "test", true); err != nil || found {
		t.Fatalf("checkpoint topic holds %s (found %v, err %v), want nothing", cp.LSN, found, err)
	}
}

// TestExactlyOnceConfirmsOnlyWrittenBack: with write-back, a committed
// Kafka transaction's PostgreSQL transactions are confirmed only once
// their rows say delivered; Kafka's acks free the in-flight capacity as
// without write-back (a PostgreSQL transaction larger than the in-flight
// limits must not stall); write-back hears of no event before its Kafka
// transaction committed.
func TestExactlyOnceConfirmsOnlyWrittenBack(t *testing.T) {
	brokers := newBroker(t)
	s := newEOSession(t, brokers, &fakeStore{}, &exactlyonce.State{}, 100)
	out := &fakeOutcomes{hold: true}
	s.Outcomes, s.WriteBack = out, []bool{true}
	s.pgTxn(t, 0x200, []string{"a", "b"})
	if err := s.snk.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev, _ := s.Tracker.InFlight(); ev != 0 || len(out.delivered) != 0 {
		t.Fatalf("acked, not committed: %d in flight, written back %q; want 0 in flight, nothing written back", ev, out.delivered)
	}
	if err := s.txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.Tracker.Safe(); got != 0x100 || len(out.delivered) != 2 {
		t.Fatalf("committed, rows not written: safe %s, written back %q; want 0/100 and both told", got, out.delivered)
	}
	out.written()
	if got := s.Tracker.Safe(); got != 0x200 {
		t.Fatalf("safe %s once the rows were written, want 0/200", got)
	}
}

// TestExactlyOnceWritesBackWhatTheTopicPassed: with write-back, a session
// that starts behind the checkpoint topic reads the transactions it passed
// again without producing them, and tells write-back of each of their
// delivered events, except one the status table holds (parked); the
// position passes them only once their rows are written, and what follows
// is produced and committed as usual.
func TestExactlyOnceWritesBackWhatTheTopicPassed(t *testing.T) {
	brokers := newBroker(t)
	s := newEOSession(t, brokers, &fakeStore{}, &exactlyonce.State{}, 100)
	out := &fakeOutcomes{hold: true}
	s.Outcomes, s.WriteBack, s.TableNames = out, []bool{true}, []string{"public.outbox"}
	s.skipBelow = 0x300 // the topic's position: the transactions ending at 0/200 and 0/300
	s.replay = &ReplayWindow{parked: map[replayKey]struct{}{{commit: 0x300 - 8, id: "c", source: "public.outbox"}: {}}}
	s.pgTxn(t, 0x200, []string{"a", "b"})
	s.pgTxn(t, 0x300, []string{"c", "d"})
	s.pgTxn(t, 0x400, []string{"e"})
	if got := strings.Join(out.delivered, " "); got != "a b d" {
		t.Fatalf("write-back told of %q before the commit, want the passed transactions' delivered events %q", got, "a b d")
	}
	if got := s.Tracker.Safe(); got != 0x100 {
		t.Fatalf("safe %s before the rows were written, want 0/100", got)
	}
	out.written()
	if got := s.Tracker.Safe(); got != 0x300 {
		t.Fatalf("safe %s once the passed transactions' rows were written, want 0/300 (0/400 waits for its commit)", got)
	}
	if err := s.txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(committedIDs(t, brokers, "orders"), " "); got != "e" {
		t.Errorf("read_committed sees %q, want only %q: the passed transactions are in Kafka already", got, "e")
	}
	if got := strings.Join(out.delivered, " "); got != "a b d e" {
		t.Errorf("write-back told of %q, want %q", got, "a b d e")
	}
	out.written()
	if got := s.Tracker.Safe(); got != 0x400 {
		t.Errorf("safe %s once every row was written, want 0/400", got)
	}
	if s.replay != nil || s.logs.count("3 events Kafka had before this session") != 1 {
		t.Errorf("the replay's end is not logged once:\n%s", s.logs.String())
	}
}
