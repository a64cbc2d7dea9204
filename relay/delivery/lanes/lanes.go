package lanes

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/status"
)

// Answer is what a receiver said to one request.
type Answer struct {
	// Err is nil when the receiver took every record of the request (a
	// 2xx), else what it said, or why it could not be asked.
	Err error
	// Retry says the receiver may take the request later: a 5xx, a 408,
	// a 429, a timeout, a connection that failed. Without it, Err is a
	// refusal of the records themselves (any other 4xx).
	Retry bool
	// RetryAfter is the wait the receiver asked for (Retry-After); 0 if
	// it asked none.
	RetryAfter time.Duration
	// Class is the request's class for the publisher's metrics
	// (webhook.Result.Class: "2xx", "5xx", "timeout", …); "" when no
	// request reached the wire (it could not be made, or ctx ended), and
	// then the request is not counted.
	Class string
	// Latency is the time from sending the request to its answer, or to
	// the timeout.
	Latency time.Duration
}

// Observer is told what a publisher's lanes do, for its metrics
// (*metrics.WebhookPublisher is one). The lanes call it from their
// goroutines, side by side: it must be safe for concurrent use, and
// quick.
type Observer interface {
	// Request is told of each request sent, with its Answer's Class and
	// Latency; not of one whose Class is "", nor of one whose context
	// ended before its answer.
	Request(class string, latency time.Duration)
	// Retried is told of each request tried again in place, before it is
	// sent again (and told to Request once more).
	Retried()
	// Parked is told of n records of the stream that the lanes called
	// back with an *Error, to be parked for the publisher, and why: one
	// of ParkedRefused, ParkedFailed, ParkedNotSent, ParkedSlow. Not of the poller's
	// records (ProduceWait), which are parked already.
	Parked(reason string, n int)
	// Failing is told true as the receiver's outage begins, false as it
	// ends, or as the lanes close during one (a later session learns it
	// again); once each, in that order.
	Failing(failing bool)
}

// The reasons of Observer.Parked.
const (
	// ParkedRefused: the receiver refused the records (a 4xx, a 3xx).
	ParkedRefused = "refused"
	// ParkedFailed: the receiver failed for Config.RetryFor.
	ParkedFailed = "failed"
	// ParkedNotSent: the receiver was failing, and the records were not
	// sent.
	ParkedNotSent = "not_sent"
	// ParkedSlow: the records waited in their lane longer than
	// Config.MaxWait, or the lanes held more than Config.MaxQueued: the
	// receiver answers, but more slowly than the events arrive.
	ParkedSlow = "slow"
)

// noObserver is Config.Observer's default: it is told nothing.
type noObserver struct{}

func (noObserver) Request(string, time.Duration) {}
func (noObserver) Retried()                      {}
func (noObserver) Parked(string, int)            {}
func (noObserver) Failing(bool)                  {}

// Sender sends records to one receiver, in one request.
type Sender interface {
	// Send sends recs, a request's records in order, and returns what the
	// receiver answered. It returns once the answer is known, or ctx ended.
	Send(ctx context.Context, recs []*kgo.Record) Answer
}

// Config is a publisher's lanes. Zero fields take the defaults.
type Config struct {
	// Publisher names the publisher in the log and in errors.
	Publisher string
	// Lanes is how many requests may be under way at once (8).
	Lanes int
	// Batch is how many records one request carries at most (1).
	Batch int
	// RetryFor is how long a request is tried again in place before its
	// records are called back with an *Error, for the poller (5 s).
	RetryFor time.Duration
	// ProbeEvery is how often one request tries while the receiver keeps
	// failing (1 s); the others' records are called back at once.
	ProbeEvery time.Duration
	// MaxWait is how long a record of the stream may wait in its lane
	// before it is sent: one that waited longer is called back with an
	// *Error (Waited), which parks it for the poller, so that a receiver
	// slower than the events arrive holds neither the stream nor Kafka's
	// deliveries (5 s).
	MaxWait time.Duration
	// MaxQueued and MaxQueuedBytes are the lanes' share of the session's
	// in-flight limits, which the records they hold waiting count against
	// (their count, and their bytes as sink.RecordBytes counts them):
	// while they hold either, a record that waited past ShareWait is
	// called back so, even while every lane is in a request (0: no share
	// but MaxWait). A receiver that keeps up, but more slowly than a
	// backlog is read, fills the share with records that wait less, and
	// none is parked: parking and the poller cost more than waiting.
	MaxQueued      int
	MaxQueuedBytes int64
	// ShareWait is how long a record waits, while the lanes hold their
	// share, before it is called back to be parked (1 s; at most MaxWait).
	ShareWait time.Duration
	// MaxBytes is the most bytes of a record the publisher takes (key,
	// value and headers); a larger one is refused before it is sent
	// (1 MiB).
	MaxBytes int
	// OrderKey returns the key whose records keep their order, nil for a
	// record that keeps none (the default: the record's key).
	OrderKey func(*kgo.Record) []byte
	// Held reports whether r's key is held behind a parked record: such
	// a record is not sent, but called back with delivery.ErrNotSent
	// (nil: none is).
	Held func(r *kgo.Record) bool
	// Backoff is the wait before the attempt after attempt (0, 1, …),
	// given the receiver's Retry-After (exponential from 100 ms to 5 s,
	// with jitter, or Retry-After when longer).
	Backoff func(attempt int, retryAfter time.Duration) time.Duration
	// Log is where the receiver's outages are told (slog.Default()).
	Log *slog.Logger
	// Observer is told of the requests, the retries, the records called
	// back to be parked and the outages, for the metrics (nil: nothing
	// is told).
	Observer Observer
}

// withDefaults returns c with its zero fields set.
func (c Config) withDefaults() Config {
	if c.Lanes <= 0 {
		c.Lanes = 8
	}
	if c.Batch <= 0 {
		c.Batch = 1
	}
	if c.RetryFor <= 0 {
		c.RetryFor = 5 * time.Second
	}
	if c.ProbeEvery <= 0 {
		c.ProbeEvery = time.Second
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 5 * time.Second
	}
	if c.ShareWait <= 0 {
		c.ShareWait = time.Second
	}
	c.ShareWait = min(c.ShareWait, c.MaxWait)
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 20
	}
	if c.OrderKey == nil {
		c.OrderKey = func(r *kgo.Record) []byte { return r.Key }
	}
	if c.Backoff == nil {
		c.Backoff = backoff
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = noObserver{}
	}
	return c
}

// backoff is Config.Backoff's default.
func backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := 100 * time.Millisecond << min(attempt, 6)
	d = min(d, 5*time.Second)
	d = d/2 + rand.N(d/2+1) // jitter, so that lanes do not try in step
	return max(d, retryAfter)
}

// Error is why a record was not delivered and is to be parked for its
// publisher: the receiver refused it, failed for longer than
// Config.RetryFor, or was failing and the record was not sent, or the
// record waited too long for a receiver slower than the load (Waited). It wraps
// nothing: whatever the receiver's error was (a TLS failure, a timeout),
// it is this publisher's, and must not read as Kafka's or as the
// session's end.
type Error struct {
	// Publisher is the publisher's name.
	Publisher string
	// Answer is the receiver's last answer, as text.
	Answer string
	// Retried is how long the request was tried; 0 if it was refused at
	// once, or not sent.
	Retried time.Duration
	// NotSent: the receiver was failing, and the record waited for no
	// request of its own.
	NotSent bool
	// Waited is how long the record waited in its lane before it was
	// called back unsent: the receiver answers more slowly than the
	// events arrive (Config.MaxWait, Config.MaxQueued); 0 otherwise.
	// Such a record is behind, not failing: its text begins with
	// status.BehindPrefix.
	Waited time.Duration
	// Batch: the receiver refused the request the record was in, with
	// others: the record goes again alone (delivery.ErrSendAgain).
	Batch bool
}

// FromPublisher names the publisher: an *Error is never Kafka's
// (delivery.PublisherError).
func (e *Error) FromPublisher() string { return e.Publisher }

// Behind reports whether the record waited for a receiver slower than the
// events arrive (Waited): not a failure (delivery.IsBehind).
func (e *Error) Behind() bool { return e.Waited > 0 }

// Is reports whether e is delivery.ErrSendAgain: a record refused with
// its batch. It wraps nothing else.
func (e *Error) Is(target error) bool { return e.Batch && target == delivery.ErrSendAgain }

// Error says what became of the record, for the status table and the log.
func (e *Error) Error() string {
	switch {
	case e.Waited > 0:
		// Behind, not failing: the status table's progress heads read the
		// prefix so (status.Heads), and the row's own words say so.
		return fmt.Sprintf("%sthe receiver of publisher %s is slower than the events arrive (waited %s in its lane); its poller sends it",
			status.BehindPrefix, e.Publisher, roundWait(e.Waited))
	case e.NotSent:
		return fmt.Sprintf("publisher %s: not sent, its receiver is failing (%s); its poller sends it once the receiver answers", e.Publisher, e.Answer)
	case e.Batch:
		return fmt.Sprintf("publisher %s: the receiver refused the batch it was in (%s); it goes again alone", e.Publisher, e.Answer)
	case e.Retried > 0:
		return fmt.Sprintf("publisher %s: the receiver failed for %s: %s", e.Publisher, e.Retried.Round(time.Millisecond), e.Answer)
	}
	return fmt.Sprintf("publisher %s: the receiver refused it: %s", e.Publisher, e.Answer)
}

// roundWait is d as an Error says it: to the tenth of a second from a
// second on, else to the millisecond.
func roundWait(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// errClosed is the outcome of the records queued when the producer
// closed: not delivered, they stay in flight (a context error is not
// permanent), and the next session sends them again.
var errClosed = fmt.Errorf("the publisher's lanes closed: %w", context.Canceled)

// entry is one record handed to Produce.
type entry struct {
	ctx  context.Context
	r    *kgo.Record
	done func(*kgo.Record, error)
	at   time.Time // when it was queued
	size int64     // its bytes (sink.RecordBytes)
}

// lane holds the records of its keys, in the order they came.
type lane struct {
	mu     sync.Mutex
	q      []entry
	closed bool          // the lane ended: Produce calls back at once
	wake   chan struct{} // one token: the queue may have records
	busy   []string      // the order keys of the request under way: reap leaves their records
	// turn is held while records are taken and called back unsent, by
	// the lane or by reap, so that a key's records are called back in
	// order and a park holds its key before a later record is taken.
	turn sync.Mutex
}

// Producer sends a publisher's records in lanes (see the package doc). It
// serves at-least-once delivery as its atleastonce.Producer, and is safe
// for concurrent use.
type Producer struct {
	s      Sender
	c      Config
	lanes  []*lane
	seed   maphash.Seed
	next   atomic.Uint32 // the lane of the next record without an order key
	queued atomic.Int64  // records in the lanes' queues
	qbytes atomic.Int64  // their bytes
	health health
	stop   context.CancelFunc
	ended  sync.WaitGroup
}

// New returns the producer of the publisher c names, which sends with s,
// and starts its lanes; Close stops them.
func New(s Sender, c Config) *Producer {
	c = c.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	p := &Producer{s: s, c: c, seed: maphash.MakeSeed(), stop: stop, lanes: make([]*lane, c.Lanes)}
	p.health.obs = c.Observer
	for i := range p.lanes {
		l := &lane{wake: make(chan struct{}, 1)}
		p.lanes[i] = l
		p.ended.Go(func() { p.run(ctx, l) })
	}
	p.ended.Go(func() { p.reapLoop(ctx) })
	return p
}

// Close stops the lanes once each ended its request under way; the
// records still queued are called back with an error that leaves them in
// flight, for the next session. An outage under way ends for the
// Observer: the lanes no longer know the receiver.
func (p *Producer) Close() {
	p.stop()
	p.ended.Wait()
	p.health.close()
}

// laneOf is the lane of r: its order key's, or the next one for a record
// that keeps no order.
func (p *Producer) laneOf(r *kgo.Record) int {
	key := p.c.OrderKey(r)
	if key == nil {
		return int(p.next.Add(1) % uint32(len(p.lanes)))
	}
	var h maphash.Hash
	h.SetSeed(p.seed)
	h.WriteString(r.Topic)
	h.WriteByte(0)
	h.Write(key)
	return int(h.Sum64() % uint64(len(p.lanes)))
}

// Produce queues r in its key's lane and returns; done is called once
// with its outcome, after the outcomes of the records of its key queued
// before it.
func (p *Producer) Produce(ctx context.Context, r *kgo.Record, done func(*kgo.Record, error)) {
	l := p.lanes[p.laneOf(r)]
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		done(r, errClosed)
		return
	}
	size := int64(sink.RecordBytes(r))
	l.q = append(l.q, entry{ctx: ctx, r: r, done: done, at: time.Now(), size: size})
	l.mu.Unlock()
	p.queued.Add(1)
	p.qbytes.Add(size)
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// ProduceAlone sends r in a request of its own and returns its outcome.
func (p *Producer) ProduceAlone(ctx context.Context, r *kgo.Record) error {
	err := p.send(ctx, []*kgo.Record{r})
	p.parked(err, 1)
	return err
}

// ProduceGroup sends recs beside the stream, each order key's in order,
// the keys side by side, and returns each one's outcome: once one of a
// key's fails, its later ones are not sent (delivery.ErrNotSent).
func (p *Producer) ProduceGroup(ctx context.Context, recs []*kgo.Record) []error {
	errs := p.produceGroup(ctx, recs)
	for _, err := range errs {
		p.parked(err, 1)
	}
	return errs
}

// parked tells the Observer of n records called back with err, if err is
// an *Error: to be parked.
func (p *Producer) parked(err error, n int) {
	var e *Error
	if !errors.As(err, &e) || e.Batch {
		return // delivered, or going again alone
	}
	switch {
	case e.Waited > 0:
		p.c.Observer.Parked(ParkedSlow, n)
	case e.NotSent:
		p.c.Observer.Parked(ParkedNotSent, n)
	case e.Retried > 0:
		p.c.Observer.Parked(ParkedFailed, n)
	default:
		p.c.Observer.Parked(ParkedRefused, n)
	}
}

// produceGroup is ProduceGroup, untold to the Observer's Parked.
func (p *Producer) produceGroup(ctx context.Context, recs []*kgo.Record) []error {
	errs := make([]error, len(recs))
	byLane := map[int][]int{}
	for i, r := range recs {
		li := p.laneOf(r)
		byLane[li] = append(byLane[li], i)
	}
	var wg sync.WaitGroup
	for _, idx := range byLane {
		wg.Go(func() { p.sendInOrder(ctx, recs, idx, errs) })
	}
	wg.Wait()
	return errs
}

// ProduceWait sends recs as ProduceGroup does, for the poller (its
// Producer): while the receiver is failing, it first waits for the next
// probe, or for ctx to end; a record the receiver may yet take (it failed
// for RetryFor, or was not sent) comes back as an error the poller counts
// as no attempt (it is an *Error that also wraps
// context.DeadlineExceeded, so sink.Permanent is false), and a refusal as
// the *Error, which counts towards DEAD.
func (p *Producer) ProduceWait(ctx context.Context, recs []*kgo.Record) []error {
	if err := p.health.waitProbe(ctx); err != nil {
		errs := make([]error, len(recs))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	errs := p.produceGroup(ctx, recs)
	for i, err := range errs {
		var e *Error
		if errors.As(err, &e) && (e.NotSent || e.Retried > 0) {
			errs[i] = fmt.Errorf("%w (%w)", e, errLater)
		}
	}
	return errs
}

// errLater marks a record the receiver may yet take: not an attempt.
var errLater = fmt.Errorf("the receiver may take it later: %w", context.DeadlineExceeded)

// sendInOrder sends the records of recs at idx, in order, Config.Batch
// at a time, and sets each one's outcome in errs; a record whose order
// key had one fail before it is not sent.
func (p *Producer) sendInOrder(ctx context.Context, recs []*kgo.Record, idx []int, errs []error) {
	failed := map[string]bool{}
	keyOf := func(i int) (string, bool) {
		k := p.c.OrderKey(recs[i])
		return recs[i].Topic + "\x00" + string(k), k != nil
	}
	for len(idx) > 0 {
		n := min(len(idx), p.c.Batch)
		chunk, send := idx[:n], make([]*kgo.Record, 0, n)
		sent := make([]int, 0, n)
		for _, i := range chunk {
			if k, ok := keyOf(i); ok && failed[k] {
				errs[i] = delivery.ErrNotSent
				continue
			}
			send, sent = append(send, recs[i]), append(sent, i)
		}
		idx = idx[n:]
		if len(send) == 0 {
			continue
		}
		outcomes := p.sendChunk(ctx, send)
		for j, i := range sent {
			errs[i] = outcomes[j]
			if k, ok := keyOf(i); ok && outcomes[j] != nil {
				failed[k] = true
			}
		}
	}
}

// sendChunk sends recs in one request and returns each one's outcome; a
// request of several records the receiver refuses is sent again one
// record at a time, in order, so that a record refused is refused for
// itself, and once one fails the later records of its order key are not
// sent (delivery.ErrNotSent).
func (p *Producer) sendChunk(ctx context.Context, recs []*kgo.Record) []error {
	errs := make([]error, len(recs))
	err := p.send(ctx, recs)
	if len(recs) == 1 || !errors.Is(batchRefused(err), delivery.ErrSendAgain) {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	failed := map[string]bool{}
	for i, r := range recs {
		k := p.c.OrderKey(r)
		key, ordered := r.Topic+"\x00"+string(k), k != nil
		if ordered && failed[key] {
			errs[i] = delivery.ErrNotSent
			continue
		}
		if errs[i] = p.send(ctx, recs[i:i+1]); errs[i] != nil && ordered {
			failed[key] = true
		}
	}
	return errs
}

// BatchMaxBytes is the most bytes of a record the publisher takes.
func (p *Producer) BatchMaxBytes() int { return p.c.MaxBytes }

// Refuses returns why the publisher would refuse r (larger than
// Config.MaxBytes), or nil.
func (p *Producer) Refuses(r *kgo.Record) error {
	if n := sink.RecordBytes(r); n > p.c.MaxBytes {
		return &Error{Publisher: p.c.Publisher,
			Answer: fmt.Sprintf("the record's %d bytes are more than the publisher's %d", n, p.c.MaxBytes)}
	}
	return nil
}

// SizeRefused: a receiver's own limit is not learnt.
func (p *Producer) SizeRefused(string) {}

// run is one lane: it sends its queue's records, Config.Batch at a time,
// until ctx ends; then it calls back what is left with errClosed.
func (p *Producer) run(ctx context.Context, l *lane) {
	for {
		if ctx.Err() != nil {
			p.closeLane(l)
			return
		}
		if send, took := p.takeTurn(l); took {
			p.sendBatch(send)
			l.mu.Lock()
			l.busy = l.busy[:0]
			l.mu.Unlock()
			continue
		}
		select {
		case <-l.wake:
		case <-ctx.Done():
		}
	}
}

// takeTurn takes the next batch of l's queue, marks its keys busy, and
// calls back, in order, those of its records not to send (triage); it
// returns those to send, and whether it took any.
func (p *Producer) takeTurn(l *lane) (send []entry, took bool) {
	l.turn.Lock()
	defer l.turn.Unlock()
	batch := l.take(p.c.Batch, p.keyOf)
	if len(batch) == 0 {
		return nil, false
	}
	n, b := p.dequeued(batch)
	over := p.over(n, b)
	return p.triage(batch, over), true
}

// closeLane ends l: every record of its queue, and any Produce after, is
// called back with errClosed.
func (p *Producer) closeLane(l *lane) {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	for batch := l.take(math.MaxInt, nil); len(batch) > 0; batch = l.take(math.MaxInt, nil) {
		p.dequeued(batch)
		for _, e := range batch {
			e.done(e.r, errClosed)
		}
	}
}

// take removes up to n records from the head of l's queue; with keyOf,
// it marks their order keys busy (the request under way).
func (l *lane) take(n int, keyOf func(*kgo.Record) (string, bool)) []entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = min(n, len(l.q))
	if n == 0 {
		return nil
	}
	batch := make([]entry, n)
	copy(batch, l.q)
	clear(l.q[:n])
	l.q = l.q[n:]
	if len(l.q) == 0 {
		l.q = nil // let the backing array go
	}
	if keyOf != nil {
		for _, e := range batch {
			if k, ok := keyOf(e.r); ok {
				l.busy = append(l.busy, k)
			}
		}
	}
	return batch
}

// dequeued counts batch out of the lanes' queues, and returns what they
// hold then: records and bytes.
func (p *Producer) dequeued(batch []entry) (n, bytes int64) {
	var b int64
	for _, e := range batch {
		b += e.size
	}
	return p.queued.Add(-int64(len(batch))), p.qbytes.Add(-b)
}

// due reports whether a record that waited so long is to be parked: past
// Config.MaxWait, or past ShareWait while the lanes hold their share
// (over).
func (p *Producer) due(waited time.Duration, over bool) bool {
	return waited > p.c.MaxWait || over && waited > p.c.ShareWait
}

// over reports whether the lanes, holding n records of bytes, hold their
// share (Config.MaxQueued, MaxQueuedBytes).
func (p *Producer) over(n, bytes int64) bool {
	return p.c.MaxQueued > 0 && n >= int64(p.c.MaxQueued) || p.c.MaxQueuedBytes > 0 && bytes >= p.c.MaxQueuedBytes
}

// triage calls back, in order, the records of batch not to send, and
// returns the others: those of a session that ended with their context's
// error, those whose key is held with delivery.ErrNotSent, those that
// waited past Config.MaxWait, or past ShareWait while the lanes hold
// their share (over), with an *Error (Waited) that parks them, unsent.
func (p *Producer) triage(batch []entry, over bool) []entry {
	send := make([]entry, 0, len(batch))
	now := time.Now()
	for _, e := range batch {
		switch waited := now.Sub(e.at); {
		case e.ctx.Err() != nil:
			e.done(e.r, e.ctx.Err())
		case p.c.Held != nil && p.c.Held(e.r):
			e.done(e.r, delivery.ErrNotSent)
		case p.due(waited, over):
			p.c.Observer.Parked(ParkedSlow, 1)
			e.done(e.r, &Error{Publisher: p.c.Publisher, Answer: "slow", Waited: max(waited, time.Nanosecond)})
		default:
			send = append(send, e)
		}
	}
	return send
}

// sendBatch sends send's records in one request, and calls each back
// with the outcome, in order.
func (p *Producer) sendBatch(send []entry) {
	if len(send) == 0 {
		return
	}
	recs := make([]*kgo.Record, len(send))
	for i, e := range send {
		recs[i] = e.r
	}
	err := p.send(send[0].ctx, recs)
	if len(recs) > 1 {
		err = batchRefused(err)
	}
	p.parked(err, len(send))
	for _, e := range send {
		e.done(e.r, err)
	}
}

// batchRefused is err, the outcome of a request of several records: a
// refusal becomes one that sends each record again alone, since the
// receiver may have refused one record of the batch, not the others.
func batchRefused(err error) error {
	var e *Error
	if errors.As(err, &e) && !e.NotSent && e.Retried == 0 {
		again := *e
		again.Batch = true
		return &again
	}
	return err
}

// send sends recs in one request, tried again in place while the
// receiver may take it later, for Config.RetryFor at most, and returns
// nil once it took them, ctx's error once ctx ended, or an *Error. While
// the receiver is failing, a request is not sent unless it is the probe.
func (p *Producer) send(ctx context.Context, recs []*kgo.Record) error {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		probe, ok := p.health.try(p.c.ProbeEvery)
		if !ok {
			return &Error{Publisher: p.c.Publisher, Answer: p.health.last(), NotSent: true}
		}
		if attempt > 0 {
			p.c.Observer.Retried()
		}
		a := p.s.Send(ctx, recs)
		if a.Class != "" && ctx.Err() == nil {
			p.c.Observer.Request(a.Class, a.Latency)
		}
		switch {
		case a.Err == nil:
			p.health.answered(p.c.Log, p.c.Publisher)
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !a.Retry:
			// It answered: it is up, and refuses these records.
			p.health.answered(p.c.Log, p.c.Publisher)
			return &Error{Publisher: p.c.Publisher, Answer: a.Err.Error()}
		}
		wait := p.c.Backoff(attempt, a.RetryAfter)
		if probe || time.Since(start)+wait > p.c.RetryFor {
			// An outage, unless the receiver took another request since
			// this one began: then this request alone fails, for the
			// poller.
			if probe || !p.health.answeredSince(start) {
				p.health.failing(p.c.Log, p.c.Publisher, a.Err, max(a.RetryAfter, p.c.ProbeEvery))
			}
			return &Error{Publisher: p.c.Publisher, Answer: a.Err.Error(), Retried: max(time.Since(start), time.Nanosecond)}
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// health is whether the receiver is failing: since a request was tried
// for Config.RetryFor without an answer it could take, until one is.
type health struct {
	down      atomic.Bool // the fast path's question
	mu        sync.Mutex
	since     time.Time // the outage's start
	nextProbe time.Time
	lastErr   string
	notSent   atomic.Int64 // requests not sent during the outage
	lastOK    atomic.Int64 // when the receiver last answered, Unix nanoseconds
	obs       Observer     // told as an outage begins and ends
	closed    bool         // the lanes closed: the Observer is told no more
}

// answeredSince reports whether the receiver answered a request after
// start.
func (h *health) answeredSince(start time.Time) bool { return h.lastOK.Load() > start.UnixNano() }

// try reports whether a request may be sent (ok), and whether it is the
// outage's probe, which is tried once: one every every while failing.
func (h *health) try(every time.Duration) (probe, ok bool) {
	if !h.down.Load() {
		return false, true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if now := time.Now(); !h.since.IsZero() && now.Before(h.nextProbe) {
		h.notSent.Add(1)
		return false, false
	} else if !h.since.IsZero() {
		h.nextProbe = now.Add(every)
		return true, true
	}
	return false, true
}

// waitProbe waits, while the receiver is failing, until the next probe is
// due, and returns ctx's error if ctx ends first.
func (h *health) waitProbe(ctx context.Context) error {
	if !h.down.Load() {
		return nil
	}
	h.mu.Lock()
	wait := time.Until(h.nextProbe)
	if h.since.IsZero() {
		wait = 0
	}
	h.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// last is the receiver's last failure, as text.
func (h *health) last() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastErr
}

// failing records that a request failed for good: the outage begins (said
// once), or goes on. No probe goes before wait has passed (the receiver's
// Retry-After, at least the probe interval).
func (h *health) failing(log *slog.Logger, publisher string, err error, wait time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastErr = err.Error()
	now := time.Now()
	if next := now.Add(wait); next.After(h.nextProbe) {
		h.nextProbe = next
	}
	if !h.since.IsZero() {
		return
	}
	h.since = now
	h.notSent.Store(0)
	h.down.Store(true)
	if !h.closed {
		h.obs.Failing(true)
	}
	log.Warn("the webhook receiver is failing; its events are parked, and its poller sends them once it answers",
		"publisher", publisher, "err", err)
}

// answered records that the receiver answered: an outage ends (said
// once).
func (h *health) answered(log *slog.Logger, publisher string) {
	h.lastOK.Store(time.Now().UnixNano())
	if !h.down.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.since.IsZero() {
		return
	}
	log.Info(fmt.Sprintf("the webhook receiver answers again after %s", time.Since(h.since).Round(100*time.Millisecond)),
		"publisher", publisher, "parked_unsent", h.notSent.Load())
	h.since = time.Time{}
	h.down.Store(false)
	if !h.closed {
		h.obs.Failing(false)
	}
}

// close tells the Observer that an outage under way ended, as the lanes
// close, and nothing more after.
func (h *health) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.since.IsZero() && !h.closed {
		h.obs.Failing(false)
	}
	h.closed = true
}

// IsError reports whether err is a publisher's *Error.
func IsError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// keyOf is r's order key with its topic; ok is false for a record that
// keeps no order.
func (p *Producer) keyOf(r *kgo.Record) (string, bool) {
	k := p.c.OrderKey(r)
	return r.Topic + "\x00" + string(k), k != nil
}

// reapEvery is how often, at most, the lanes are reaped.
const reapEvery = 100 * time.Millisecond

// reapLoop reaps every lane, every MaxWait/4 or reapEvery, whichever is
// sooner, until ctx ends: so that a receiver whose requests each take
// long (up to its timeout) has its queued records parked while every lane
// waits on it.
func (p *Producer) reapLoop(ctx context.Context) {
	t := time.NewTicker(min(max(p.c.MaxWait/4, time.Millisecond), reapEvery))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, l := range p.lanes {
			p.reap(l)
		}
	}
}

// reap calls back, as triage does, the records of l's queue that waited
// past MaxWait or that the lanes' share holds (oldest first), but for a
// record whose key is in the request under way or has an earlier record
// left in the queue: those wait their turn, so that a key's records are
// called back in order.
func (p *Producer) reap(l *lane) {
	l.turn.Lock()
	defer l.turn.Unlock()
	now := time.Now()
	n, bytes := p.queued.Load(), p.qbytes.Load()
	l.mu.Lock()
	if l.closed || len(l.q) == 0 || !p.due(now.Sub(l.q[0].at), p.over(n, bytes)) {
		// The head waited longest: when it is not due and the lanes are
		// within their share, nothing is (the common case, read without
		// walking the queue).
		l.mu.Unlock()
		return
	}
	stay := make(map[string]bool, len(l.busy))
	for _, k := range l.busy {
		stay[k] = true
	}
	var out, keep []entry
	for _, e := range l.q {
		k, ordered := p.keyOf(e.r)
		if ordered && stay[k] || !p.due(now.Sub(e.at), p.over(n, bytes)) {
			keep = append(keep, e)
			if ordered {
				stay[k] = true
			}
			continue
		}
		out = append(out, e)
		n, bytes = n-1, bytes-e.size
	}
	l.q = keep
	l.mu.Unlock()
	if len(out) == 0 {
		return
	}
	p.dequeued(out)
	// Each waited past ShareWait at least (due, with the share held or
	// not): triage parks every one whose session and key let it, and
	// sends none.
	p.triage(out, true)
}
