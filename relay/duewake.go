package relay

import (
	"context"
	"time"

	"github.com/cdc-relay/cdc-relay/status"
)

// dueListenRetry is the wait before listening again on status.DueChannel
// after the listening connection failed. Meanwhile the poller looks at
// its interval, as it does without notifications.
const dueListenRetry = 5 * time.Second

// dueWakes are what a notification on status.DueChannel wakes: the
// poller, to claim the rows made due, and the read of the paused topics,
// so that a resumed topic's new events flow at once.
type dueWakes struct {
	poller, paused chan struct{}
}

func newDueWakes() dueWakes {
	return dueWakes{poller: make(chan struct{}, 1), paused: make(chan struct{}, 1)}
}

// wake wakes each, once however many notifications came before it woke.
func (w dueWakes) wake() {
	for _, ch := range []chan struct{}{w.poller, w.paused} {
		wakeOnce(ch)
	}
}

// wakePoller wakes the poller alone: a claim carried a key's drain over
// to the next claim (keyorder.Order.BeginDrain).
func (w dueWakes) wakePoller() { wakeOnce(w.poller) }

func wakeOnce(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// listenDue listens on status.DueChannel until ctx ends, on a connection
// taken out of the pool for it, and wakes w for each notification: a
// `failed retry`, `skip`, `purge` or `resume` takes effect at once
// rather than at the poller's next look, with the topics' size limits
// described again as they are met. A failed connection is logged
// at debug level and replaced after dueListenRetry.
func (s *session) listenDue(ctx context.Context, w dueWakes) {
	for ctx.Err() == nil {
		err := s.listenDueOnce(ctx, w)
		if ctx.Err() != nil {
			return
		}
		s.log.Debug("could not listen for events made due; the poller looks at its interval until it listens again", "err", err, "retry_in", dueListenRetry)
		select {
		case <-ctx.Done():
		case <-time.After(dueListenRetry):
		}
	}
}

// listenDueOnce listens on one connection until it fails or ctx ends. The
// connection leaves the pool, so that it never serves another query with
// LISTEN on, and is closed.
func (s *session) listenDueOnce(ctx context.Context, w dueWakes) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack()
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), poolCloseWait)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	return status.ListenDue(ctx, conn, func() {
		// An operator who retried events may have raised their topic's
		// max.message.bytes a moment ago: the poller's check of a record's
		// size describes the topic again rather than trust a description
		// from before.
		s.pollSink.LimitsMayHaveChanged()
		w.wake()
	})
}
