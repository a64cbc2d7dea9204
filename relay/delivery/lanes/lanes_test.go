package lanes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/status"
)

// fakeSender answers each request with answer (nil: delivered), and
// keeps the values of the records each request delivered, in order.
type fakeSender struct {
	mu        sync.Mutex
	requests  int
	delivered [][]string
	answer    func(vals []string) Answer
	delay     time.Duration
}

func (f *fakeSender) Send(ctx context.Context, recs []*kgo.Record) Answer {
	vals := make([]string, len(recs))
	for i, r := range recs {
		vals[i] = string(r.Value)
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return Answer{Err: ctx.Err(), Retry: true}
		}
	}
	f.mu.Lock()
	f.requests++
	answer := f.answer
	f.mu.Unlock()
	var a Answer
	if answer != nil {
		a = answer(vals)
	}
	if a.Err == nil {
		f.mu.Lock()
		f.delivered = append(f.delivered, vals)
		f.mu.Unlock()
	}
	return a
}

// deliveredOf returns the values delivered of key prefix p (values are
// "key/n"), in the order the receiver took them.
func (f *fakeSender) deliveredOf(p string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, req := range f.delivered {
		for _, v := range req {
			if strings.HasPrefix(v, p+"/") {
				out = append(out, v)
			}
		}
	}
	return out
}

// outcomes collects each record's outcome, in the order of the calls.
type outcomes struct {
	mu    sync.Mutex
	order []string
	errs  map[string]error
	all   chan struct{}
	want  int
}

func newOutcomes(want int) *outcomes {
	return &outcomes{errs: map[string]error{}, all: make(chan struct{}), want: want}
}

func (o *outcomes) done(r *kgo.Record, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.order = append(o.order, string(r.Value))
	o.errs[string(r.Value)] = err
	if len(o.order) == o.want {
		close(o.all)
	}
}

func (o *outcomes) wait(t *testing.T) {
	t.Helper()
	select {
	case <-o.all:
	case <-time.After(10 * time.Second):
		o.mu.Lock()
		defer o.mu.Unlock()
		t.Fatalf("%d of %d records called back", len(o.order), o.want)
	}
}

func rec(key string, n int) *kgo.Record {
	return &kgo.Record{Topic: "t", Key: []byte(key), Value: fmt.Appendf(nil, "%s/%d", key, n)}
}

// quick makes the retries of a test short.
func quick(c Config) Config {
	c.Backoff = func(int, time.Duration) time.Duration { return 5 * time.Millisecond }
	if c.Publisher == "" {
		c.Publisher = "partner"
	}
	return c
}

// TestProduceKeepsEachKeysOrder: records of many keys, sent by requests
// that take a varying time on eight lanes, reach the receiver and are
// called back in each key's order.
func TestProduceKeepsEachKeysOrder(t *testing.T) {
	for _, batch := range []int{1, 4} {
		t.Run(fmt.Sprint("batch ", batch), func(t *testing.T) {
			s := &fakeSender{delay: 200 * time.Microsecond}
			p := New(s, quick(Config{Batch: batch}))
			defer p.Close()
			keys, per := 20, 30
			o := newOutcomes(keys * per)
			for n := range per {
				for k := range keys {
					p.Produce(context.Background(), rec(fmt.Sprint("k", k), n), o.done)
				}
			}
			o.wait(t)
			for k := range keys {
				key := fmt.Sprint("k", k)
				want := make([]string, per)
				for n := range per {
					want[n] = fmt.Sprintf("%s/%d", key, n)
				}
				if got := s.deliveredOf(key); !slices.Equal(got, want) {
					t.Fatalf("key %s reached the receiver as %v, want %v", key, got, want)
				}
				var called []string
				for _, v := range o.order {
					if strings.HasPrefix(v, key+"/") {
						called = append(called, v)
					}
				}
				if !slices.Equal(called, want) {
					t.Fatalf("key %s called back as %v, want %v", key, called, want)
				}
			}
			for v, err := range o.errs {
				if err != nil {
					t.Fatalf("%s: %v", v, err)
				}
			}
		})
	}
}

// TestProduceRetriesInPlace: answers the receiver may change its mind
// about are tried again, and the record is delivered, not parked.
func TestProduceRetriesInPlace(t *testing.T) {
	fails := 2
	s := &fakeSender{}
	s.answer = func([]string) Answer {
		if fails > 0 {
			fails--
			return Answer{Err: errors.New("503 Service Unavailable"), Retry: true}
		}
		return Answer{}
	}
	p := New(s, quick(Config{Lanes: 1}))
	defer p.Close()
	o := newOutcomes(1)
	p.Produce(context.Background(), rec("k", 0), o.done)
	o.wait(t)
	if err := o.errs["k/0"]; err != nil || s.requests != 3 {
		t.Fatalf("outcome %v after %d requests, want delivered after 3", err, s.requests)
	}
}

// TestProduceRefusalIsPermanent: a refusal (a 4xx) is called back at once
// as an *Error, which at-least-once delivery parks: permanent, not
// Kafka's, and never the session's end.
func TestProduceRefusalIsPermanent(t *testing.T) {
	s := &fakeSender{answer: func([]string) Answer { return Answer{Err: errors.New("422 Unprocessable Entity")} }}
	p := New(s, quick(Config{}))
	defer p.Close()
	o := newOutcomes(1)
	p.Produce(context.Background(), rec("k", 0), o.done)
	o.wait(t)
	err := o.errs["k/0"]
	if !IsError(err) || !sink.Permanent(err) || sink.ProducerRefused(err) || sink.MaybeTheBatch(err) || s.requests != 1 {
		t.Fatalf("outcome %v (permanent %v, producer refused %v) after %d requests, want a permanent *Error after 1",
			err, sink.Permanent(err), sink.ProducerRefused(err), s.requests)
	}
	if !strings.Contains(err.Error(), "publisher partner: the receiver refused it: 422") {
		t.Fatalf("error %q does not say which publisher refused it and how", err)
	}
}

// TestProduceOutage: a receiver that keeps failing makes the first
// request give up after RetryFor, and every record after it is called
// back at once, unsent, but for one probe every ProbeEvery; the outage
// is logged once as it begins and once as it ends.
func TestProduceOutage(t *testing.T) {
	var down sync.Mutex
	up := false
	s := &fakeSender{}
	s.answer = func([]string) Answer {
		down.Lock()
		defer down.Unlock()
		if up {
			return Answer{}
		}
		return Answer{Err: errors.New("connection refused"), Retry: true}
	}
	var logs syncbuf.Buffer
	p := New(s, quick(Config{Lanes: 2, RetryFor: 50 * time.Millisecond, ProbeEvery: time.Hour,
		Log: slog.New(slog.NewTextHandler(&logs, nil))}))
	defer p.Close()
	o := newOutcomes(1)
	p.Produce(context.Background(), rec("a", 0), o.done)
	o.wait(t)
	var e *Error
	if err := o.errs["a/0"]; !errors.As(err, &e) || e.Retried <= 0 || e.NotSent || s.requests < 2 {
		t.Fatalf("first record: %v after %d requests, want an *Error after retries of about 50ms", err, s.requests)
	}
	before := s.requests
	o = newOutcomes(100)
	for n := range 100 {
		p.Produce(context.Background(), rec(fmt.Sprint("k", n%7), n), o.done)
	}
	o.wait(t)
	// The probe due at once after the outage began is the only request.
	if got := s.requests - before; got > 1 {
		t.Fatalf("%d requests while the receiver was failing, want at most the one probe", got)
	}
	for v, err := range o.errs {
		if !errors.As(err, &e) || !sink.Permanent(err) {
			t.Fatalf("%s: %v, want a permanent *Error", v, err)
		}
	}
	if n := strings.Count(logs.String(), "the webhook receiver is failing"); n != 1 {
		t.Fatalf("the outage's start logged %d times, want once:\n%s", n, logs.String())
	}
	// Back up: the next probe delivers, and ends the outage.
	down.Lock()
	up = true
	down.Unlock()
	p.health.mu.Lock()
	p.health.nextProbe = time.Now()
	p.health.mu.Unlock()
	o = newOutcomes(10)
	for n := range 10 {
		p.Produce(context.Background(), rec("b", n), o.done)
	}
	o.wait(t)
	if err := o.errs["b/9"]; err != nil {
		t.Fatalf("after the receiver came back: %v", err)
	}
	if n := strings.Count(logs.String(), "the webhook receiver answers again"); n != 1 {
		t.Fatalf("the outage's end logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestProduceDoesNotSendHeldKeys: a record whose key is held is called
// back with delivery.ErrNotSent, unsent.
func TestProduceDoesNotSendHeldKeys(t *testing.T) {
	s := &fakeSender{}
	p := New(s, quick(Config{Held: func(r *kgo.Record) bool { return string(r.Key) == "held" }}))
	defer p.Close()
	o := newOutcomes(2)
	p.Produce(context.Background(), rec("held", 0), o.done)
	p.Produce(context.Background(), rec("free", 0), o.done)
	o.wait(t)
	if !errors.Is(o.errs["held/0"], delivery.ErrNotSent) || o.errs["free/0"] != nil || len(s.deliveredOf("held")) != 0 {
		t.Fatalf("held: %v, free: %v, delivered %v", o.errs["held/0"], o.errs["free/0"], s.delivered)
	}
}

// TestProduceGroupStopsAKeyAtItsFailure: in a group, a key's records
// after one that failed are not sent; other keys go on.
func TestProduceGroupStopsAKeyAtItsFailure(t *testing.T) {
	s := &fakeSender{answer: func(vals []string) Answer {
		if slices.Contains(vals, "a/1") {
			return Answer{Err: errors.New("400 Bad Request")}
		}
		return Answer{}
	}}
	p := New(s, quick(Config{}))
	defer p.Close()
	recs := []*kgo.Record{rec("a", 0), rec("b", 0), rec("a", 1), rec("b", 1), rec("a", 2)}
	errs := p.ProduceGroup(context.Background(), recs)
	if errs[0] != nil || errs[1] != nil || errs[3] != nil || !IsError(errs[2]) || !errors.Is(errs[4], delivery.ErrNotSent) {
		t.Fatalf("outcomes %v", errs)
	}
	if got := s.deliveredOf("a"); !slices.Equal(got, []string{"a/0"}) {
		t.Fatalf("key a delivered %v, want only a/0", got)
	}
}

// TestRefusesALargeRecord: a record over MaxBytes is refused before it is
// sent, permanently.
func TestRefusesALargeRecord(t *testing.T) {
	p := New(&fakeSender{}, quick(Config{MaxBytes: 10}))
	defer p.Close()
	if err := p.Refuses(&kgo.Record{Value: make([]byte, 11)}); !IsError(err) || !sink.Permanent(err) {
		t.Fatalf("Refuses: %v", err)
	}
	if err := p.Refuses(&kgo.Record{Value: make([]byte, 10)}); err != nil {
		t.Fatalf("Refuses a record of the limit: %v", err)
	}
}

// TestCloseLeavesQueuedRecordsInFlight: records queued when the lanes
// close are called back with an error at-least-once delivery leaves in
// flight (not permanent), for the next session.
func TestCloseLeavesQueuedRecordsInFlight(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	s := &fakeSender{answer: func([]string) Answer {
		started <- struct{}{}
		<-release
		return Answer{}
	}}
	p := New(s, quick(Config{Lanes: 1}))
	o := newOutcomes(3)
	for n := range 3 {
		p.Produce(context.Background(), rec("k", n), o.done)
	}
	<-started
	p.stop() // as Close begins, while k/0's request is under way
	close(release)
	p.Close()
	o.wait(t)
	if err := o.errs["k/0"]; err != nil {
		t.Fatalf("the request under way: %v, want it ended and delivered", err)
	}
	for _, v := range []string{"k/1", "k/2"} {
		if err := o.errs[v]; !errors.Is(err, context.Canceled) || sink.Permanent(err) {
			t.Fatalf("%s: %v, want an error that leaves it in flight (not permanent), for the next session", v, err)
		}
	}
}

// TestProduceNeverBlocks: Produce returns while every lane waits on the
// receiver.
func TestProduceNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	s := &fakeSender{answer: func([]string) Answer { <-release; return Answer{} }}
	p := New(s, quick(Config{Lanes: 2}))
	defer p.Close()
	defer close(release)
	o := newOutcomes(1000)
	done := make(chan struct{})
	go func() {
		for n := range 1000 {
			p.Produce(context.Background(), rec(fmt.Sprint("k", n), n), o.done)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Produce blocked while the receiver did not answer")
	}
}

// TestProduceWaitForThePoller: for the poller, a refusal counts as an
// attempt (permanent), a failure the receiver may recover from does not;
// while the receiver is failing, ProduceWait first waits for the next
// probe.
func TestProduceWaitForThePoller(t *testing.T) {
	var mu sync.Mutex
	answer := Answer{Err: errors.New("503 Service Unavailable"), Retry: true}
	s := &fakeSender{answer: func([]string) Answer { mu.Lock(); defer mu.Unlock(); return answer }}
	p := New(s, quick(Config{RetryFor: 20 * time.Millisecond, ProbeEvery: 200 * time.Millisecond}))
	defer p.Close()
	errs := p.ProduceWait(context.Background(), []*kgo.Record{rec("a", 0)})
	var e *Error
	if !errors.As(errs[0], &e) || sink.Permanent(errs[0]) {
		t.Fatalf("a failure for RetryFor: %v (permanent %v), want an *Error that is no attempt", errs[0], sink.Permanent(errs[0]))
	}
	// The outage began: the probe is due at once, then every 200 ms.
	p.ProduceWait(context.Background(), []*kgo.Record{rec("a", 1)})
	start := time.Now()
	errs = p.ProduceWait(context.Background(), []*kgo.Record{rec("a", 2)})
	if waited := time.Since(start); waited < 150*time.Millisecond || sink.Permanent(errs[0]) {
		t.Fatalf("waited %s for the next probe (want about 200ms); outcome %v", waited, errs[0])
	}
	mu.Lock()
	answer = Answer{Err: errors.New("422 Unprocessable Entity")}
	mu.Unlock()
	p.health.mu.Lock()
	p.health.nextProbe = time.Now() // the next probe is due
	p.health.mu.Unlock()
	errs = p.ProduceWait(context.Background(), []*kgo.Record{rec("a", 3)})
	if !errors.As(errs[0], &e) || !sink.Permanent(errs[0]) {
		t.Fatalf("a refusal: %v, want a permanent *Error (an attempt)", errs[0])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if errs = p.ProduceWait(ctx, []*kgo.Record{rec("a", 4)}); errs[0] == nil || sink.Permanent(errs[0]) {
		t.Fatalf("an ended context: %v, want its error, no attempt", errs[0])
	}
}

// TestSlowReceiverParks: a receiver that answers, but more slowly than
// the records come, has the records that waited in their lane longer than
// MaxWait, or while the lanes held MaxQueued, called back unsent with an
// *Error that says so (to be parked), and a key's later records held
// behind its parked one (Held) are never sent: each key's records reach
// the receiver in order, none after one of its key was parked. Produce
// never waits on the receiver.
func TestSlowReceiverParks(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    Config
	}{
		{"waited past MaxWait", Config{MaxWait: 30 * time.Millisecond}},
		{"the lanes held MaxQueued", Config{MaxWait: time.Hour, MaxQueued: 5, ShareWait: time.Millisecond}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSender{delay: 10 * time.Millisecond}
			const keys, per = 4, 20
			o := newOutcomes(keys * per)
			var mu sync.Mutex
			parked := map[string]bool{} // keys with a parked record, as the ledger holds them
			c := tt.c
			c.Lanes = 2
			c.Held = func(r *kgo.Record) bool {
				mu.Lock()
				defer mu.Unlock()
				return parked[string(r.Key)]
			}
			obs := &countingObserver{}
			c.Observer = obs
			p := New(f, quick(c))
			defer p.Close()
			done := func(r *kgo.Record, err error) {
				var e *Error
				if errors.As(err, &e) {
					mu.Lock()
					parked[string(r.Key)] = true
					mu.Unlock()
				}
				o.done(r, err)
			}
			start := time.Now()
			for n := range per {
				for k := range keys {
					p.Produce(context.Background(), rec(fmt.Sprintf("k%d", k), n), done)
				}
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("Produce took %s for %d records: it waited on the receiver", d, keys*per)
			}
			o.wait(t)
			slow, held := 0, 0
			o.mu.Lock()
			for v, err := range o.errs {
				var e *Error
				switch {
				case errors.As(err, &e) && e.Waited > 0:
					slow++
					if !strings.HasPrefix(e.Error(), status.BehindPrefix) || !strings.Contains(e.Error(), "slower than the events arrive") {
						t.Errorf("%s: %v", v, e)
					}
				case errors.Is(err, delivery.ErrNotSent):
					held++
				case err != nil:
					t.Errorf("%s: %v", v, err)
				}
			}
			o.mu.Unlock()
			if slow == 0 {
				t.Fatalf("no record parked as slow; the receiver took %d requests", f.requests)
			}
			if n := obs.parkedOf(ParkedSlow); n != slow {
				t.Errorf("the observer was told of %d slow records, want %d", n, slow)
			}
			for k := range keys {
				key := fmt.Sprintf("k%d", k)
				got := f.deliveredOf(key)
				for i, v := range got {
					if want := fmt.Sprintf("%s/%d", key, i); v != want {
						t.Fatalf("key %s delivered %v: want a prefix of its records in order, none after its parked one", key, got)
					}
				}
			}
			t.Logf("%d records: %d sent, %d parked as slow, %d held behind them", keys*per, keys*per-slow-held, slow, held)
		})
	}
}

// countingObserver counts the records it is told were parked, by reason.
type countingObserver struct {
	noObserver
	mu     sync.Mutex
	parked map[string]int
}

func (c *countingObserver) Parked(reason string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parked == nil {
		c.parked = map[string]int{}
	}
	c.parked[reason] += n
}

func (c *countingObserver) parkedOf(reason string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parked[reason]
}

// TestBlockedReceiverParks: every lane is in a request the receiver takes
// long to answer (up to its timeout): the records that keep coming are
// not held past MaxQueued, nor past MaxQueuedBytes, nor MaxWait, but
// called back to be parked while the lanes wait, and a key's record whose
// earlier record is in the request under way waits its turn.
func TestBlockedReceiverParks(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    Config
		// within says the lanes hold no more than they may, busy/1 aside
		within func(p *Producer) bool
	}{
		{"MaxQueued", Config{MaxQueued: 10, MaxWait: time.Hour, ShareWait: 20 * time.Millisecond}, func(p *Producer) bool { return p.queued.Load() <= 10 }},
		{"MaxQueuedBytes", Config{MaxQueuedBytes: 100, MaxWait: time.Hour, ShareWait: 20 * time.Millisecond}, func(p *Producer) bool { return p.qbytes.Load() <= 100 }},
		{"MaxWait", Config{MaxWait: 40 * time.Millisecond}, func(p *Producer) bool { return p.queued.Load() <= 1 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			f := &fakeSender{answer: func([]string) Answer { <-release; return Answer{} }}
			const n = 200
			o := newOutcomes(n)
			c := tt.c
			c.Lanes = 2
			p := New(f, quick(c))
			defer p.Close()
			free := sync.OnceFunc(func() { close(release) })
			defer free()
			p.Produce(context.Background(), rec("busy", 0), o.done) // its lane waits on the receiver
			requests := func() int {
				f.mu.Lock()
				defer f.mu.Unlock()
				return f.requests
			}
			for deadline := time.Now().Add(5 * time.Second); requests() == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			p.Produce(context.Background(), rec("busy", 1), o.done) // behind it: waits its turn
			for i := range n - 2 {
				p.Produce(context.Background(), rec(fmt.Sprintf("k%d", i), 0), o.done)
			}
			for deadline := time.Now().Add(5 * time.Second); !tt.within(p) && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if !tt.within(p) {
				t.Fatalf("the lanes hold %d records of %d bytes while the receiver holds every lane", p.queued.Load(), p.qbytes.Load())
			}
			o.mu.Lock()
			_, calledBack := o.errs["busy/1"]
			o.mu.Unlock()
			if calledBack {
				t.Error("busy/1 was called back while busy/0, of its key, was in the request under way")
			}
			free()
			o.wait(t)
			var e *Error
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.errs["busy/0"] != nil || !errors.As(o.errs["k150/0"], &e) || e.Waited == 0 {
				t.Errorf("busy/0: %v, k150/0: %v; want busy/0 delivered and k150/0 parked as slow", o.errs["busy/0"], o.errs["k150/0"])
			}
		})
	}
}

// TestKeepingUpParksNone: a receiver slower than a backlog is read, but
// that keeps up (each record waits less than ShareWait), has none of its
// records parked, however long the lanes hold their share: parking and
// the poller would cost more than the wait.
func TestKeepingUpParksNone(t *testing.T) {
	f := &fakeSender{delay: time.Millisecond}
	const n = 200
	o := newOutcomes(n)
	p := New(f, quick(Config{Lanes: 2, MaxQueued: 10, MaxQueuedBytes: 100, ShareWait: time.Second}))
	defer p.Close()
	for i := range n {
		p.Produce(context.Background(), rec(fmt.Sprintf("k%d", i%7), i), o.done)
	}
	o.wait(t)
	o.mu.Lock()
	defer o.mu.Unlock()
	for v, err := range o.errs {
		if err != nil {
			t.Fatalf("%s: %v; want every record delivered", v, err)
		}
	}
}

// TestErrorSays: an *Error says what became of the record, starting with
// what happened; one that waited for a slow receiver reads as behind, not
// failing (status.BehindPrefix, which the progress table's heads read so),
// with how long it waited.
func TestErrorSays(t *testing.T) {
	for _, tt := range []struct {
		err  Error
		want string
	}{
		{Error{Publisher: "partner", Answer: "slow", Waited: 5123 * time.Millisecond},
			"waiting: the receiver of publisher partner is slower than the events arrive (waited 5.1s in its lane); its poller sends it"},
		{Error{Publisher: "partner", Answer: "slow", Waited: 40 * time.Millisecond},
			"waiting: the receiver of publisher partner is slower than the events arrive (waited 40ms in its lane); its poller sends it"},
		{Error{Publisher: "partner", Answer: "503 Service Unavailable", Retried: 5 * time.Second},
			"publisher partner: the receiver failed for 5s: 503 Service Unavailable"},
		{Error{Publisher: "partner", Answer: "410 Gone"}, "publisher partner: the receiver refused it: 410 Gone"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%+v says\n%q\nwant\n%q", tt.err, got, tt.want)
		}
	}
	if !strings.HasPrefix((&Error{Publisher: "p", Waited: time.Second}).Error(), status.BehindPrefix) {
		t.Errorf("a slow receiver's record does not begin with status.BehindPrefix %q", status.BehindPrefix)
	}
	// Behind, for the ledger (reason slow), and no other *Error.
	if !delivery.IsBehind(&Error{Publisher: "p", Waited: time.Second}) {
		t.Error("a slow receiver's record is not behind (delivery.IsBehind)")
	}
	for _, e := range []*Error{{Publisher: "p", Retried: time.Second}, {Publisher: "p", NotSent: true}, {Publisher: "p"}} {
		if delivery.IsBehind(e) {
			t.Errorf("%v is behind (delivery.IsBehind): it failed", e)
		}
	}
}
