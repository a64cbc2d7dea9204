package exactlyonce

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/tick"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/sink"
)

// heldTxn is a PostgreSQL transaction with records in the open Kafka
// transaction.
type heldTxn struct {
	pgTxn  *checkpoint.Txn
	events int // records produced
	// delivered are the events to tell write-back about once committed;
	// the transaction's hold is released once their rows say delivered.
	delivered []writtenBack
}

// writtenBack is an event whose delivery write-back is told of.
type writtenBack struct {
	table int
	id    []byte
}

// heldWriteBack is told once write-back wrote each row of a committed
// PostgreSQL transaction; then it releases the transaction's hold, and the
// checkpoint may pass it.
type heldWriteBack struct {
	tracker *checkpoint.Tracker
	pgTxn   *checkpoint.Txn
	left    atomic.Int64
}

func (h *heldWriteBack) WrittenBack() {
	if h.left.Add(-1) == 0 {
		h.tracker.Release(h.pgTxn)
	}
}

// Xid names the transaction that inserted the rows (writeback.Done).
func (h *heldWriteBack) Xid() uint32 { return h.pgTxn.Xid() }

// failure is a record Kafka did not take; it is nil for the checkpoint
// record.
type failure struct {
	it    *delivery.Inflight
	err   error
	alone bool // it was produced alone
}

// Batcher puts one session's records into Kafka transactions. produce
// and endTxn are called by the stream's goroutine and never wait for
// Kafka; run commits on a goroutine of its own. While a commit is under
// way, the records read meanwhile wait in pending (counted in flight, so
// the in-flight limits bound them) and are produced into the next
// transaction once it ends: franz-go must not produce during a commit.
type Batcher struct {
	*delivery.Ledger
	snk       *sink.Sink // transactional, this session's
	state     *State
	id        sink.Checkpoint // the slot and its database, for the checkpoint records
	topic     string          // the checkpoint topic
	interval  time.Duration
	maxEvents int
	due       chan struct{} // endTxn tells run a commit is due

	cmu sync.Mutex // one commit at a time: run's, or the final one

	mu         sync.Mutex
	cur        kafkaTxn             // the transaction records go to
	lastBegan  time.Time            // when the last commit began (New: when the batcher did)
	waking     bool                 // a timer wakes run once the interval has passed
	committing bool                 // a commit is under way: records wait in pending
	pending    []*delivery.Inflight // read during a commit, produced after it
	broken     error                // set once a transaction cannot commit: nothing more is produced

	fmu      sync.Mutex
	rejected []failure // records Kafka did not take, since the last commit
	// sent counts the records produced into the transaction under way
	// (under mu), acked those Kafka acknowledged: it commits only when
	// they agree and nothing failed.
	sent  int
	acked atomic.Int64
	// parking counts rows being written to the status table (poison
	// rows, events behind a held key or a paused topic), under parkMu,
	// never mu: a park takes its key's turn before it counts here, and a
	// break that holds mu may wait for that turn. A commit waits for
	// them, or the checkpoint topic could pass a row that is in neither
	// Kafka nor the status table.
	parkMu   sync.Mutex
	parking  int
	parkDone *sync.Cond // on parkMu: parking went down
	// Leads, if set before Run, reports whether this relay still holds
	// the slot's lock: a producer the broker fenced without it was
	// replaced by another relay.
	Leads func(context.Context) bool
	// CommitHook, if set before the first record, is called before each
	// commit. The relay leaves it nil: it is for the tests that drive a
	// Batcher through the pipeline (package relay/pipeline).
	CommitHook func()

	onAck   func(*kgo.Record, error)
	onCPAck func(*kgo.Record, error)
}

// Options are what the batcher takes of the relay's exactly-once
// settings.
type Options struct {
	// Interval is the least time from the start of one commit to the
	// start of the next: a Kafka transaction commits as soon as the one
	// before it returned and Interval has passed since that one began
	// (zero: at once), which keeps the time from a PostgreSQL commit to a
	// visible record near one Kafka commit and bounds how many commits a
	// fast broker makes. MaxEvents is the most records a transaction
	// holds: one that reaches it commits without waiting for Interval.
	Interval  time.Duration
	MaxEvents int
	// CheckpointTopic is the topic of the slot's position, written in
	// every Kafka transaction.
	CheckpointTopic string
}

// kafkaTxn is the Kafka transaction that records go to.
type kafkaTxn struct {
	begun   bool // Begin was called (its first record was produced)
	events  int
	held    []*heldTxn
	open    bool          // the last held transaction is still being read
	lastEnd pglogrepl.LSN // the end of the last held transaction read to its end
	// lastCommit is when the transaction that ends at lastEnd committed.
	lastCommit time.Time
}

// New returns the exactly-once delivery of l's session: its records go
// into transactions of snk, a transactional producer that
// InitTransactions started, with checkpoint records for id in eo's
// checkpoint topic; state is what earlier sessions learnt. Its committer,
// Run, is the caller's to start.
func New(l *delivery.Ledger, snk *sink.Sink, state *State, id sink.Checkpoint, eo Options) *Batcher {
	b := &Batcher{Ledger: l, snk: snk, state: state, id: id, topic: eo.CheckpointTopic, interval: eo.Interval,
		maxEvents: eo.MaxEvents, due: make(chan struct{}, 1), lastBegan: time.Now()}
	b.parkDone = sync.NewCond(&b.parkMu)
	b.onAck = b.ack
	b.onCPAck = func(_ *kgo.Record, err error) {
		if err != nil {
			b.failed(failure{err: err})
			return
		}
		b.acked.Add(1)
	}
	return b
}

// Produce adds it to the Kafka transaction: produced now, or after the
// commit under way.
func (b *Batcher) Produce(it *delivery.Inflight) {
	refused := b.snk.Refuses(&it.Record) // before mu: a topic's first record may wait for its limit
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken != nil {
		return // the session is ending; the WAL still has it
	}
	if b.state.IsParked(it) {
		// Parked when an earlier transaction aborted: its status row
		// stands for it.
		b.Tracker.Done(it.Txn(), it.Size())
		return
	}
	if refused != nil {
		// Kafka would refuse it and abort the transaction: parked as a
		// poison row is, beside the stream, its key held from now on; a
		// redo parks it again (the status table keeps one row).
		b.Metrics.ProduceErrors.WithLabelValues(sink.ErrorName(refused)).Inc()
		b.parkBeside(b.ParkInOrder(it, b.FailedAs(refused)))
		return
	}
	var h *heldTxn
	if n := len(b.cur.held); n > 0 && b.cur.held[n-1].pgTxn == it.Txn() {
		h = b.cur.held[n-1]
	} else {
		b.Tracker.Hold(it.Txn())
		h = &heldTxn{pgTxn: it.Txn()}
		b.cur.held = append(b.cur.held, h)
		b.cur.open = true
	}
	h.events++
	b.cur.events++
	if b.ReportsDelivery(it) {
		h.delivered = append(h.delivered, writtenBack{it.Event.Table, append([]byte(nil), it.Event.ID...)})
	}
	if b.committing {
		b.pending = append(b.pending, it)
		return
	}
	b.sendLocked(it)
}

// sendLocked produces it, beginning the transaction if it is the first
// record. Called with mu held, never during a commit.
func (b *Batcher) sendLocked(it *delivery.Inflight) {
	if !b.cur.begun {
		if err := b.snk.Begin(); err != nil {
			b.breakLocked(err, nil)
			return
		}
		b.cur.begun = true
	}
	b.sent++
	if !b.state.isSuspect(it) {
		b.snk.Produce(b.ProduceCtx, &it.Record, b.onAck)
		return
	}
	// It failed with its batch before: alone in a batch, it is delivered
	// or fails for itself.
	if err := b.snk.Flush(b.ProduceCtx); err != nil {
		b.breakLocked(err, nil)
		return
	}
	if err := b.snk.ProduceWait(b.ProduceCtx, []*kgo.Record{&it.Record})[0]; err != nil {
		b.breakLocked(err, []failure{{it: it, err: err, alone: true}})
		return
	}
	b.acked.Add(1)
	b.Tracker.Done(it.Txn(), it.Size())
}

// Park runs store, which parks it in the status table (a poison row, or
// an event behind a held key or a paused topic), as at-least-once delivery
// does, and holds every commit until the row is stored.
func (b *Batcher) Park(_ *delivery.Inflight, store func() bool) { b.parkBeside(store) }

// parkBeside runs store beside the stream, counted as a park under way
// (Park); Produce calls it with mu held.
func (b *Batcher) parkBeside(store func() bool) {
	b.parkMu.Lock()
	b.parking++
	b.parkMu.Unlock()
	go func() {
		store()
		b.parkMu.Lock()
		b.parking--
		b.parkDone.Broadcast()
		b.parkMu.Unlock()
	}()
}

// lockWhenParked takes mu once no park is under way (or produceCtx ended):
// parks count under parkMu, so one that starts while it waits for mu is
// seen after it took it.
func (b *Batcher) lockWhenParked() {
	for {
		b.parkMu.Lock()
		for b.parking > 0 && b.ProduceCtx.Err() == nil {
			b.parkDone.Wait() // a park gives up when produceCtx ends
		}
		b.parkMu.Unlock()
		b.mu.Lock()
		b.parkMu.Lock()
		idle := b.parking == 0 || b.ProduceCtx.Err() != nil
		b.parkMu.Unlock()
		if idle {
			return
		}
		b.mu.Unlock()
	}
}

// EndTxn is told that PostgreSQL transaction pgTxn ended at end (after the
// tracker was), and tells run when a commit is due.
func (b *Batcher) EndTxn(pgTxn *checkpoint.Txn, end pglogrepl.LSN) {
	b.mu.Lock()
	n := len(b.cur.held)
	if n == 0 || b.cur.held[n-1].pgTxn != pgTxn {
		b.mu.Unlock()
		return // nothing of it in Kafka
	}
	b.cur.lastEnd, b.cur.lastCommit, b.cur.open = end, pgTxn.CommitTime(), false
	b.wakeLocked()
	b.mu.Unlock()
}

// dueLocked reports whether the transaction should commit, once no
// PostgreSQL transaction in it is still being read: it has records, and
// the interval has passed since the last commit began, or it holds the
// most records it may. Commits run one at a time, so under load a
// transaction holds what was read during the commit before it.
func (b *Batcher) dueLocked() bool {
	return b.cur.begun && (b.cur.events >= b.maxEvents || time.Since(b.lastBegan) >= b.interval)
}

// wakeLocked tells run that a commit is due, or, when only the interval
// keeps the transaction from being due, has a timer tell it once the
// interval has passed. Called with mu held, once no PostgreSQL
// transaction in the Kafka transaction is being read.
func (b *Batcher) wakeLocked() {
	switch {
	case b.dueLocked():
		select {
		case b.due <- struct{}{}:
		default:
		}
	case b.cur.begun && !b.waking:
		b.waking = true
		time.AfterFunc(b.interval-time.Since(b.lastBegan), func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.waking = false
			if !b.cur.open {
				// Due now, or, when a commit began meanwhile (the most
				// records, or a forced one), once its interval has passed.
				b.wakeLocked()
			}
		})
	}
}

// ack is the callback of every record of the stream: Kafka's ack frees
// its capacity (the hold keeps the position back until the commit).
func (b *Batcher) ack(r *kgo.Record, err error) {
	it := delivery.InflightOf(r)
	if err == nil {
		b.acked.Add(1)
		b.Tracker.Done(it.Txn(), it.Size())
		return
	}
	b.Metrics.ProduceErrors.WithLabelValues(sink.ErrorName(err)).Inc()
	if sink.TooLarge(err) {
		b.snk.SizeRefused(r.Topic)
	}
	// Whatever the error, the transaction must not commit without it.
	b.failed(failure{it: it, err: err})
}

func (b *Batcher) failed(f failure) {
	b.fmu.Lock()
	b.rejected = append(b.rejected, f)
	b.fmu.Unlock()
}

// Run commits the transaction when it is due and no PostgreSQL transaction
// in it is being read, until ctx ends. EndTxn and the commit before wake
// it (at once, or once the interval has passed); it also looks every
// idleLook.
func (b *Batcher) Run(ctx context.Context) {
	tick.Every(ctx, idleLook, func(ctx context.Context) bool {
		b.commitIf(ctx, false)
		return true
	}, tick.Wake(b.due))
}

// idleLook is how often Run looks for a due commit unwoken: EndTxn and
// each commit wake it when one is.
const idleLook = 100 * time.Millisecond

// Pending is the number of records read during the commit under way,
// which wait to be produced into the next transaction. The relay does not
// call it: it is for the tests that drive a Batcher through the pipeline
// (package relay/pipeline).
func (b *Batcher) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// CommitIfDue does once what Run does when EndTxn told it a commit is
// due, if it was told so since; for a caller that runs no Run (tests).
func (b *Batcher) CommitIfDue(ctx context.Context) {
	select {
	case <-b.due:
		_ = b.commitIf(ctx, false)
	default:
	}
}
