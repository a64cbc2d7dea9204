package relay

import (
	"time"

	"github.com/cdc-relay/cdc-relay/checkpoint"
)

// progressInterval is how often progress is logged while events flow.
const progressInterval = 10 * time.Second

// reportProgress logs a progress line every interval in which events were
// delivered, and the counts of undeliverable events by cause, until the
// returned function is called.
func (r *runner) reportProgress(every time.Duration, tracker *checkpoint.Tracker, saver *checkpoint.Saver) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		last := r.count.events.Load()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			r.causes.Flush()
			if n := r.count.events.Load(); n != last {
				inflight, _ := tracker.InFlight()
				r.log.Info("progress", "events", n, "failed", r.count.failed.Load(), "in_flight", inflight, "checkpoint", saver.Saved())
				last = n
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
