package webhook

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempt    int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{1, 0, 800 * time.Millisecond, 1200 * time.Millisecond},
		{2, 0, 1600 * time.Millisecond, 2400 * time.Millisecond},
		{4, 0, 6400 * time.Millisecond, 9600 * time.Millisecond},
		{9, 0, 204 * time.Second, 308 * time.Second}, // 256s, under the cap
		{10, 0, 4 * time.Minute, 6 * time.Minute},    // capped at 5m, jittered
		{1000, 0, 4 * time.Minute, 6 * time.Minute},  // no overflow
		{0, 0, 800 * time.Millisecond, 1200 * time.Millisecond},
		{1, 30 * time.Second, 30 * time.Second, 33 * time.Second},                    // the receiver's wait, never less
		{1, 500 * time.Millisecond, 800 * time.Millisecond, 1200 * time.Millisecond}, // shorter than the backoff's
		{10, 10 * time.Minute, 10 * time.Minute, 11 * time.Minute},                   // longer than BackoffMax
		{1, 24 * time.Hour, MaxRetryAfter, MaxRetryAfter * 11 / 10},                  // capped
	} {
		for range 50 {
			if d := Backoff(tc.attempt, tc.retryAfter); d < tc.lo || d > tc.hi {
				t.Fatalf("Backoff(%d, %s) = %s, want %s to %s", tc.attempt, tc.retryAfter, d, tc.lo, tc.hi)
			}
		}
	}
	seen := map[time.Duration]bool{}
	for range 20 {
		seen[Backoff(3, 0)] = true
	}
	if len(seen) < 2 {
		t.Error("Backoff(3, 0) is the same 20 times: no jitter")
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{Delivered: "delivered", Retry: "retry", Refused: "refused", 0: "outcome(0)"} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", o, got, want)
		}
	}
}
