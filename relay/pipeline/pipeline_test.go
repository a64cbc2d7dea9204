package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/delivery/atleastonce"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/status"
)

// The pipeline's paths with fakes at its two seams, the producer and the
// status store. The e2e suite proves the same paths against PostgreSQL and
// Kafka; these pin down what the pipeline itself decides.

// fakeProducer holds every produced record until the test answers it.
type fakeProducer struct {
	mu      sync.Mutex
	pending []*kgo.Record
	done    func(*kgo.Record, error)

	alone      error            // ProduceAlone's answer
	aloneByID  map[string]error // ProduceAlone's answer by the record's id
	aloneCalls int
	aloneOrder []string
	aloneGate  chan struct{}    // if set, ProduceAlone answers once it is closed
	atGate     int              // ProduceAlone calls that reached aloneGate
	groupOrder []string         // the records ProduceGroup produced, in order
	groups     int              // ProduceGroup's calls
	groupIDs   []string         // each ProduceGroup's records, comma-joined
	refuses    map[string]error // Refuses's answer by the record's id
	beside     []string         // the records produced alone or in a group, in order
}

func (f *fakeProducer) Produce(_ context.Context, r *kgo.Record, done func(*kgo.Record, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, r)
	f.done = done
}

// BatchMaxBytes is the producer's default batch size.
func (f *fakeProducer) BatchMaxBytes() int { return sink.DefaultBatchMaxBytes }
func (f *fakeProducer) Refuses(r *kgo.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refuses[header(r, "id")]
}
func (f *fakeProducer) SizeRefused(string) {}

// ProduceAlone answers with aloneByID's error for the record's id header,
// else alone's, and notes the order.
func (f *fakeProducer) ProduceAlone(_ context.Context, r *kgo.Record) error {
	if f.aloneGate != nil {
		f.mu.Lock()
		f.atGate++
		f.mu.Unlock()
		<-f.aloneGate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.aloneCalls++
	id := ""
	for _, h := range r.Headers {
		if h.Key == "id" {
			id = string(h.Value)
		}
	}
	f.aloneOrder = append(f.aloneOrder, id)
	f.beside = append(f.beside, id)
	if err, ok := f.aloneByID[id]; ok {
		return err
	}
	return f.alone
}

// ProduceGroup answers each record as ProduceAlone does, noting the
// order in groupOrder, but as the idempotent producer does for a key's
// one partition: a record behind one of its key that failed fails with
// the same error.
func (f *fakeProducer) ProduceGroup(ctx context.Context, recs []*kgo.Record) []error {
	errs := make([]error, len(recs))
	failed := map[string]error{} // by topic and key
	for i, r := range recs {
		k := r.Topic + "\x00" + string(r.Key)
		errs[i] = f.ProduceAlone(ctx, r)
		if err := failed[k]; err != nil && r.Key != nil {
			errs[i] = err
		} else if errs[i] != nil {
			failed[k] = errs[i]
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.aloneOrder) - len(recs)
	f.groups++
	f.groupOrder = append(f.groupOrder, f.aloneOrder[n:]...)
	f.groupIDs = append(f.groupIDs, strings.Join(f.aloneOrder[n:], ","))
	f.aloneOrder, f.aloneCalls = f.aloneOrder[:n], f.aloneCalls-len(recs)
	return errs
}

// answer calls back every pending record with err, in produce order.
func (f *fakeProducer) answer(err error) int {
	f.mu.Lock()
	recs, done := f.pending, f.done
	f.pending = nil
	f.mu.Unlock()
	for _, r := range recs {
		done(r, err)
	}
	return len(recs)
}

// fakeStore is the status table: it fails the first failures calls, and
// blocks each call while block is set until ctx ends.
type fakeStore struct {
	mu       sync.Mutex
	failures int
	failWith error // what the failing calls return; a generic error when nil
	block    bool
	calls    int
	recorded []string // event ids with their reasons
	topics   []string // the topic of each row recorded
	called   chan struct{}

	firstDelay time.Duration       // the first call takes this long
	held       []status.Key        // HeldKeys' answer
	still      map[status.Key]bool // StillHeld's answer
	stillHook  func()              // called as StillHeld begins
	paused     []string            // PausedTopics' answer
}

func (f *fakeStore) Failed(ctx context.Context, ev *decoder.Event, reason error) error {
	return f.park(ctx, ev, "FAILED", reason)
}

func (f *fakeStore) Dead(ctx context.Context, ev *decoder.Event, reason error) error {
	return f.park(ctx, ev, "DEAD", reason)
}

func (f *fakeStore) Waiting(ctx context.Context, ev *decoder.Event, reason error) error {
	return f.park(ctx, ev, "WAITING", reason)
}

func (f *fakeStore) Paused(ctx context.Context, ev *decoder.Event) error {
	return f.park(ctx, ev, "PAUSED", delivery.ErrPaused)
}

// HeldKeys returns held, the keys held before the session.
func (f *fakeStore) HeldKeys(context.Context) ([]status.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]status.Key(nil), f.held...), nil
}

// EachHeldKey calls fn with each of held.
func (f *fakeStore) EachHeldKey(ctx context.Context, fn func(status.Key)) error {
	held, err := f.HeldKeys(ctx)
	for _, k := range held {
		fn(k)
	}
	return err
}

// StillHeld returns the keys of keys in still; it calls stillHook first.
func (f *fakeStore) StillHeld(_ context.Context, keys []status.Key) ([]status.Key, error) {
	if f.stillHook != nil {
		f.stillHook()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []status.Key
	for _, k := range keys {
		if f.still[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

func (f *fakeStore) PausedTopics(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paused...), nil
}

func (f *fakeStore) park(ctx context.Context, ev *decoder.Event, state string, reason error) error {
	f.mu.Lock()
	f.calls++
	if f.calls == 1 && f.firstDelay > 0 {
		f.mu.Unlock()
		time.Sleep(f.firstDelay) // a slow first insert, which later ones must not overtake
		f.mu.Lock()
	}
	block, fail := f.block, f.calls <= f.failures
	if f.called != nil {
		select {
		case f.called <- struct{}{}:
		default:
		}
	}
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if fail {
		if f.failWith != nil {
			return f.failWith
		}
		return errors.New("status table unavailable (test)")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recorded = append(f.recorded, state+" "+string(ev.ID)+": "+reason.Error())
	f.topics = append(f.topics, ev.Topic)
	return nil
}

func (f *fakeStore) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.recorded...)
}

// logBuffer collects log lines for assertions.
type logBuffer struct{ syncbuf.Buffer }

// count counts the occurrences of s.
func (l *logBuffer) count(s string) int { return strings.Count(l.String(), s) }

type testPipeline struct {
	*Pipeline
	*delivery.Ledger
	prod   *fakeProducer
	store  *fakeStore
	logs   *logBuffer
	cancel context.CancelFunc // ends the session: produce and status writes
}

func newTestPipeline(t *testing.T, store *fakeStore) *testPipeline {
	t.Helper()
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tp := &testPipeline{prod: &fakeProducer{}, store: store, logs: logs, cancel: cancel}
	l := delivery.NewLedger(&delivery.Ledger{
		Log:      slog.New(slog.NewTextHandler(logs, nil)),
		Failures: store, Count: &delivery.Counters{},
		Tracker: checkpoint.NewTracker(0x100, checkpoint.Limits{}),
		FailCtx: ctx, ProduceCtx: ctx, RetryBase: time.Millisecond,
	})
	tp.Ledger, tp.Pipeline = l, New(l, Options{Delivery: atleastonce.New(l, tp.prod)})
	return tp
}

// tx applies one transaction of events ending at end; a non-nil poison
// makes every event poison.
func (tp *testPipeline) tx(t *testing.T, end pglogrepl.LSN, poison error, ids ...string) {
	t.Helper()
	msgs := []decoder.Message{{Kind: decoder.KindBegin}}
	for _, id := range ids {
		msgs = append(msgs, decoder.Message{Kind: decoder.KindEvent, Poison: poison, Event: decoder.Event{
			ID: []byte(id), Topic: "orders", Key: []byte("k"), Value: []byte(`{}`), CommitLSN: uint64(end) - 8,
			Headers: []decoder.Header{{Key: "id", Value: []byte(id)}},
		}})
	}
	msgs = append(msgs, decoder.Message{Kind: decoder.KindCommit, EndLSN: uint64(end)})
	for _, m := range msgs {
		if err := tp.apply(end-16, m); err != nil {
			t.Fatal(err)
		}
	}
}

// waitIdle waits until nothing is in flight.
func (tp *testPipeline) waitIdle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tp.Tracker.WaitIdle(ctx); err != nil {
		ev, _ := tp.Tracker.InFlight()
		t.Fatalf("%d events still in flight: %v", ev, err)
	}
}

func TestPipelineConfirmsOnlyAfterAcks(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	tp.tx(t, 0x200, nil, "a", "b")
	tp.tx(t, 0x300, nil, "c")
	if got := tp.Tracker.Safe(); got != 0x100 {
		t.Fatalf("safe %s before any ack, want the start 0/100", got)
	}
	if n := tp.prod.answer(nil); n != 3 {
		t.Fatalf("produced %d records, want 3", n)
	}
	if got := tp.Tracker.Safe(); got != 0x300 {
		t.Fatalf("safe %s after every ack, want the last commit 0/300", got)
	}
	if got := tp.Count.Events.Load(); got != 3 {
		t.Fatalf("counted %d events delivered, want 3", got)
	}
}

// TestPipelineParksWhatCanNeverBeDelivered: a poison row and a record Kafka
// refuses for good go to the status table, and the checkpoint passes them
// once their rows are stored; a status table that fails at first is
// retried, not skipped.
func TestPipelineParksWhatCanNeverBeDelivered(t *testing.T) {
	tests := []struct {
		name     string
		poison   error
		kafka    error
		failures int // status-table calls that fail first
		want     string
	}{
		{name: "poison row", poison: errors.New(`illegal topic "bad topic!*"`), want: `DEAD p: illegal topic "bad topic!*"`},
		{name: "record too large", kafka: kerr.MessageTooLarge, want: "FAILED p: MESSAGE_TOO_LARGE"},
		{name: "invalid topic", kafka: kerr.InvalidTopicException, want: "FAILED p: INVALID_TOPIC_EXCEPTION"},
		{name: "status table down at first", poison: errors.New("headers not an object"), failures: 3, want: "DEAD p: headers not an object"},
		// Whole but for its timestamp: the poller sends it, with no person.
		{name: "timestamp column of another type", poison: fmt.Errorf("%w; parked FAILED", &decoder.MappingError{Timestamp: true, Err: errors.New("timestamp column has type text")}),
			want: "FAILED p: outbox table : timestamp column has type text; parked FAILED"},
		{name: "id column missing", poison: fmt.Errorf("%w; recover", &decoder.MappingError{Missing: "id", Err: errors.New(`has no column "id"`)}),
			want: `DEAD p: outbox table : has no column "id"; recover`},
		{name: "an error franz-go gave up on", kafka: errors.New("unknown producer error"), want: "FAILED p: unknown producer error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{failures: tt.failures}
			tp := newTestPipeline(t, store)
			tp.prod.alone = tt.kafka // a cause that stays fails alone too
			tp.tx(t, 0x200, tt.poison, "p")
			produced := tp.prod.answer(tt.kafka) // "p", unless poison
			tp.tx(t, 0x300, nil, "ok")
			produced += tp.prod.answer(nil)
			want := map[bool]int{true: 1, false: 2}[tt.poison != nil]
			if produced != want {
				t.Fatalf("produced %d records, want %d (a poison row is never produced)", produced, want)
			}
			tp.waitIdle(t)
			if got := tp.store.ids(); len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Fatalf("status table holds %q, want one row %q", got, tt.want)
			}
			if tp.store.calls != tt.failures+1 {
				t.Fatalf("%d status-table calls, want %d (retried until stored, then once)", tp.store.calls, tt.failures+1)
			}
			if got := tp.Tracker.Safe(); got != 0x300 {
				t.Fatalf("safe %s, want 0/300: the parked event must not hold the checkpoint", got)
			}
			if got := tp.Count.Failed.Load(); got != 1 {
				t.Fatalf("counted %d failed, want 1", got)
			}
		})
	}
}

// TestPipelineStopsWhenTheStatusTableRefuses: a status table that refuses
// writes for a reason retries cannot fix (SQLSTATE class 42: dropped,
// privilege revoked) ends the session with an error that says what to
// do, rather than stalling the stream behind the event: fatal for a
// dropped table, not for a privilege, which is granted while the relay
// runs (Run names the GRANT and retries); any other error is retried.
func TestPipelineStopsWhenTheStatusTableRefuses(t *testing.T) {
	for _, tt := range []struct {
		name  string
		err   error
		stop  bool
		fatal bool
	}{
		{name: "privilege revoked", err: &pgconn.PgError{Code: "42501", Message: "permission denied for table outbox_delivery"}, stop: true},
		{name: "table dropped", err: &pgconn.PgError{Code: "42P01", Message: `relation "outbox_delivery" does not exist`}, stop: true, fatal: true},
		{name: "lock timeout", err: &pgconn.PgError{Code: "55P03", Message: "canceling statement due to lock timeout"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{failures: 3, failWith: tt.err}
			tp := newTestPipeline(t, store)
			stopped := make(chan error, 1)
			tp.Stop = func(err error) { stopped <- err }
			tp.tx(t, 0x200, errors.New("headers not an object"), "p")
			if !tt.stop {
				tp.waitIdle(t)
				if len(stopped) != 0 {
					t.Fatalf("stopped on a passing error: %v", <-stopped)
				}
				return
			}
			select {
			case err := <-stopped:
				if fatal.Is(err) != tt.fatal || !strings.Contains(err.Error(), "cdc-relay migrate") || !strings.Contains(err.Error(), tt.err.Error()) {
					t.Fatalf("stopped with %v, want an error (fatal: %v) naming the cause and the fix", err, tt.fatal)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the session did not stop")
			}
			if store.calls != 1 {
				t.Fatalf("%d status-table calls, want 1 (no retries)", store.calls)
			}
		})
	}
}

// TestPipelineStopsWhenKafkaRefusesTheProducer: an error that refuses the
// producer itself (an ACL of the cluster) ends the session with a fatal
// error; the event is neither parked nor confirmed.
func TestPipelineStopsWhenKafkaRefusesTheProducer(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	stopped := make(chan error, 1)
	tp.Stop = func(err error) { stopped <- err }
	tp.tx(t, 0x200, nil, "a")
	tp.prod.answer(kerr.ClusterAuthorizationFailed)
	select {
	case err := <-stopped:
		if !fatal.Is(err) || !strings.Contains(err.Error(), "IDEMPOTENT_WRITE") {
			t.Fatalf("stopped with %v, want a fatal error naming the ACL", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not stop")
	}
	if got := tp.store.ids(); len(got) != 0 {
		t.Fatalf("parked %q; want nothing parked", got)
	}
	if got := tp.Tracker.Safe(); got != 0x100 {
		t.Fatalf("safe %s, want the start: the event was not delivered", got)
	}
}

// TestPipelineKeepsUndeliveredInFlight: a record the producer gives back
// undelivered (the session ended, the client closed) is not parked and not
// confirmed, so PostgreSQL sends it again; the warning is said once.
func TestPipelineKeepsUndeliveredInFlight(t *testing.T) {
	for _, err := range []error{context.Canceled, kgo.ErrClientClosed} {
		t.Run(err.Error(), func(t *testing.T) {
			tp := newTestPipeline(t, &fakeStore{})
			tp.tx(t, 0x200, nil, "a", "b", "c")
			tp.prod.answer(err)
			if got := tp.Tracker.Safe(); got != 0x100 {
				t.Fatalf("safe %s passed undelivered events", got)
			}
			if ev, _ := tp.Tracker.InFlight(); ev != 3 {
				t.Fatalf("%d events in flight, want 3", ev)
			}
			if got := tp.store.ids(); len(got) != 0 {
				t.Fatalf("undelivered events parked: %q", got)
			}
			if n := tp.logs.count("events not delivered"); n != 1 {
				t.Fatalf("warned %d times, want once", n)
			}
		})
	}
}

// TestPipelineStopAbandonsABlockedStatusWrite: a status-table insert that
// hangs (the table locked by someone else) gives up when the session ends;
// the event stays unconfirmed and is sent again after a restart.
func TestPipelineStopAbandonsABlockedStatusWrite(t *testing.T) {
	store := &fakeStore{block: true, called: make(chan struct{}, 1)}
	tp := newTestPipeline(t, store)
	tp.tx(t, 0x200, errors.New("poison"), "p")
	select {
	case <-store.called:
	case <-time.After(5 * time.Second):
		t.Fatal("the status table was never written")
	}
	tp.cancel()
	deadline := time.Now().Add(5 * time.Second)
	for tp.logs.count("stopped before a failed event was recorded") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the blocked status write did not give up when the session ended")
		}
		time.Sleep(time.Millisecond)
	}
	if got := tp.Tracker.Safe(); got != 0x100 {
		t.Fatalf("safe %s passed an event whose status row was never written", got)
	}
	if got := tp.Count.Failed.Load(); got != 0 {
		t.Fatalf("counted %d failed, want 0", got)
	}
}

// TestPipelineRetriesATooLargeBatchRecordAlone: MESSAGE_TOO_LARGE for a
// record that fits a batch on its own means its batch was too large for
// the topic: the record is produced again alone, and parked only if it
// fails alone too. A record too large for any batch is parked at once.
func TestPipelineRetriesATooLargeBatchRecordAlone(t *testing.T) {
	tooLarge := fmt.Errorf("%w (uncompressed_bytes=1200000, compressed_bytes=1200000)", kerr.MessageTooLarge)
	tests := []struct {
		name       string
		value      int   // payload bytes
		alone      error // outcome alone
		aloneCalls int
		parked     int
	}{
		{"fits alone", 100, nil, 1, 0},
		{"too large alone too", 100, kerr.MessageTooLarge, 1, 1},
		{"too large for any batch", 2 << 20, nil, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := newTestPipeline(t, &fakeStore{})
			tp.prod.alone = tt.alone
			if err := tp.apply(0x180, decoder.Message{Kind: decoder.KindBegin}); err != nil {
				t.Fatal(err)
			}
			if err := tp.apply(0x190, decoder.Message{Kind: decoder.KindEvent, Event: decoder.Event{
				ID: []byte("big"), Topic: "orders", Value: bytes.Repeat([]byte("x"), tt.value)}}); err != nil {
				t.Fatal(err)
			}
			if err := tp.apply(0x1a0, decoder.Message{Kind: decoder.KindCommit, EndLSN: 0x200}); err != nil {
				t.Fatal(err)
			}
			tp.prod.answer(tooLarge)
			tp.waitIdle(t)
			if tp.prod.aloneCalls != tt.aloneCalls {
				t.Errorf("produced alone %d times, want %d", tp.prod.aloneCalls, tt.aloneCalls)
			}
			if got := len(tp.store.ids()); got != tt.parked {
				t.Errorf("%d parked, want %d", got, tt.parked)
			}
			if got, want := tp.Count.Events.Load(), int64(1-tt.parked); got != want {
				t.Errorf("%d delivered, want %d", got, want)
			}
			if got := tp.Tracker.Safe(); got != 0x200 {
				t.Errorf("safe %s, want 0/200", got)
			}
		})
	}
}

// TestPipelineBatchMatesGoAloneInOrder: one record the broker refuses
// fails its whole batch (and franz-go every record buffered behind it);
// each is produced again beside the stream (together, or alone), in the
// order they failed, and only the record that fails alone too is parked.
func TestPipelineBatchMatesGoAloneInOrder(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	tp.prod.aloneByID = map[string]error{"b": kerr.InvalidRecord}
	tp.tx(t, 0x200, nil, "a", "b", "c")
	tp.tx(t, 0x300, nil, "d")
	tp.prod.answer(kerr.InvalidRecord)
	tp.waitIdle(t)
	tp.prod.mu.Lock()
	beside := slices.Clone(tp.prod.beside)
	tp.prod.mu.Unlock()
	// Each goes again first in stream order; b, failing with the others
	// of its round, goes again alone after, and so may c, which the
	// fake fails behind b when they share a round (a, b and c before d
	// is queued).
	var first []string
	for _, id := range beside {
		if !slices.Contains(first, id) {
			first = append(first, id)
		}
	}
	if got := strings.Join(first, ","); got != "a,b,c,d" {
		t.Fatalf("produced again in the order %s, want each first in the order a,b,c,d", strings.Join(beside, ","))
	}
	if got := tp.store.ids(); len(got) != 1 || !strings.HasPrefix(got[0], "FAILED b:") {
		t.Fatalf("parked %q, want only b", got)
	}
	if got := tp.Tracker.Safe(); got != 0x300 {
		t.Fatalf("safe %s, want 0/300", got)
	}
}

// TestPipelineLogsByCause: a thousand poison rows of one cause give one
// line at once and one summary, not a line per event.
func TestPipelineLogsByCause(t *testing.T) {
	tp := newTestPipeline(t, &fakeStore{})
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tp.Causes = delivery.NewCauseLog(tp.Log, time.Minute, func() time.Time { return clock })
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprintf("e%d", i)
	}
	tp.tx(t, 0x200, errors.New(`illegal topic "x y": not allowed`), ids...)
	tp.tx(t, 0x300, errors.New("headers column is not a JSON object"), "h1", "h2")
	tp.waitIdle(t)
	if n := tp.logs.count("event cannot be delivered"); n != 2 {
		t.Fatalf("%d lines for 1002 undeliverable events of two causes, want 2 (one per cause)", n)
	}
	clock = clock.Add(time.Minute)
	tp.Causes.Flush()
	if n := tp.logs.count("more events of the same cause"); n != 2 {
		t.Fatalf("%d summary lines, want 2", n)
	}
	if n := tp.logs.count("events=999"); n != 1 {
		t.Fatalf("no summary counting the other 999 events:\n%s", tp.logs.String())
	}
	tp.Causes.Flush() // nothing new: nothing more
	if n := tp.logs.count("more events of the same cause"); n != 2 {
		t.Fatalf("%d summary lines after an empty interval, want 2", n)
	}
}

func TestPipelineRejectsAStreamOutOfOrder(t *testing.T) {
	tests := []struct {
		msg  decoder.Message
		want string
	}{
		{decoder.Message{Kind: decoder.KindCommit, EndLSN: 0x200}, "commit at 0/180 without a begin"},
		{decoder.Message{Kind: decoder.KindEvent}, "insert at 0/180 outside a transaction"},
	}
	for _, tt := range tests {
		tp := newTestPipeline(t, &fakeStore{})
		err := tp.apply(0x180, tt.msg)
		if err == nil || err.Error() != tt.want {
			t.Errorf("apply(%v) = %v, want %q", tt.msg.Kind, err, tt.want)
		}
	}
}
