package relay

import (
	"context"
	"time"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/tick"
)

// progressInterval is how often progress is logged while events flow.
const progressInterval = 10 * time.Second

// reportProgress logs a progress line every interval in which events were
// delivered, and the counts of undeliverable events by cause and of
// records that overtook a parked event of their key, until the
// returned function is called.
func (r *runner) reportProgress(every time.Duration, tracker *checkpoint.Tracker, saver *checkpoint.Saver) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		last := r.count.Events.Load()
		tick.Every(ctx, every, func(context.Context) bool {
			r.causes.Flush()
			if o := r.order.Load(); o != nil {
				o.FlushViolations()
			}
			if n := r.count.Events.Load(); n != last {
				inflight, _ := tracker.InFlight()
				r.log.Info("progress", "events", n, "failed", r.count.Failed.Load(), "in_flight", inflight, "checkpoint", saver.Saved())
				last = n
			}
			return true
		})
	}()
	return func() {
		cancel()
		<-stopped
	}
}
