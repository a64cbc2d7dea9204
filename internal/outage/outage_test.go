package outage

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// step is one thing that happens to a Tracker: at is seconds after the
// start; fail false is a success.
type step struct {
	at   float64
	fail bool
}

// TestTracker: what each sequence of failures and successes reports, with
// a grace of 5 s.
func TestTracker(t *testing.T) {
	f := func(at float64) step { return step{at, true} }
	ok := func(at float64) step { return step{at, false} }
	tests := []struct {
		name  string
		steps []step
		want  []string // "lost <failures>" and "back <lasted>"
	}{
		{"nothing fails", []step{ok(0), ok(1), ok(100)}, nil},
		{"failures then a success: lost and back", []step{ok(0), f(1), f(3), f(6), f(8), ok(21.4)}, []string{"lost 3", "back 20.4s"}},
		{"a blip within the grace: nothing", []step{f(0), f(2), f(4.9), ok(5)}, nil},
		{"repeated failures: one lost", []step{f(0), f(5), f(6), f(7), f(100), f(1000)}, []string{"lost 2"}},
		{"two outages: two pairs", []step{f(0), f(6), ok(7), ok(8), f(10), f(20), ok(30)}, []string{"lost 2", "back 7s", "lost 2", "back 20s"}},
		{"a blip, then an outage counted from its own first failure", []step{f(0), ok(1), f(2), f(3), f(7), ok(9)}, []string{"lost 3", "back 7s"}},
		{"one failure then silence: nothing yet", []step{f(0)}, nil},
		{"successes only after back: one back", []step{f(0), f(5), ok(6), ok(7)}, []string{"lost 2", "back 6s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			now := start
			var got []string
			tr := New(Config{
				Grace: 5 * time.Second,
				Now:   func() time.Time { return now },
				Lost: func(o Outage) {
					if !o.Since.After(start.Add(-time.Nanosecond)) || o.Err == nil || o.Where != "b:9092" {
						t.Errorf("lost with %+v", o)
					}
					got = append(got, fmt.Sprint("lost ", o.Failures))
				},
				Back: func(o Outage) { got = append(got, fmt.Sprint("back ", o.Lasted)) },
			})
			for _, s := range tt.steps {
				now = start.Add(time.Duration(s.at * float64(time.Second)))
				if s.fail {
					tr.Failed("b:9092", errors.New("connection refused"))
				} else {
					tr.Succeeded()
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTrackerDown: Down and Failing follow the outage.
func TestTrackerDown(t *testing.T) {
	now := time.Unix(0, 0)
	tr := New(Config{Grace: time.Second, Now: func() time.Time { return now }})
	if tr.Down() || tr.Failing() {
		t.Fatal("down or failing before any failure")
	}
	tr.Failed("", errors.New("x"))
	if tr.Down() || !tr.Failing() {
		t.Fatal("after one failure within the grace: want failing, not down")
	}
	now = now.Add(time.Second)
	tr.Failed("", errors.New("x"))
	if !tr.Down() {
		t.Fatal("not down after the grace")
	}
	tr.Succeeded()
	if tr.Down() || tr.Failing() {
		t.Fatal("still down or failing after a success")
	}
}

// TestTrackerConcurrent: goroutines failing and succeeding at once get
// lost and back in pairs, in order.
func TestTrackerConcurrent(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	tr := New(Config{
		Lost: func(Outage) { mu.Lock(); lines = append(lines, "lost"); mu.Unlock() },
		Back: func(Outage) { mu.Lock(); lines = append(lines, "back"); mu.Unlock() },
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				if (i+g)%3 == 0 {
					tr.Failed("", errors.New("x"))
				} else {
					tr.Succeeded()
				}
			}
		}()
	}
	wg.Wait()
	tr.Succeeded()
	for i, l := range lines {
		if want := []string{"lost", "back"}[i%2]; l != want {
			t.Fatalf("line %d is %s, want %s: %v", i, l, want, lines)
		}
	}
	if len(lines)%2 != 0 {
		t.Fatalf("%d lines: an outage never ended", len(lines))
	}
}

// TestTrackerDeferAndForget: Defer puts Lost off to a later failure, and an
// outage put off to its end has no Back; Forget starts a new run after a
// silence, unless Lost was called. Grace 5 s, Forget 10 s where set.
func TestTrackerDeferAndForget(t *testing.T) {
	f := func(at float64) step { return step{at, true} }
	ok := func(at float64) step { return step{at, false} }
	tests := []struct {
		name       string
		deferUntil float64 // Defer says true before this second
		forget     time.Duration
		steps      []step
		want       []string
	}{
		{"deferred past the grace: lost at the next failure after", 7, 0, []step{f(0), f(5), f(6), f(8), ok(9)}, []string{"lost 4", "back 9s"}},
		{"deferred to its end: neither line", 100, 0, []step{f(0), f(5), f(6), f(8), ok(9)}, nil},
		{"never deferred: as without Defer", 0, 0, []step{f(0), f(5), ok(6)}, []string{"lost 2", "back 6s"}},
		{"an old blip forgotten: the run starts again", 0, 10 * time.Second, []step{f(0), f(100), f(104), f(105), ok(106)}, []string{"lost 3", "back 6s"}},
		{"attempts closer than Forget: remembered", 0, 10 * time.Second, []step{f(0), f(9), ok(10)}, []string{"lost 2", "back 10s"}},
		{"an outage is not forgotten", 0, 10 * time.Second, []step{f(0), f(5), f(100), ok(101)}, []string{"lost 2", "back 1m41s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Unix(0, 0)
			now := start
			var got []string
			tr := New(Config{
				Grace:  5 * time.Second,
				Forget: tt.forget,
				Now:    func() time.Time { return now },
				Defer:  func(Outage) bool { return now.Before(start.Add(time.Duration(tt.deferUntil * float64(time.Second)))) },
				Lost:   func(o Outage) { got = append(got, fmt.Sprint("lost ", o.Failures)) },
				Back:   func(o Outage) { got = append(got, fmt.Sprint("back ", o.Lasted)) },
			})
			for _, s := range tt.steps {
				now = start.Add(time.Duration(s.at * float64(time.Second)))
				if s.fail {
					tr.Failed("b:9092", errors.New("refused"))
				} else {
					tr.Succeeded()
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
