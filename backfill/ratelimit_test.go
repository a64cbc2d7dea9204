package backfill

import (
	"context"
	"testing"
	"time"
)

// fakeClock is a clock that sleeping moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.t = c.t.Add(d)
	return nil
}

// TestLimiterSpacesBatches: the batches go at the rate on average, the
// first at once, and a pause between batches is not made up for with a
// burst beyond one batch.
func TestLimiterSpacesBatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		rate    float64
		batches []int
		idle    time.Duration // the caller's own time between batches
		want    time.Duration // from the first Wait to the last's return
	}{
		{"even batches", 1000, []int{100, 100, 100, 100, 100}, 0, 400 * time.Millisecond},
		{"uneven batches", 100, []int{50, 10, 40}, 0, 600 * time.Millisecond},
		{"slow caller waits for nothing", 1000, []int{100, 100, 100}, time.Second, 2 * time.Second},
		{"no limit", 0, []int{1000, 1000, 1000}, 0, 0},
		{"one batch", 10, []int{1000}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(1000, 0)}
			l := &Limiter{rate: tc.rate, now: clock.now, sleep: clock.sleep}
			start := clock.t
			for i, n := range tc.batches {
				if i > 0 {
					clock.t = clock.t.Add(tc.idle)
				}
				if err := l.Wait(context.Background(), n); err != nil {
					t.Fatal(err)
				}
			}
			if got := clock.t.Sub(start); got != tc.want {
				t.Errorf("took %s, want %s", got, tc.want)
			}
		})
	}
}

// TestLimiterStopsWithContext: a wait ends with its context.
func TestLimiterStopsWithContext(t *testing.T) {
	t.Parallel()
	l := NewLimiter(1) // one row a second
	if err := l.Wait(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := l.Wait(ctx, 1); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("Wait = %v after %s, want the context's error at once", err, time.Since(start))
	}
}
