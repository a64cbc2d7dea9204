package writeback

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/ratelog"
)

// flusher is the state of the goroutine in Run: the outcomes it took from
// the queue and has not written yet, per table, with each table's
// statements and retry schedule.
type flusher struct {
	w      *Writer
	tables []tableState
	spare  queue  // the queue's other half, handed back at each take
	seq    uint64 // numbers outcomes in the order they were reported
	live   int    // the outcomes held, over all tables
	// failures and drops log write-back's failures, per table and cause,
	// and the outcomes dropped, at most once a minute each.
	failLog, drops *ratelog.Logger // failures by table and cause; dropped outcomes
	// loggedDrops is the Dropped count last logged, seenDrops the one
	// last looked at.
	loggedDrops, seenDrops int64
	lastErr                error // the latest failure, for Run's result
	// Reused for each table's statement arguments.
	outDelivered, outFailed, outReasons []string
}

func (f *flusher) init(w *Writer) {
	f.w = w
	f.failLog = ratelog.New(w.log, ratelog.Config{Every: time.Minute,
		Summary:   "write-back failed again: the failures of the same table and cause since the one logged",
		CountAttr: "failures", Last: []string{"table", "cause", "err", "pending", "failed_attempts"}})
	// A line per flush that dropped outcomes: the summary counts those
	// flushes; dropped_total counts the outcomes.
	f.drops = ratelog.New(w.log, ratelog.Config{Every: time.Minute,
		Summary: "write-back went on dropping outcomes", CountAttr: "flushes", Last: []string{"dropped_total"}})
	f.tables = make([]tableState, len(w.cfg.Tables))
	for i, t := range w.cfg.Tables {
		f.tables[i] = tableState{Table: t, quoted: pgx.Identifier{t.Schema, t.Name}.Sanitize(),
			latest: map[string]uint64{}, backoff: firstRetry}
	}
}

// flush takes the outcomes reported since the last flush and writes what
// it holds to each table whose retry time has come (every table if force).
func (f *flusher) flush(ctx context.Context, force bool) {
	w := f.w
	w.mu.Lock()
	taken := w.q
	w.q = f.spare
	owed := w.owed
	w.owed = 0
	w.retained += taken.len() - owed
	w.mu.Unlock()

	f.dropOldest(owed)
	f.merge(&taken)
	if cap(taken.entries) > shrinkAbove && 8*taken.len() < cap(taken.entries) {
		taken = queue{} // let the memory of a burst go
	}
	taken.reset()
	f.spare = taken
	f.settle()

	for i := range f.tables {
		t := &f.tables[i]
		if t.live == 0 || (!force && time.Now().Before(t.due)) {
			continue
		}
		f.write(ctx, t)
		f.settle()
		if ctx.Err() != nil {
			break
		}
	}
	f.logDrops()
	f.failLog.Flush()
	f.drops.Flush()
}

// final writes what is waiting once more after Run's context ended, for
// at most finalTimeout.
func (f *flusher) final(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.w.finalTimeout)
	defer cancel()
	f.flush(fctx, true)
	n := f.w.Stats().Pending
	if n == 0 {
		return nil
	}
	err := f.lastErr
	if err == nil {
		err = errors.New("reported after the last flush")
	}
	return fmt.Errorf("write-back: %d outcomes not written before stopping (the events are in Kafka; their rows keep their old status): %w", n, err)
}

// settle makes the Writer's count of retained outcomes the flusher's: what
// the flusher no longer holds (written, dropped, or a repeated id) is not
// owed either.
func (f *flusher) settle() {
	w := f.w
	w.mu.Lock()
	k := w.retained - f.live
	w.retained = f.live
	w.owed = max(0, w.owed-k)
	w.mu.Unlock()
}
