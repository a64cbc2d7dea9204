// Package tick runs a function at an interval until its context ends: the
// one loop that the background tasks (saving the checkpoint, watching
// leadership and the outbox table, health checks, progress lines,
// committing Kafka transactions, writing outcomes back, retention) share.
//
//	tick.Every(ctx, time.Second, func(ctx context.Context) bool {
//		save(ctx)
//		return true // false ends the loop
//	})
//
// [Every] guarantees:
//
//   - The first call comes one interval after Every is called, or at once
//     with [Now].
//   - The interval runs from the start of one call to the start of the
//     next, as a [time.Ticker]'s: a call that takes longer than the interval
//     is followed at once by the next, and the ticks it missed are dropped.
//     With [FromEnd] it runs from the end of each call instead, as a timer
//     reset after each call.
//   - With [Wake], a value received on the channel also makes a call at
//     once.
//   - Calls never overlap, and all run on the caller's goroutine.
//   - Every returns when ctx ends (f is not called once ctx has ended; a
//     call in progress is not interrupted, only given ctx), or as soon as f
//     returns false.
package tick
