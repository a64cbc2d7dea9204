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
	spare  queue // the queue's other half, handed back at each take
	live   int   // the outcomes held, over all tables
	// failLog logs write-back's failures, per table and cause, and
	// refusedLog the rows that refuse their outcome, per table and
	// SQLSTATE, each at most once a minute.
	failLog, refusedLog *ratelog.Logger
	lastErr             error // the latest failure, for Run's result
	// misses counts the single rows that refused a value in the search
	// of the statement being written (writeBatch).
	misses  int
	liveIdx []int // reused for each table's live outcomes
}

func (f *flusher) init(w *Writer) {
	f.w = w
	f.failLog = ratelog.New(w.log, ratelog.Config{Every: time.Minute,
		Summary:   "write-back failed again: the failures of the same table and cause since the one logged",
		CountAttr: "failures", Last: []string{"table", "cause", "err", "pending", "failed_attempts"}})
	f.refusedLog = ratelog.New(w.log, ratelog.Config{Every: time.Minute,
		Summary:   "write-back refused more rows: those of the same table and cause since the one logged",
		CountAttr: "rows", Last: []string{"table", "id", "cause", "err"}})
	f.tables = make([]tableState, len(w.cfg.Tables))
	for i, t := range w.cfg.Tables {
		f.tables[i] = tableState{Table: t, quoted: pgx.Identifier{t.Schema, t.Name}.Sanitize(),
			index: map[string]int{}, backoff: firstRetry}
	}
}

// flush takes the outcomes reported since the last flush and writes what
// it holds to each table whose retry time has come (every table if force).
func (f *flusher) flush(ctx context.Context, force bool) {
	w := f.w
	w.mu.Lock()
	taken := w.q
	w.q = f.spare
	w.held += taken.len()
	w.mu.Unlock()

	f.merge(&taken)
	if cap(taken.entries) > shrinkAbove && 8*taken.len() < cap(taken.entries) {
		taken = queue{} // let the memory of a burst go
	}
	taken.reset()
	f.spare = taken
	f.settleCount()

	for i := range f.tables {
		t := &f.tables[i]
		if t.live == 0 || (!force && time.Now().Before(t.due)) {
			continue
		}
		f.write(ctx, t)
		f.settleCount()
		if ctx.Err() != nil {
			break
		}
	}
	f.failLog.Flush()
	f.refusedLog.Flush()
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
	return fmt.Errorf("write-back: %d outcomes not written before stopping (their events are not confirmed: "+
		"they are sent again, and written back, after a restart): %w", n, err)
}

// settleCount makes the Writer's count of held outcomes the flusher's.
func (f *flusher) settleCount() {
	f.w.mu.Lock()
	f.w.held = f.live
	f.w.mu.Unlock()
}
