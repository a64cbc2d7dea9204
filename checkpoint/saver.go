package checkpoint

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
)

// Saver keeps a slot's row in the checkpoint table up to date with the
// position confirmed to PostgreSQL: it saves at most once an interval, only
// when the position moved, and once more when it is closed.
type Saver struct {
	store *Store
	slot  string
	log   *slog.Logger

	confirmed atomic.Uint64
	cancel    context.CancelFunc // ends the loop, and a save in progress
	done      chan struct{}
}

// StartSaver starts saving slot's confirmed position, from start, every
// interval. log receives save failures (they are retried at the next
// interval); nil discards them.
func (s *Store) StartSaver(slot string, start pglogrepl.LSN, every time.Duration, log *slog.Logger) *Saver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sv := &Saver{store: s, slot: slot, log: log, cancel: cancel, done: make(chan struct{})}
	sv.confirmed.Store(uint64(start))
	go sv.loop(ctx, start, every)
	return sv
}

// Confirmed records that lsn was confirmed to PostgreSQL. It is cheap and
// safe for concurrent use.
func (sv *Saver) Confirmed(lsn pglogrepl.LSN) { sv.confirmed.Store(uint64(lsn)) }

// Position returns the last confirmed position recorded.
func (sv *Saver) Position() pglogrepl.LSN { return pglogrepl.LSN(sv.confirmed.Load()) }

func (sv *Saver) loop(ctx context.Context, saved pglogrepl.LSN, every time.Duration) {
	defer close(sv.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c := sv.Position(); c != saved {
			if err := sv.store.Save(ctx, sv.slot, c); err != nil {
				if ctx.Err() == nil {
					sv.log.Warn("could not save the checkpoint; retrying at the next interval", "err", err)
				}
				continue
			}
			saved = c
		}
	}
}

// Close stops the saver and saves the last confirmed position, bounded by
// ctx. It returns that position.
func (sv *Saver) Close(ctx context.Context) (pglogrepl.LSN, error) {
	sv.cancel() // a save in progress is abandoned: the one below replaces it
	<-sv.done
	final := sv.Position()
	return final, sv.store.Save(ctx, sv.slot, final)
}
