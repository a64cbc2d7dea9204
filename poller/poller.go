package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/ratelog"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/status"
)

// Headers the poller adds to a re-delivered record, beside its own.
const (
	// HeaderAttempts is the attempt that delivered the record: 1 for the
	// poller's first.
	HeaderAttempts = "cdc-relay-attempts"
	// HeaderCommitLSN is the commit LSN of the event's transaction; a
	// record of a row the relay did not read from the WAL (adopted at the
	// switch-over, or reset by a runbook: sent as the row is now) has
	// none, rather than 0/0.
	HeaderCommitLSN = "cdc-relay-commit-lsn"
	// HeaderError is the last error, on a dead-letter record.
	HeaderError = "cdc-relay-error"
	// HeaderOriginalTopic is the event's topic, on a dead-letter record.
	HeaderOriginalTopic = "cdc-relay-original-topic"
)

// Store is what the poller needs of the status table (*status.Store).
type Store interface {
	Claim(ctx context.Context, limit int, deliver func(context.Context, []status.Row) []status.Outcome) (int, error)
}

// Producer is what the poller needs of the Kafka producer (*sink.Sink).
type Producer interface {
	// ProduceWait produces recs and returns each one's outcome, or ctx's
	// error for those unanswered when ctx ends.
	ProduceWait(ctx context.Context, recs []*kgo.Record) []error
}

// attemptTimeout bounds how long one batch waits for Kafka. Records still
// unanswered then are not counted as attempts: they are tried again later
// (and may arrive twice; consumers deduplicate on the id header).
const attemptTimeout = 30 * time.Second

// Poller re-delivers parked events. Run it on the leader only.
type Poller struct {
	store Store
	prod  Producer
	cfg   Config
	// failures logs a failed claim at most once a minute while it lasts.
	failures *ratelog.Logger
	// violations logs a record that overtook its key's refused head, at
	// most once a minute per key.
	violations *ratelog.Logger
	// held is the bytes of records the claim under way holds (its rows'
	// and those loaded for it), for Run and loadWithin; one claim is
	// under way at a time (one finishing beside it holds no record:
	// runOverlapped).
	held int64
	// claimEnds are what Config.Claimed returned for the claim under
	// way, called when it has ended; told says Claimed was called for it.
	claimEnds []func()
	told      bool
}

// New returns a poller over store producing with prod.
func New(store Store, prod Producer, cfg Config) *Poller {
	cfg = cfg.withDefaults()
	return &Poller{store: store, prod: prod, cfg: cfg,
		failures: ratelog.New(cfg.Logger, ratelog.Config{Every: time.Minute,
			CountAttr: "failures", Summary: "parked events: still could not claim or update rows; trying again", Last: []string{"err"}}),
		violations: ratelog.New(cfg.Logger, ratelog.Config{Every: time.Minute, KeyAttr: "key", CountAttr: "records",
			Summary: "parked events: more records overtook an earlier refused event of their key"}),
	}
}

// sayFailed logs a failed claim or update: at debug when PostgreSQL went
// away, else at warn at most once a minute while it lasts (then with how
// many failures more), a missing table with the command that creates it
// again.
func (p *Poller) sayFailed(ctx context.Context, err error) {
	const msg = "parked events: could not claim or update rows; trying again"
	if pgerr.Level(err) < slog.LevelWarn {
		p.cfg.Logger.Log(ctx, slog.LevelDebug, msg, "err", err, "in", p.cfg.Interval)
		return
	}
	p.failures.Log("claim", slog.LevelWarn, msg+pgerr.MissingTableHint(err), "err", err, "in", p.cfg.Interval)
}

// Run claims and delivers due rows until ctx ends: a full batch is
// followed at once by the next, otherwise it looks again after
// Config.Interval. Errors are logged, and it goes on. Over a store whose
// claims may overlap (*status.Store), the next batch is claimed and
// loaded while the last one's outcomes are written (runOverlapped).
func (p *Poller) Run(ctx context.Context) {
	if o, ok := p.store.(overlapper); ok {
		p.runOverlapped(ctx, o)
		return
	}
	for {
		if p.cfg.Hold != nil && p.cfg.Hold(ctx) != nil {
			return
		}
		n, err := p.RunOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			p.sayFailed(ctx, err)
		}
		if (err != nil || !p.full(n)) && !p.sleep(ctx, err) {
			return
		}
	}
}

// full says a claim of n rows is followed at once by the next: a full
// batch, or one cut by MaxBytes that held over half of it (due rows may
// be left).
func (p *Poller) full(n int) bool {
	return n >= p.cfg.Batch || p.cfg.MaxBytes > 0 && p.held > p.cfg.MaxBytes/2
}

// sleep waits after a claim that was not full (or failed, with err) for
// as long as wait says, or until woken; false when ctx ended.
func (p *Poller) sleep(ctx context.Context, err error) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(p.wait(ctx, err)):
	case <-p.cfg.Wake:
	}
	return true
}

// minWait is the least time the poller waits for a row's next attempt
// (Config.NextDue): rows due within it are claimed together.
const minWait = 10 * time.Millisecond

// wait is how long Run waits after a claim that was not full (or failed,
// with err): until the next row is due, if sooner than Config.Interval.
func (p *Poller) wait(ctx context.Context, err error) time.Duration {
	if err != nil || p.cfg.NextDue == nil {
		return p.cfg.Interval
	}
	in, ok, err := p.cfg.NextDue(ctx)
	if err != nil || !ok {
		return p.cfg.Interval // a failure shows at the next claim
	}
	return min(max(in, minWait), p.cfg.Interval)
}

// RunOnce claims one batch of rows deliverable in order and tries to
// deliver each; it returns how many rows it claimed. Once the batch's
// outcomes are committed, it calls Config.Delivered with the keys of the
// rows it delivered.
func (p *Poller) RunOnce(ctx context.Context) (int, error) {
	began := time.Now()
	p.held, p.told = 0, false
	var keys []status.Key
	n, err := p.store.Claim(ctx, p.cfg.Batch, func(ctx context.Context, rows []status.Row) []status.Outcome {
		out, delivered := p.deliver(ctx, rows)
		keys = delivered
		return out
	})
	if !p.told && p.cfg.Claimed != nil {
		p.claimed(nil) // a look that claimed nothing is a claim of no key
	}
	if m := p.cfg.Metrics; m != nil {
		m.PollerCycles.Inc()
		m.PollerCycleDuration.Observe(time.Since(began).Seconds())
		m.PollerRowsClaimed.Add(float64(n))
	}
	if err == nil && len(keys) > 0 && p.cfg.Delivered != nil {
		p.cfg.Delivered(keys)
	}
	for _, ended := range p.claimEnds {
		ended()
	}
	clear(p.claimEnds)
	p.claimEnds = p.claimEnds[:0]
	return n, err
}

// deliver produces the claimed rows, each key's in order, and says what
// became of each, with the keys of the rows delivered, each once. A row
// whose outcome is unknown (Kafka did not answer in time, or the relay is
// stopping) gets no outcome: it stays as it was, and that try is not an
// attempt; nor does a row not produced because an earlier row of its key
// was not delivered.
func (p *Poller) deliver(ctx context.Context, rows []status.Row) ([]status.Outcome, []status.Key) {
	loaded, errs := p.loadClaimed(ctx, rows)
	return p.deliverLoaded(ctx, rows, loaded, errs)
}

// loadClaimed counts the claimed rows' records in p.held and loads the
// reload rows among them (load): what deliverLoaded needs, errs the
// rows' errors so far.
func (p *Poller) loadClaimed(ctx context.Context, rows []status.Row) (loaded []*status.Row, errs []error) {
	for _, r := range rows {
		if !r.Reload {
			p.held += r.Bytes()
		}
	}
	errs = make([]error, len(rows))
	return p.load(ctx, rows, errs), errs
}

// deliverLoaded is deliver once the rows are loaded (loadClaimed): it
// keeps the rows of paused topics back, tells Config.Claimed of the
// claimed keys, produces the rest in order and says what became of each.
func (p *Poller) deliverLoaded(ctx context.Context, rows []status.Row, loaded []*status.Row, errs []error) ([]status.Outcome, []status.Key) {
	p.keepPaused(ctx, rows, loaded, errs)
	p.holdClaimed(rows)
	tried := p.produceInOrder(ctx, rows, loaded, errs)

	var out []status.Outcome
	var keys []status.Key
	seen := map[status.Key]bool{}
	var n tally
	for i, err := range errs {
		if !tried[i] {
			continue
		}
		o, ok := p.outcome(ctx, rows[i], loaded[i], err, &n)
		if !ok {
			continue
		}
		out = append(out, o)
		if m := p.cfg.Metrics; m != nil && o.Delivered && !rows[i].CreatedAt.IsZero() {
			m.HeldToAck.Observe(time.Since(rows[i].CreatedAt).Seconds())
		}
		if k, ok := p.orderKey(rows[i]); o.Delivered && ok && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if m := p.cfg.Metrics; m != nil {
		m.PollerDelivered.Add(float64(n.delivered))
		m.PollerFailed.Add(float64(n.failed + n.dead))
		m.EventsDead.Add(float64(n.dead))
	}
	if n.delivered+n.failed+n.dead > 0 {
		p.cfg.Logger.Info("parked events tried again", "delivered", n.delivered, "failed", n.failed, "dead", n.dead)
	}
	p.violations.Flush()
	if n.paused > 0 {
		p.cfg.Logger.Info("events to send again from their outbox rows are held: their topic is paused (PAUSED until it is resumed)", "events", n.paused)
	}
	return out, keys
}

// holdClaimed calls Config.Claimed with the keys of the ordered rows,
// each once.
func (p *Poller) holdClaimed(rows []status.Row) {
	if p.cfg.Claimed == nil {
		return
	}
	var keys []status.Key
	for _, g := range p.groupByKey(rows) {
		if k, ok := p.orderKey(rows[g[0]]); ok {
			keys = append(keys, k)
		}
	}
	p.claimed(keys)
}

// claimed calls Config.Claimed with keys, and keeps what it returned
// for the claim's end.
func (p *Poller) claimed(keys []status.Key) {
	p.told = true
	if ended := p.cfg.Claimed(keys); ended != nil {
		p.claimEnds = append(p.claimEnds, ended)
	}
}

// tally counts a claim's outcomes.
type tally struct{ delivered, failed, dead, paused int }

// outcome is what became of row, tried with err (loaded: its record read
// from its outbox row, for a Reload row), counted in n; ok is false when
// the row gets no outcome.
func (p *Poller) outcome(ctx context.Context, row status.Row, loaded *status.Row, err error, n *tally) (o status.Outcome, ok bool) {
	if loaded != nil {
		row = *loaded
	}
	o = status.Outcome{ID: row.ID, Err: err, Loaded: loaded}
	switch {
	case errors.Is(err, errTopicPaused):
		o.Paused = true // no attempt: parked until its topic is resumed
		n.paused++
	case row.Reload && err == nil:
		return o, false // not loaded this time
	case errors.Is(err, ErrUnloadable):
		o.Dead = true
		n.dead++
	case err == nil:
		o.Delivered = true
		n.delivered++
	case !sink.Permanent(err):
		return o, false // unknown outcome
	case row.Attempts+1 >= p.cfg.MaxAttempts:
		o.Dead = true
		n.dead++
		if err := p.deadLetter(ctx, row, o.Err); err != nil {
			o.Err = fmt.Errorf("%w; and the dead-letter topic %q refused it: %v", o.Err, p.cfg.DeadLetterTopic, err)
		}
	default:
		o.RetryIn = p.backoff(row.Attempts + 1)
		n.failed++
	}
	return o, true
}

// record is row as a Kafka record for topic, with the poller's headers.
func record(row status.Row, topic string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: row.Key, Value: row.Value, Timestamp: row.Timestamp}
	if row.Placed && topic == row.Topic {
		sink.Place(r, row.Partition) // not on the dead-letter topic
	}
	for _, h := range row.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: HeaderAttempts, Value: []byte(strconv.Itoa(row.Attempts + 1))})
	if row.CommitLSN != 0 { // none for a row the relay did not read from the WAL: adopted, or reset
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: HeaderCommitLSN, Value: []byte(row.CommitLSN.String())})
	}
	return r
}

// deadLetter produces a dead row to the dead-letter topic, if there is one.
func (p *Poller) deadLetter(ctx context.Context, row status.Row, cause error) error {
	if p.cfg.DeadLetterTopic == "" {
		return nil
	}
	r := record(row, p.cfg.DeadLetterTopic)
	r.Headers = append(r.Headers,
		kgo.RecordHeader{Key: HeaderError, Value: []byte(cause.Error())},
		kgo.RecordHeader{Key: HeaderOriginalTopic, Value: []byte(row.Topic)})
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	errs := p.prod.ProduceWait(actx, []*kgo.Record{r})
	return errors.Join(errs...)
}

// backoff is the wait after the n-th failed attempt: RetryBase doubled
// n-1 times, at most RetryMax, then jittered by ±20% so that rows parked
// together are not tried together forever.
func (p *Poller) backoff(n int) time.Duration {
	d := p.cfg.RetryBase
	for i := 1; i < n && d < p.cfg.RetryMax; i++ {
		d *= 2
	}
	d = min(d, p.cfg.RetryMax)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// errNotItsTopic is prepare's answer for a reload row whose loaded topic
// the poller's publisher does not send (Config.Sends).
var errNotItsTopic = errors.New("a topic its publisher does not send")

// ErrUnloadable is what Config.Load wraps when a Reload row's record
// cannot be read from its outbox row, now or later: the row makes the
// event DEAD.
var ErrUnloadable = errors.New("cannot be sent again from its outbox row")

// load reads the records of rows' Reload rows with Config.Load, all at
// once: loaded[i] is row i with its record, or nil; a row that cannot be
// loaded for good gets its error in errs[i].
func (p *Poller) load(ctx context.Context, rows []status.Row, errs []error) []*status.Row {
	loaded := make([]*status.Row, len(rows))
	var reload []int // the index in rows of each row to load
	for i, row := range rows {
		if row.Reload && p.cfg.Load != nil {
			reload = append(reload, i)
		}
	}
	if len(reload) == 0 {
		return loaded
	}
	out, lerrs := p.loadWithin(ctx, rows, reload)
	var failed int
	var first error
	for j, i := range reload {
		if j >= len(out) {
			break // past the claim's bound: left for the next claim
		}
		switch err, row := lerrs[j], rows[i]; {
		case errors.Is(err, ErrUnloadable):
			errs[i] = err
		case err != nil:
			if failed++; first == nil {
				first = fmt.Errorf("%s %s: %w", row.SourceTable, row.EventID, err)
			}
		default:
			r := out[j]
			r.ID, r.Attempts, r.Reload = row.ID, row.Attempts, false
			loaded[i] = &r
		}
	}
	if failed > 0 {
		p.cfg.Logger.Warn("could not read the outbox rows of events to send again; trying at the next poll", "rows", failed, "first", first)
	}
	return loaded
}

// firstLoad is how many Reload rows the poller reads at once, at first,
// with Config.MaxBytes: it reads up to four times as many each time
// after, as many as fit at the size of the rows read so far, so that a
// claim of 1,000 small rows takes 4 reads and the first holds at most 16
// rows of any size.
const firstLoad = 16

// loadWithin reads the records of rows[reload[j]] with Config.Load, a
// few at a time, until the claim's records (its other rows' and those
// read) reach Config.MaxBytes: it returns out and errs for the first
// rows of reload it read, all of them without a bound.
func (p *Poller) loadWithin(ctx context.Context, rows []status.Row, reload []int) (out []status.Row, errs []error) {
	in := make([]status.Row, len(reload))
	for j, i := range reload {
		in[j] = rows[i]
	}
	if p.cfg.MaxBytes <= 0 {
		return p.cfg.Load(ctx, in)
	}
	held := p.held // the claim's records in memory (deliver counted its rows'), then with those read
	next := firstLoad
	if held >= p.cfg.MaxBytes/2 {
		next = 1 // the claim's other rows hold half the bound already
	}
	var read int64 // the bytes of the rows read
	for len(out) < len(in) && (len(out) == 0 || held < p.cfg.MaxBytes) {
		chunk := in[len(out):min(len(in), len(out)+next)]
		o, e := p.cfg.Load(ctx, chunk)
		for _, r := range o {
			read += r.Bytes()
		}
		out, errs = append(out, o...), append(errs, e...)
		held = p.held + read
		// As many more as fit at the size a row so far, at most four
		// times as many as this time.
		fit := (p.cfg.MaxBytes - held) / max(1, read/int64(len(out)))
		next = int(max(1, min(fit, 4*int64(len(chunk)))))
	}
	p.held = held
	return out, errs
}

// errTopicPaused is the error of a loaded Reload row whose topic is
// paused: it is not produced, and becomes PAUSED (keepPaused).
var errTopicPaused = errors.New("its topic is paused: parked until the topic is resumed")

// keepPaused sets errs[i] to errTopicPaused for each loaded row whose
// topic Config.PausedTopics names, so that it is not produced. Only a row
// loaded for a topic other than the one it was claimed with (a reset or
// adopted row's first load, its topic empty until then) needs it: the
// claim left out the
// rows of paused topics already, so the paused topics are read only when
// the batch has such a row. When they cannot be read, those rows are
// dropped (loaded[i] nil): they wait for the next poll rather than go to
// a topic perhaps paused.
func (p *Poller) keepPaused(ctx context.Context, rows []status.Row, loaded []*status.Row, errs []error) {
	var unsure []int // rows loaded for a topic the claim did not check
	for i, r := range loaded {
		if r != nil && r.Topic != rows[i].Topic {
			unsure = append(unsure, i)
		}
	}
	if p.cfg.PausedTopics == nil || len(unsure) == 0 {
		return
	}
	topics, err := p.cfg.PausedTopics(ctx)
	if err != nil {
		for _, i := range unsure {
			loaded[i] = nil
		}
		p.cfg.Logger.Log(ctx, pgerr.Level(err), "could not read the paused topics for the events to send again from their outbox rows; trying at the next poll", "err", err)
		return
	}
	for _, i := range unsure {
		if slices.Contains(topics, loaded[i].Topic) {
			errs[i] = errTopicPaused
		}
	}
}

// produceInOrder produces every row of the claim at once, and returns
// which rows get an outcome (tried[i]). The records are appended in id
// order, so each key's go in its order: a key's records go to one
// partition, whose order the idempotent producer keeps, and franz-go
// fails a refused batch with every record buffered behind it in its
// partition. A row that cannot be produced (not loaded, a topic or a
// record refused before producing: prepare) stops its key: its later rows
// are not produced; so does a row placed on another partition than its
// key's earlier rows of the claim (a table's partition column), whose
// order against theirs franz-go would not keep. Then each key's outcomes
// are read in id order (keyOutcomes).
func (p *Poller) produceInOrder(ctx context.Context, rows []status.Row, loaded []*status.Row, errs []error) []bool {
	groups := p.groupByKey(rows)
	group := make([]int, len(rows)) // the group of each row
	for g, idx := range groups {
		for _, i := range idx {
			group[i] = g
		}
	}
	stopped := make([]bool, len(groups))
	onPartition := make([]int64, len(groups)) // each group's placement (placement), 0 before its first row
	tried := make([]bool, len(rows))
	produced := make([]bool, len(rows))
	var recs []*kgo.Record
	var sent []int // the row of each record
	for i := range rows {
		g := group[i]
		if stopped[g] {
			continue
		}
		if at := placement(rows[i], loaded[i]); onPartition[g] == 0 {
			onPartition[g] = at
		} else if at != onPartition[g] {
			// Another partition than its key's earlier rows': franz-go
			// answers partitions in no order between them, so it waits
			// for the next claim, once those are settled.
			stopped[g] = true
			continue
		}
		tried[i] = true
		r, err := p.prepare(rows[i], loaded[i], errs[i])
		if errors.Is(err, errNotItsTopic) {
			produced[i], errs[i] = true, nil // settled: nothing to send
			continue
		}
		if r == nil {
			errs[i] = err
			stopped[group[i]] = true
			continue
		}
		recs = append(recs, r)
		sent = append(sent, i)
		produced[i] = true
	}
	if len(recs) > 0 {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		for j, err := range p.prod.ProduceWait(actx, recs) {
			errs[sent[j]] = err
		}
		cancel()
	}
	for _, idx := range groups {
		p.keyOutcomes(rows, idx, produced, errs, tried)
	}
	return tried
}

// placement names the partition row's record goes to for produceInOrder
// (loaded: its record read from its outbox row): 1 plus its placed
// partition (status.Row.Placed), or -1 when its key's hash chooses it.
func placement(row status.Row, loaded *status.Row) int64 {
	if loaded != nil {
		row = *loaded
	}
	if !row.Placed {
		return -1
	}
	return int64(row.Partition) + 1
}

// prepare returns the record of row (loaded: its record read from its
// outbox row, for a Reload row), or nil when it is not produced: with
// err, the error it had already (pre) or why its topic may not be written
// or its record is refused (Config.CheckTopic, Config.CheckRecord), or
// errNotItsTopic for a loaded row of a topic the publisher does not send
// (Config.Sends); without, a Reload row not loaded, left for the next
// poll.
func (p *Poller) prepare(row status.Row, loaded *status.Row, pre error) (*kgo.Record, error) {
	if pre != nil || row.Reload && loaded == nil {
		return nil, pre // not loaded: dead, paused, or left for the next poll
	}
	if loaded != nil {
		row = *loaded
	}
	if loaded != nil && p.cfg.Sends != nil && !p.cfg.Sends(row.SourceTable, row.Topic) {
		return nil, errNotItsTopic
	}
	check := p.cfg.CheckTopic
	if check == nil {
		check = func(_, topic string) error { return decoder.ValidTopic(topic) }
	}
	if err := check(row.SourceTable, row.Topic); err != nil {
		return nil, err // not a topic the relay may write: never produced
	}
	r := record(row, row.Topic)
	if p.cfg.CheckRecord != nil {
		if err := p.cfg.CheckRecord(r); err != nil {
			return nil, err // Kafka would refuse it: never produced
		}
	}
	return r, nil
}

// keyOutcomes reads the outcomes of one key's rows (idx, in id order)
// after the produce: the first row not delivered is the key's head, and
// the key's rows after it get no outcome (tried[i] false: they stay as
// they were), except one that Kafka took nevertheless: it is in Kafka,
// so it is recorded as delivered and never sent again, and when the head
// is known not to be in Kafka (refused for good) it is counted and logged
// as an order violation.
func (p *Poller) keyOutcomes(rows []status.Row, idx []int, produced []bool, errs []error, tried []bool) {
	head := -1
	for _, i := range idx {
		switch {
		case head < 0 && produced[i] && errs[i] == nil:
			// delivered in order
		case head < 0:
			head = i
		case produced[i] && errs[i] == nil:
			if sink.Permanent(errs[head]) {
				p.violation(rows[i])
			}
		default:
			tried[i] = false
		}
	}
}

// violation counts and logs row, which Kafka took after an earlier row
// of its key was refused: consumers see the key's events out of order.
func (p *Poller) violation(row status.Row) {
	if m := p.cfg.Metrics; m != nil {
		m.OrderViolations.Inc()
	}
	p.violations.Log(row.Topic+"/"+string(row.Key), slog.LevelError,
		"parked events: a record overtook an earlier event of its key that Kafka refused: consumers see the key's events out of commit order",
		"topic", row.Topic, "key", string(row.Key), "id", row.EventID)
}

// orderKey is the key row is ordered by, and false for a row that is
// not ordered (no key): its topic and record key, or, with ByTopic or
// of a topic of TopicOrdered, its topic with the empty key (none for the empty topic: a reset row not
// loaded yet). A reload row's is the key its status row
// holds (the key of the event adopted or reset, as parked), whatever key
// its outbox row now gives its record.
func (p *Poller) orderKey(row status.Row) (status.Key, bool) {
	switch {
	case p.cfg.ByTopic || slices.Contains(p.cfg.TopicOrdered, row.Topic):
		return status.Key{Topic: row.Topic}, row.Topic != ""
	case row.Key == nil:
		return status.Key{}, false
	}
	return status.Key{Topic: row.Topic, Key: string(row.Key)}, true
}

// groupByKey returns the indexes of rows by key (orderKey), in the order
// of rows; a row that is not ordered is a group of its own.
func (p *Poller) groupByKey(rows []status.Row) [][]int {
	var groups [][]int
	byKey := map[status.Key]int{}
	for i, row := range rows {
		k, ok := p.orderKey(row)
		if !ok {
			groups = append(groups, []int{i})
			continue
		}
		g, ok := byKey[k]
		if !ok {
			g = len(groups)
			byKey[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}
