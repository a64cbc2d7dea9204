package delivery

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/status"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// FailureStore parks events the fast path cannot deliver (*status.Store):
// Failed for the poller to try again, Dead for an operator, Waiting behind
// an earlier held event of the key, Paused while the topic is paused.
// When any returns nil the row is durable.
type FailureStore interface {
	Failed(ctx context.Context, ev *decoder.Event, reason error) error
	Dead(ctx context.Context, ev *decoder.Event, reason error) error
	Waiting(ctx context.Context, ev *decoder.Event, reason error) error
	Paused(ctx context.Context, ev *decoder.Event) error
	HeldStore
}

// HeldStore says which keys have held rows, and which topics are paused
// (*status.Store).
type HeldStore interface {
	EachHeldKey(ctx context.Context, f func(status.Key)) error
	StillHeld(ctx context.Context, keys []status.Key) ([]status.Key, error)
	PausedTopics(ctx context.Context) ([]string, error)
}

// Outcomes is told the delivery of each event of the tables that write
// it back to their rows (*writeback.Writer behind an index map), and tells
// done once its row says delivered: the event stays in flight until then.
// It never blocks. (A parked event's row is written with its status row:
// status.WriteBack.)
type Outcomes interface {
	// Delivered: every copy of the event is in Kafka.
	Delivered(table int, id []byte, done writeback.Done)
	// Waiting is the number of outcomes not written yet.
	Waiting() int
}

// Counters count what a relay read and delivered over its life, across
// sessions.
type Counters struct {
	Read   atomic.Int64 // events read from the slot
	Events atomic.Int64 // acked by Kafka
	Failed atomic.Int64 // recorded in the status table
}

// Ledger is what one session's pipeline and its delivery share to settle
// each event once it left the reader: the tracker that holds it in flight,
// the counters and metrics that count it, write-back, and the status table
// that parks it (ParkInOrder). It never waits for Kafka. The session sets
// its fields before the stream starts (NewLedger) and changes none after.
type Ledger struct {
	Log      *slog.Logger // the session's
	Causes   CauseLog     // undeliverable events, by cause
	Failures FailureStore // the status table, which parks events
	// Order holds the keys behind a parked event and the paused topics
	// (nil: nothing is held).
	Order   *keyorder.Order
	Count   *Counters           // the relay's, across sessions
	Metrics *metrics.Metrics    // nil: NewLedger makes some of its own
	Tracker *checkpoint.Tracker // holds each event in flight until it is settled
	// Outcomes, if set, is told the outcome of each event of the tables
	// WriteBack marks (by table index).
	Outcomes  Outcomes
	WriteBack []bool
	// TableNames name the sources by index (the tables, then the message
	// sources), for the metrics and the log.
	TableNames []string

	// FailCtx bounds status-table writes; ProduceCtx is the records'
	// context, cancelled when the session ends so that nothing stays
	// blocked in the producer.
	FailCtx, ProduceCtx context.Context
	RetryBase           time.Duration // first wait between status-table attempts
	// Stop, if set, ends the session with err at once: for a status table
	// that refuses every write for a reason retries cannot fix, a producer
	// Kafka refuses, a Kafka transaction that cannot commit.
	Stop func(err error)

	heldOnce sync.Once
	held     *heldParks // nil unless Failures parks in batches (HeldParker)
}

// NewLedger fills what l leaves unset (Metrics, Causes, RetryBase) and
// returns it; its other fields must be set.
func NewLedger(l *Ledger) *Ledger {
	if l.Metrics == nil {
		l.Metrics = metrics.New(buildinfo.Info{}, nil)
	}
	if l.Causes.Logger == nil {
		l.Causes = NewCauseLog(l.Log, time.Minute, nil)
	}
	if l.RetryBase == 0 {
		l.RetryBase = 100 * time.Millisecond
	}
	return l
}

// ForPublisher returns the ledger of another publisher's copies in l's
// session (a webhook's): it shares l's tracker, counters, metrics,
// write-back, contexts, cause log and Stop, so that an event is settled
// once every copy of every publisher is; it parks in failures (the
// publisher's status rows) and holds keys and paused topics in order (the
// publisher's own, so that nothing it holds holds Kafka's copies).
func (l *Ledger) ForPublisher(failures FailureStore, order *keyorder.Order) *Ledger {
	return &Ledger{Log: l.Log, Causes: l.Causes, Failures: failures, Order: order, Count: l.Count, Metrics: l.Metrics,
		Tracker: l.Tracker, Outcomes: l.Outcomes, WriteBack: l.WriteBack, TableNames: l.TableNames,
		FailCtx: l.FailCtx, ProduceCtx: l.ProduceCtx, RetryBase: l.RetryBase, Stop: l.Stop}
}

// End ends the session with err, if it can be ended (see Stop).
func (l *Ledger) End(err error) {
	if l.Stop != nil {
		l.Stop(err)
	}
}

// TableName names table i for the metrics and the log.
func (l *Ledger) TableName(i int) string {
	if i < len(l.TableNames) {
		return l.TableNames[i]
	}
	return strconv.Itoa(i)
}

// WritesBack reports whether table writes its outcomes back to its rows.
func (l *Ledger) WritesBack(table int) bool { return table < len(l.WriteBack) && l.WriteBack[table] }

// Delivered settles a copy of it that Kafka acked. The event is delivered
// once every copy is: the last copy of an event whose table writes back is
// counted out of flight once its row says delivered (it.WrittenBack),
// every other copy at once.
func (l *Ledger) Delivered(it *Inflight) {
	if l.ReportsDelivery(it) {
		l.Outcomes.Delivered(it.Event.Table, it.Event.ID, it)
		return
	}
	l.Tracker.Done(it.pgTxn, it.size)
}

// ReportsDelivery reports whether it is the copy whose ack tells
// write-back that its event is delivered: the last of its copies, of a
// table that writes back, with no copy parked. Called once per copy.
func (l *Ledger) ReportsDelivery(it *Inflight) bool {
	return l.Outcomes != nil && l.WritesBack(it.Event.Table) && (it.copies == nil || it.copies.Add(-1) == 0)
}

// parked settles a copy of it that is stored in the status table (with
// its row's failed status, if its table writes back): the event is not
// delivered, whatever becomes of its other copies.
func (l *Ledger) parked(it *Inflight) {
	if it.copies != nil {
		it.copies.Store(math.MinInt32) // never reaches 0 again
	}
	l.Tracker.Done(it.pgTxn, it.size)
}
