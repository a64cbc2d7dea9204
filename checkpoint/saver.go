package checkpoint

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
)

// Saver keeps a slot's checkpoint row ahead of what is confirmed to
// PostgreSQL: it saves the position its source reports (the tracker's safe
// position) at most once an interval, when it moved, and [Saver.Saved] is
// the bound the stream may confirm up to. Save failures are logged and
// retried at the next interval; confirmation waits meanwhile.
type Saver struct {
	store  *Store
	slot   string
	log    *slog.Logger
	source func() pglogrepl.LSN

	mu     sync.Mutex // one save at a time, so saved only grows
	saved  atomic.Uint64
	cancel context.CancelFunc // ends the loop, and a save in progress
	done   chan struct{}
}

// StartSaver starts saving source's position for slot every interval. start
// must already be stored (the position the session resumed from). log
// receives save failures; nil discards them.
func (s *Store) StartSaver(slot string, start pglogrepl.LSN, every time.Duration, source func() pglogrepl.LSN, log *slog.Logger) *Saver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sv := &Saver{store: s, slot: slot, log: log, source: source, cancel: cancel, done: make(chan struct{})}
	sv.saved.Store(uint64(start))
	go sv.loop(ctx, every)
	return sv
}

// Saved returns the newest position stored in the checkpoint table: the
// most the stream may confirm to PostgreSQL. It is cheap and safe for
// concurrent use.
func (sv *Saver) Saved() pglogrepl.LSN { return pglogrepl.LSN(sv.saved.Load()) }

// Flush saves the source's position now, so that a final confirmation can
// include everything delivered.
func (sv *Saver) Flush(ctx context.Context) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	pos := sv.source()
	if pos <= sv.Saved() {
		return nil
	}
	if err := sv.store.Save(ctx, sv.slot, pos); err != nil {
		return err
	}
	sv.saved.Store(uint64(pos))
	return nil
}

func (sv *Saver) loop(ctx context.Context, every time.Duration) {
	defer close(sv.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := sv.Flush(ctx); err != nil && ctx.Err() == nil {
			sv.log.Warn("could not save the checkpoint; PostgreSQL is not told of new positions until it is saved (retrying)", "err", err)
		}
	}
}

// Close stops the saver and saves the source's last position, bounded by
// ctx. It returns the position stored.
func (sv *Saver) Close(ctx context.Context) (pglogrepl.LSN, error) {
	sv.cancel() // a save in progress is abandoned: the one below replaces it
	<-sv.done
	err := sv.Flush(ctx)
	return sv.Saved(), err
}
