package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/metrics"
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

// TestResultClass: each result has the class the metrics count its
// request in, one of metrics.WebhookClasses, or none for a request that
// was never sent or that the caller stopped.
func TestResultClass(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	for _, tc := range []struct {
		name string
		r    Result
		want string
	}{
		{"200", Result{Outcome: Delivered, Status: 200}, "2xx"},
		{"204", Result{Outcome: Delivered, Status: 204}, "2xx"},
		{"301", Result{Outcome: Refused, Status: 301}, "3xx"},
		{"404", Result{Outcome: Refused, Status: 404}, "4xx"},
		{"408", Result{Outcome: Retry, Status: 408}, "4xx"},
		{"429", Result{Outcome: Retry, Status: 429}, "4xx"},
		{"503", Result{Outcome: Retry, Status: 503}, "5xx"},
		{"599", Result{Outcome: Retry, Status: 599}, "5xx"},
		{"101", Result{Outcome: Refused, Status: 101}, "other"},
		{"600", Result{Outcome: Refused, Status: 600}, "other"},
		{"the timeout", Result{Outcome: Retry, Err: fmt.Errorf("no answer: %w", context.DeadlineExceeded)}, "timeout"},
		{"a dial timeout", Result{Outcome: Retry, Err: &net.OpError{Op: "dial", Err: timeoutErr{}}}, "timeout"},
		{"connection refused", Result{Outcome: Retry, Err: refused}, "connection"},
		{"a TLS failure", Result{Outcome: Retry, Err: errors.New("tls: handshake failure")}, "connection"},
		{"stopped by the caller", Result{Outcome: Retry, Err: fmt.Errorf("stopped: %w", context.Canceled)}, ""},
		{"not made", Result{Outcome: Refused, Err: errors.New("event id cannot be webhook-id")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.Class()
			if got != tc.want {
				t.Fatalf("Class() = %q, want %q", got, tc.want)
			}
			if got != "" && !slices.Contains(metrics.WebhookClasses, got) {
				t.Fatalf("class %q is not one of metrics.WebhookClasses %v", got, metrics.WebhookClasses)
			}
		})
	}
	if !slices.Equal(classes, metrics.WebhookClasses) {
		t.Fatalf("the classes %v are not metrics.WebhookClasses %v", classes, metrics.WebhookClasses)
	}
}

// timeoutErr is a net.Error that timed out.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
