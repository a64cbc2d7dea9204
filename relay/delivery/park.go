package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/sink"
)

// InvalidRow is the parked-events metric's reason for a row that cannot
// become a record.
const InvalidRow = "invalid_row"

// NoTimestamp is the parked-events metric's reason for a row whose record
// is whole but for its timestamp (its column missing, or of a type the
// mapping cannot use).
const NoTimestamp = "no_timestamp"

// Slow is the parked-events metric's reason for a publisher's event parked
// untried because its receiver answers more slowly than the events
// arrive (IsBehind): behind, not failing; its poller sends it.
const Slow = "slow"

// PoisonAs is how a row that cannot become its record is parked: DEAD, as
// trying again would not help; but FAILED when only its timestamp is
// missing, so that the poller sends it, in its key's order, with the time
// of delivery (as `cdc-relay failed retry` would), and its key is not held
// until a person comes.
func (l *Ledger) PoisonAs(poison error) ParkAs {
	var me *decoder.MappingError
	if errors.As(poison, &me) && me.Timestamp {
		return ParkAs{store: l.Failures.Failed, reason: poison, cause: NoTimestamp}
	}
	return ParkAs{store: l.Failures.Dead, reason: poison, cause: InvalidRow}
}

// FailedAs parks a record Kafka refused for good (err) FAILED, for the
// poller; or, for a Poisoned err, as PoisonAs parks its row. A record a
// publisher did not send because its receiver is slower than the events
// arrive (IsBehind) is parked FAILED too, for its poller, under reason
// Slow.
func (l *Ledger) FailedAs(err error) ParkAs {
	var p poisoned
	if errors.As(err, &p) {
		return l.PoisonAs(p.error)
	}
	if IsBehind(err) {
		return ParkAs{store: l.Failures.Failed, reason: err, cause: Slow}
	}
	return ParkAs{store: l.Failures.Failed, reason: sink.Explain(err), cause: sink.ErrorName(err)}
}

// Poisoned marks err as the reason a row cannot become its record
// (decoder's poison), for an event that waits in at-least-once's alone
// queue behind earlier events of its key (Inflight.Failed) to be parked
// as PoisonAs says once they are settled, in its key's order.
func Poisoned(err error) error { return poisoned{err} }

type poisoned struct{ error }

func (p poisoned) Unwrap() error { return p.error }

// ParkAs is how an event is parked: the store's call, the reason, and
// the metric's label (PoisonAs, FailedAs, WaitingAs, PausedAs). held says
// the event itself did not fail: it is parked behind a held key or a
// paused topic (WAITING, PAUSED), counted in the held-events metric, not
// as a failure.
type ParkAs struct {
	store  func(context.Context, *decoder.Event, error) error
	reason error
	cause  string
	held   bool
}

// ParkInOrder takes it's place in its key's order at once (its key is
// held from now on) and returns the park, to run beside the stream: it
// waits for the key's previous park to commit, then stores it as as says.
// It reports whether the row is stored; if the previous park gave up, so
// does this one, and the event stays in flight.
func (l *Ledger) ParkInOrder(it *Inflight, as ParkAs) func() bool {
	t := l.Order.BeginPark(&it.Event, it.Seq, as.cause == HeldPaused)
	return func() (ok bool) {
		defer func() { l.Order.EndPark(t, ok) }()
		if q := l.heldQueue(); as.held && q != nil {
			// Queued behind its key's previous row, not after its commit:
			// the batches keep the order.
			if !t.WaitQueued() {
				l.Log.Warn("stopped before an earlier event of the key was recorded; this one will be sent again after a restart", "id", string(it.Event.ID))
				return false
			}
			return l.holdBatched(q, t, it, as)
		}
		if !t.Wait() {
			l.Log.Warn("stopped before an earlier event of the key was recorded; this one will be sent again after a restart", "id", string(it.Event.ID))
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
func (l *Ledger) fail(it *Inflight, reason error, cause string, park func(context.Context, *decoder.Event, error) error) bool {
	ev := &it.Event
	if cause == Slow {
		l.Causes.addBehind("event waits for a receiver slower than the events arrive; recording it in the status table for its poller",
			sink.Cause(reason), string(ev.ID), ev.Topic, reason)
	} else {
		l.Causes.add("event cannot be delivered; recording it in the status table", sink.Cause(reason), string(ev.ID), ev.Topic, reason)
	}
	if !l.store(it, reason, park) {
		return false
	}
	l.Count.Failed.Add(1)
	l.Metrics.EventsParked.WithLabelValues(cause).Inc()
	if cause == InvalidRow {
		l.Metrics.EventsDead.Inc()
	}
	l.parked(it)
	return true
}

// hold parks an event behind a held key or a paused topic (reason says
// which: label), as fail does, counted as held.
func (l *Ledger) hold(it *Inflight, reason error, label string, park func(context.Context, *decoder.Event, error) error) bool {
	if !l.store(it, reason, park) {
		return false
	}
	l.Metrics.EventsHeld.WithLabelValues(label).Inc()
	l.parked(it)
	return true
}

// holdBatched parks it behind a held key or a paused topic in the
// session's batch of held parks, which counts it as hold does once its
// batch is stored.
func (l *Ledger) holdBatched(q *heldParks, t *keyorder.Turn, it *Inflight, as ParkAs) bool {
	return q.park(t, it, as)
}

// store writes it's status row with park, retrying with backoff until it
// is stored or failCtx ends, and reports whether it is stored.
func (l *Ledger) store(it *Inflight, reason error, park func(context.Context, *decoder.Event, error) error) bool {
	ev := &it.Event
	backoff := l.RetryBase
	for {
		err := park(l.FailCtx, ev, reason)
		if err == nil {
			return true
		}
		if l.FailCtx.Err() != nil {
			l.Log.Warn("stopped before a failed event was recorded; it will be sent again after a restart", "id", string(ev.ID))
			return false
		}
		if refused(err) && l.Stop != nil {
			// A missing table or privilege: every retry would fail, and
			// the stream would stall behind this event. A missing
			// privilege is granted while the relay runs: Run says which
			// GRANT, and retries (relay/pgnotice); a missing table ends it.
			stop := fmt.Errorf("the status table refuses to record an undeliverable event (%w): "+
				"run `cdc-relay migrate` with the same table flags if it was dropped, or grant the relay's role INSERT and UPDATE on it", err)
			if !pgerr.MissingPrivilege(err) {
				stop = fatal.Error{Err: stop}
			}
			l.Stop(stop)
			return false
		}
		l.Causes.add("could not record an undeliverable event in the status table; retrying", storeCause(err), string(ev.ID), ev.Topic, err)
		select {
		case <-time.After(backoff):
		case <-l.FailCtx.Done():
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// The ways the stream parks an event behind a held key or a paused topic:
// the held-events metric's labels.
const (
	HeldWaiting = "waiting"
	HeldPaused  = "paused"
)

// WaitingAs parks it WAITING behind head, its key's held event.
func (l *Ledger) WaitingAs(it *Inflight, head string) ParkAs {
	return ParkAs{store: l.Failures.Waiting, reason: waitReason(&it.Event, head), cause: HeldWaiting, held: true}
}

// PausedAs parks an event PAUSED: its topic is paused.
func (l *Ledger) PausedAs() ParkAs {
	return ParkAs{store: func(ctx context.Context, ev *decoder.Event, _ error) error { return l.Failures.Paused(ctx, ev) },
		reason: ErrPaused, cause: HeldPaused, held: true}
}

// waitReason is the reason of a WAITING row: what it waits for.
func waitReason(ev *decoder.Event, head string) error {
	if head == "" {
		return fmt.Errorf("waits for an earlier held event of its key on topic %s", ev.Topic)
	}
	return fmt.Errorf("waits for event %s of its key on topic %s", head, ev.Topic)
}

// ErrPaused is the reason given for a PAUSED event in the cause log.
var ErrPaused = errors.New("its topic is paused")
