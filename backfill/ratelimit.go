package backfill

import (
	"context"
	"time"
)

// Limiter spaces batches so that rows go at most Rate per second on
// average: a batch of n rows takes n/Rate seconds of the budget, and the
// next batch waits until the budget is back. The first batch goes at once.
// A zero Rate is no limit. It is not safe for concurrent use.
type Limiter struct {
	rate  float64
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	next  time.Time // when the next batch may go
}

// NewLimiter returns a limiter of rate rows per second (0: none) on the
// wall clock.
func NewLimiter(rate float64) *Limiter {
	return &Limiter{rate: rate, now: time.Now, sleep: sleepCtx}
}

// Wait waits until a batch of n rows may go, or ctx ends (its error).
func (l *Limiter) Wait(ctx context.Context, n int) error {
	if l.rate <= 0 {
		return nil
	}
	now := l.now()
	if d := l.next.Sub(now); d > 0 {
		if err := l.sleep(ctx, d); err != nil {
			return err
		}
		now = l.next
	}
	l.next = now.Add(time.Duration(float64(n) / l.rate * float64(time.Second)))
	return nil
}

// sleepCtx sleeps for d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
