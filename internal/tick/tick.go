package tick

import (
	"context"
	"time"
)

// Every calls f(ctx) every interval until ctx ends or f returns false, as
// the package documentation says; opts change when the calls come.
func Every(ctx context.Context, interval time.Duration, f func(context.Context) bool, opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var (
		ticks   <-chan time.Time
		restart = func() {}
	)
	if o.fromEnd {
		timer := time.NewTimer(interval)
		defer timer.Stop()
		ticks, restart = timer.C, func() { timer.Reset(interval) }
	} else {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		ticks = ticker.C
	}
	call := func() bool {
		if ctx.Err() != nil || !f(ctx) {
			return false
		}
		restart()
		return true
	}
	if o.now && !call() {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		case <-o.wake:
		}
		if !call() {
			return
		}
	}
}

// Option changes when [Every] calls its function.
type Option func(*options)

type options struct {
	now     bool
	fromEnd bool
	wake    <-chan struct{} // nil: never
}

// Now makes the first call at once, instead of one interval later.
func Now() Option { return func(o *options) { o.now = true } }

// FromEnd measures each interval from the end of the call before it, so
// that there is always a whole interval between two calls.
func FromEnd() Option { return func(o *options) { o.fromEnd = true } }

// Wake makes a call at once whenever a value is received on ch, besides
// the calls at the interval. With [FromEnd], the next interval then runs
// from the end of that call.
func Wake(ch <-chan struct{}) Option { return func(o *options) { o.wake = ch } }
