package ratelog

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// TestConcurrent: every line of goroutines that log at once is either
// logged or counted in a summary.
func TestConcurrent(t *testing.T) {
	var buf syncbuf.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond) // an interval passes every 1,000 lines
		return now
	}
	l := New(newLog(&buf), Config{Every: time.Second, Summary: "held back", CountAttr: "n", Now: clock})
	const goroutines, each = 8, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				l.Log(fmt.Sprint("k", i%3), slog.LevelWarn, "line", "g", g)
				if i%100 == 0 {
					l.Flush()
				}
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	l.Flush()
	total := 0
	for _, ln := range lines(buf.String()) {
		var n int
		if _, err := fmt.Sscanf(ln, `level=WARN msg="held back" n=%d`, &n); err == nil {
			total += n
		} else {
			total++
		}
	}
	if total != goroutines*each {
		t.Errorf("%d lines logged or counted, want %d", total, goroutines*each)
	}
}
