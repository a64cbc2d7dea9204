package delivery

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/status"
)

// HeldParker is what a FailureStore may also do (*status.Store): park
// many events behind held keys or paused topics in one statement, their
// rows in the order given. A Ledger whose Failures has it parks the
// stream's WAITING and PAUSED events in batches.
type HeldParker interface {
	ParkHeld(ctx context.Context, held []status.Held) error
}

// heldParks batches a session's held parks: each park, once its turn
// came (its key's previous park queued here, or committed), queues its
// row; one goroutine stores what is queued, in the order queued, in one
// statement, and tells each park whether its row is stored. Once a batch
// is not stored, no later one is (failed): a key's row is never stored
// when the one before it was not.
type heldParks struct {
	l      *Ledger
	store  HeldParker
	mu     sync.Mutex
	queue  []heldPark
	failed bool // a batch was not stored: none is any more
	wake   chan struct{}
}

// heldPark is one queued park: its event and row, and where its outcome
// goes.
type heldPark struct {
	it   *Inflight
	row  status.Held
	done chan bool
}

// heldQueue returns the session's batcher of held parks, started on
// first use; nil when Failures cannot park in batches.
func (l *Ledger) heldQueue() *heldParks {
	l.heldOnce.Do(func() {
		if hp, ok := l.Failures.(HeldParker); ok {
			l.held = &heldParks{l: l, store: hp, wake: make(chan struct{}, 1)}
			go l.held.run()
		}
	})
	return l.held
}

// park queues it's row and waits until it is stored (true) or the
// session gave up on it (false, failCtx ended or the table refused).
func (h *heldParks) park(t *keyorder.Turn, it *Inflight, as ParkAs) bool {
	p := heldPark{it: it, row: status.Held{Event: &it.Event, Reason: as.reason, Paused: as.cause == HeldPaused}, done: make(chan bool, 1)}
	h.mu.Lock()
	h.queue = append(h.queue, p)
	h.mu.Unlock()
	t.Queued() // the key's next row may queue behind it now
	select {
	case h.wake <- struct{}{}:
	default:
	}
	select {
	case ok := <-p.done:
		return ok
	case <-h.l.FailCtx.Done():
		select {
		case ok := <-p.done:
			return ok
		default:
			return false // run gave up, or will
		}
	}
}

// run stores the queued parks, a batch at a time, until failCtx ends;
// then it gives up on what is queued.
func (h *heldParks) run() {
	for {
		select {
		case <-h.wake:
		case <-h.l.FailCtx.Done():
			h.giveUp()
			return
		}
		for {
			h.mu.Lock()
			batch := h.queue
			h.queue = nil
			h.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			ok := !h.failed && h.storeBatch(batch)
			h.failed = !ok
			for _, p := range batch {
				if ok { // counted before the park hears it, as hold counts
					h.l.Metrics.EventsHeld.WithLabelValues(heldLabel(p.row)).Inc()
					h.l.parked(p.it)
				}
				p.done <- ok
			}
		}
	}
}

// giveUp tells every queued park that its row is not stored.
func (h *heldParks) giveUp() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.queue {
		p.done <- false
	}
	if len(h.queue) > 0 {
		h.l.Log.Warn("stopped before held events were recorded; they will be sent again after a restart", "events", len(h.queue))
	}
	h.queue = nil
}

// storeBatch stores batch's rows as store does one row: retrying with
// backoff until they are stored or failCtx ends, and ending the session
// when the table refuses them for good.
func (h *heldParks) storeBatch(batch []heldPark) bool {
	l := h.l
	rows := make([]status.Held, len(batch))
	for i, p := range batch {
		rows[i] = p.row
	}
	first := &batch[0].it.Event
	backoff := l.RetryBase
	for {
		err := h.store.ParkHeld(l.FailCtx, rows)
		if err == nil {
			return true
		}
		if l.FailCtx.Err() != nil {
			return false
		}
		if refused(err) && l.Stop != nil {
			stop := fmt.Errorf("the status table refuses to record held events (%w): "+
				"run `cdc-relay migrate` with the same table flags if it was dropped, or grant the relay's role INSERT and UPDATE on it", err)
			if !pgerr.MissingPrivilege(err) {
				stop = fatal.Error{Err: stop}
			}
			l.Stop(stop)
			return false
		}
		l.Causes.add("could not record held events in the status table; retrying", storeCause(err), string(first.ID), first.Topic, err)
		select {
		case <-time.After(backoff):
		case <-l.FailCtx.Done():
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// heldLabel is the held-events metric's label of row.
func heldLabel(row status.Held) string {
	if row.Paused {
		return HeldPaused
	}
	return HeldWaiting
}
