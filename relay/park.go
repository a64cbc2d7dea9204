package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/sink"
)

// invalidRow is the parked-events metric's reason for a row that cannot
// become a record.
const invalidRow = "invalid_row"

// noTimestamp is the parked-events metric's reason for a row whose record
// is whole but for its timestamp (its column missing, or of a type the
// mapping cannot use).
const noTimestamp = "no_timestamp"

// poisonAs is how a row that cannot become its record is parked: DEAD, as
// trying again would not help; but FAILED when only its timestamp is
// missing, so that the poller sends it, in its key's order, with the time
// of delivery (as `cdc-relay failed retry` would), and its key is not held
// until a person comes.
func poisonAs(failures failureStore, poison error) parkAs {
	var me *decoder.MappingError
	if errors.As(poison, &me) && me.Timestamp {
		return parkAs{store: failures.Failed, reason: poison, cause: noTimestamp}
	}
	return parkAs{store: failures.Dead, reason: poison, cause: invalidRow}
}

// parkAs is how an event is parked: the store's call, the reason, and
// the metric's label. held says the event itself did not fail: it is
// parked behind a held key or a paused topic (WAITING, PAUSED), counted in
// the held-events metric, not as a failure.
type parkAs struct {
	store  func(context.Context, *decoder.Event, error) error
	reason error
	cause  string
	held   bool
}

// parkInOrder takes it's place in its key's order at once (its key is
// held from now on) and returns the park, to run beside the stream: it
// waits for the key's previous park to commit, then stores it as as says.
// It reports whether the row is stored; if the previous park gave up, so
// does this one, and the event stays in flight.
func (l *ledger) parkInOrder(it *inflight, as parkAs) func() bool {
	t := l.order.BeginPark(&it.ev, it.Seq, as.cause == heldPaused)
	return func() (ok bool) {
		defer func() { l.order.EndPark(t, ok) }()
		if !t.Wait() {
			l.log.Warn("stopped before an earlier event of the key was recorded; this one will be sent again after a restart", "id", string(it.ev.ID))
			return false
		}
		if as.held {
			return l.hold(it, as.reason, as.cause, as.store)
		}
		return l.fail(it, as.reason, as.cause, as.store)
	}
}

// fail parks an undeliverable event in the status table with park,
// retrying with backoff until it is stored, then lets the checkpoint pass
// it (the status table writes its row's failed status, if its table
// writes back); cause names the reason in the metrics. It reports whether the event
// is stored. If failCtx ends first, the event stays in flight:
// unconfirmed, it is sent again after a restart.
func (l *ledger) fail(it *inflight, reason error, cause string, park func(context.Context, *decoder.Event, error) error) bool {
	ev := &it.ev
	l.causes.add("event cannot be delivered; recording it in the status table", sink.Cause(reason), string(ev.ID), ev.Topic, reason)
	if !l.store(it, reason, park) {
		return false
	}
	l.count.failed.Add(1)
	l.metrics.EventsParked.WithLabelValues(cause).Inc()
	if cause == invalidRow {
		l.metrics.EventsDead.Inc()
	}
	l.parked(it)
	return true
}

// hold parks an event behind a held key or a paused topic (reason says
// which: label), as fail does, counted as held.
func (l *ledger) hold(it *inflight, reason error, label string, park func(context.Context, *decoder.Event, error) error) bool {
	if !l.store(it, reason, park) {
		return false
	}
	l.metrics.EventsHeld.WithLabelValues(label).Inc()
	l.parked(it)
	return true
}

// store writes it's status row with park, retrying with backoff until it
// is stored or failCtx ends, and reports whether it is stored.
func (l *ledger) store(it *inflight, reason error, park func(context.Context, *decoder.Event, error) error) bool {
	ev := &it.ev
	backoff := l.retryBase
	for {
		err := park(l.failCtx, ev, reason)
		if err == nil {
			return true
		}
		if l.failCtx.Err() != nil {
			l.log.Warn("stopped before a failed event was recorded; it will be sent again after a restart", "id", string(ev.ID))
			return false
		}
		if refused(err) && l.stop != nil {
			// A missing table or privilege: every retry would fail, and
			// the stream would stall behind this event. A missing
			// privilege is granted while the relay runs: Run says which
			// GRANT, and retries (privilege.go); a missing table ends it.
			stop := fmt.Errorf("the status table refuses to record an undeliverable event (%w): "+
				"run `cdc-relay migrate` with the same table flags if it was dropped, or grant the relay's role INSERT and UPDATE on it", err)
			if !missingPrivilege(err) {
				stop = fatalError{stop}
			}
			l.stop(stop)
			return false
		}
		l.causes.add("could not record an undeliverable event in the status table; retrying", storeCause(err), string(ev.ID), ev.Topic, err)
		select {
		case <-time.After(backoff):
		case <-l.failCtx.Done():
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// The ways the stream parks an event behind a held key or a paused topic.
const (
	heldWaiting = "waiting"
	heldPaused  = "paused"
)

// waitingAs parks it WAITING behind head, its key's held event.
func (l *ledger) waitingAs(it *inflight, head string) parkAs {
	return parkAs{store: l.failures.Waiting, reason: waitReason(&it.ev, head), cause: heldWaiting, held: true}
}

// pausedAs parks an event PAUSED: its topic is paused.
func (l *ledger) pausedAs() parkAs {
	return parkAs{store: func(ctx context.Context, ev *decoder.Event, _ error) error { return l.failures.Paused(ctx, ev) },
		reason: errPaused, cause: heldPaused, held: true}
}

// waitReason is the reason of a WAITING row: what it waits for.
func waitReason(ev *decoder.Event, head string) error {
	if head == "" {
		return fmt.Errorf("waits for an earlier held event of its key on topic %s", ev.Topic)
	}
	return fmt.Errorf("waits for event %s of its key on topic %s", head, ev.Topic)
}

// errPaused is the reason given for a PAUSED event in the cause log.
var errPaused = errors.New("its topic is paused")

// refused reports whether a status-table error will not go away by
// itself: SQLSTATE class 42 (a missing table or column, a missing
// privilege).
func refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && len(pgErr.Code) == 5 && pgErr.Code[:2] == "42"
}

// storeCause names a status-table error for the cause log: its SQLSTATE,
// or the connection (never anything of the event, which would make every
// event a cause of its own).
func storeCause(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return "status table: SQLSTATE " + pgErr.Code
	}
	return "status table: no connection"
}
