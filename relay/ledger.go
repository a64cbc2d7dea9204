package relay

import (
	"context"
	"log/slog"
	"math"
	"strconv"
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

// failureStore parks events the fast path cannot deliver (*status.Store):
// Failed for the poller to try again, Dead for an operator, Waiting behind
// an earlier held event of the key, Paused while the topic is paused.
// When any returns nil the row is durable.
type failureStore interface {
	Failed(ctx context.Context, ev *decoder.Event, reason error) error
	Dead(ctx context.Context, ev *decoder.Event, reason error) error
	Waiting(ctx context.Context, ev *decoder.Event, reason error) error
	Paused(ctx context.Context, ev *decoder.Event) error
	heldStore
}

// heldStore says which keys have held rows, and which topics are paused
// (*status.Store).
type heldStore interface {
	HeldKeys(ctx context.Context) ([]status.Key, error)
	StillHeld(ctx context.Context, keys []status.Key) ([]status.Key, error)
	PausedTopics(ctx context.Context) ([]string, error)
}

// outcomes is told the delivery of each event of the tables that write
// it back to their rows (*writeback.Writer behind an index map), and tells
// done once its row says delivered: the event stays in flight until then.
// It never blocks. (A parked event's row is written with its status row:
// status.WriteBack.)
type outcomes interface {
	// Delivered: every copy of the event is in Kafka.
	Delivered(table int, id []byte, done writeback.Done)
	// Waiting is the number of outcomes not written yet.
	Waiting() int
}

// counters count what a relay read and delivered over its life, across
// sessions.
type counters struct {
	read   atomic.Int64 // events read from the slot
	events atomic.Int64 // acked by Kafka
	failed atomic.Int64 // recorded in the status table
}

// ledger is what one session's pipeline and its delivery share to settle
// each event once it left the reader: the tracker that holds it in flight,
// the counters and metrics that count it, write-back, and the status table
// that parks it (park.go). It never waits for Kafka.
type ledger struct {
	log      *slog.Logger
	causes   causeLog // undeliverable events, by cause
	failures failureStore
	// order holds the keys behind a parked event and the paused topics
	// (nil: nothing is held).
	order   *keyorder.Order
	count   *counters
	metrics *metrics.Metrics // nil: newLedger makes some of its own
	tracker *checkpoint.Tracker
	// outcomes, if set, is told the outcome of each event of the tables
	// writeBack marks (by table index).
	outcomes  outcomes
	writeBack []bool
	// tableNames name the sources by index (the tables, then the message
	// sources: Config.SourceNames), for the metrics and the log.
	tableNames []string

	// failCtx bounds status-table writes; produceCtx is the records'
	// context, cancelled when the session ends so that nothing stays
	// blocked in the producer.
	failCtx, produceCtx context.Context
	retryBase           time.Duration // first wait between status-table attempts
	// stop, if set, ends the session with err at once: for a status table
	// that refuses every write for a reason retries cannot fix, a producer
	// Kafka refuses, a Kafka transaction that cannot commit.
	stop func(err error)
}

// newLedger fills what l leaves unset (metrics, the cause log, the retry
// base) and returns it; its other fields must be set.
func newLedger(l *ledger) *ledger {
	if l.metrics == nil {
		l.metrics = metrics.New(buildinfo.Info{}, nil)
	}
	if l.causes.Logger == nil {
		l.causes = newCauseLog(l.log, time.Minute, nil)
	}
	if l.retryBase == 0 {
		l.retryBase = 100 * time.Millisecond
	}
	return l
}

// end ends the session with err, if it can be ended (see stop).
func (l *ledger) end(err error) {
	if l.stop != nil {
		l.stop(err)
	}
}

// tableName names table i for the metrics and the log.
func (l *ledger) tableName(i int) string {
	if i < len(l.tableNames) {
		return l.tableNames[i]
	}
	return strconv.Itoa(i)
}

func (l *ledger) writesBack(table int) bool { return table < len(l.writeBack) && l.writeBack[table] }

// delivered settles a copy of it that Kafka acked. The event is delivered
// once every copy is: the last copy of an event whose table writes back is
// counted out of flight once its row says delivered (it.WrittenBack),
// every other copy at once.
func (l *ledger) delivered(it *inflight) {
	if l.reportsDelivery(it) {
		l.outcomes.Delivered(it.ev.Table, it.ev.ID, it)
		return
	}
	l.tracker.Done(it.pgTxn, it.size)
}

// reportsDelivery reports whether it is the copy whose ack tells
// write-back that its event is delivered: the last of its copies, of a
// table that writes back, with no copy parked. Called once per copy.
func (l *ledger) reportsDelivery(it *inflight) bool {
	return l.outcomes != nil && l.writesBack(it.ev.Table) && (it.copies == nil || it.copies.Add(-1) == 0)
}

// parked settles a copy of it that is stored in the status table (with
// its row's failed status, if its table writes back): the event is not
// delivered, whatever becomes of its other copies.
func (l *ledger) parked(it *inflight) {
	if it.copies != nil {
		it.copies.Store(math.MinInt32) // never reaches 0 again
	}
	l.tracker.Done(it.pgTxn, it.size)
}
