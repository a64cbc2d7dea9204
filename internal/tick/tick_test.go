package tick_test

import (
	"context"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/tick"
)

// timing is a case of the timing tests: Every with opts, and the span the
// time measured must fall in.
type timing struct {
	name     string
	opts     []tick.Option
	min, max time.Duration
}

func (tt timing) check(t *testing.T, what string, got time.Duration) {
	t.Helper()
	if got < tt.min || got > tt.max {
		t.Errorf("%s after %v; want %v to %v", what, got, tt.min, tt.max)
	}
}

// TestEveryFirstCall: one interval after the start, or at once with Now.
func TestEveryFirstCall(t *testing.T) {
	const interval = 200 * time.Millisecond
	for _, tt := range []timing{
		{"after one interval", nil, interval, time.Hour},
		{"now", []tick.Option{tick.Now()}, 0, interval / 2},
		{"from the end, after one interval", []tick.Option{tick.FromEnd()}, interval, time.Hour},
		{"from the end, now", []tick.Option{tick.FromEnd(), tick.Now()}, 0, interval / 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			var first time.Duration
			tick.Every(context.Background(), interval, func(context.Context) bool {
				first = time.Since(start)
				return false
			}, tt.opts...)
			tt.check(t, "first call", first)
		})
	}
}

// TestEveryLongCall: after a call longer than the interval, the next comes
// at once; with FromEnd, one whole interval later.
func TestEveryLongCall(t *testing.T) {
	const interval = 300 * time.Millisecond
	for _, tt := range []timing{
		{"ticker", nil, 0, interval * 3 / 4},
		{"from the end", []tick.Option{tick.FromEnd()}, interval, time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ended time.Time
			var gap time.Duration
			tick.Every(context.Background(), interval, func(context.Context) bool {
				if ended.IsZero() {
					time.Sleep(interval * 7 / 3)
					ended = time.Now()
					return true
				}
				gap = time.Since(ended)
				return false
			}, append(tt.opts, tick.Now())...)
			tt.check(t, "second call, from the end of the first,", gap)
		})
	}
}

// TestEveryEnds: Every returns when f returns false, and when ctx ends,
// without calling f again.
func TestEveryEnds(t *testing.T) {
	calls := 0
	tick.Every(context.Background(), time.Millisecond, func(context.Context) bool {
		calls++
		return calls < 3
	})
	if calls != 3 {
		t.Errorf("%d calls after f returned false at the third; want 3", calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	tick.Every(ctx, time.Millisecond, func(context.Context) bool {
		calls++
		cancel()
		return true
	})
	if calls != 1 {
		t.Errorf("%d calls after ctx ended in the first; want 1", calls)
	}

	calls = 0
	tick.Every(ctx, time.Millisecond, func(context.Context) bool {
		calls++
		return true
	}, tick.Now())
	if calls != 0 {
		t.Errorf("%d calls with ctx ended before the start; want 0", calls)
	}
}

// TestEveryWake: a value on the wake channel makes a call at once.
func TestEveryWake(t *testing.T) {
	wake := make(chan struct{}, 1)
	wake <- struct{}{}
	// An hour's interval: only the wake can make the call, and a wake
	// that does not work fails at the deadline instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	called := false
	tick.Every(ctx, time.Hour, func(context.Context) bool {
		called = true
		return false
	}, tick.Wake(wake))
	if !called {
		t.Error("no call within 10 s of a wake")
	}
}
