package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/tick"
)

// Saver keeps a slot's checkpoint row ahead of what is confirmed to
// PostgreSQL: it saves the position its source reports (the tracker's safe
// position, with its commit time) at most once an interval, when it moved,
// and [Saver.Saved] is the bound the stream may confirm up to. Save failures are logged and
// retried at the next interval; confirmation waits meanwhile.
type Saver struct {
	store *Store
	slot  string
	opts  SaverOptions

	turn     chan struct{} // one save at a time, so saved only grows; a waiter may give up
	saved    atomic.Uint64
	shutdown sync.Once
	cancel   context.CancelFunc // ends the loop, and a save in progress
	done     chan struct{}

	privilege sync.Once // OnPrivilegeMissing was called
}

// SaverOptions configures a [Saver].
type SaverOptions struct {
	// Every is the interval between saves. Default 1s.
	Every time.Duration
	// Source is the position to save (the tracker's safe position), with
	// its commit time (zero keeps the time stored: see [Store.SaveAt]).
	Source func() Position
	// OnServerShutdown, if set, is called once when a save fails because
	// the server is shutting down. A fast shutdown waits for each logical
	// walsender's client to confirm everything sent, which the stream
	// cannot do while nothing can be saved: the caller must end the stream
	// so the shutdown can finish.
	OnServerShutdown func()
	// OnPrivilegeMissing, if set, is called once, with the error, when a
	// save fails because the session's role lacks a privilege on the
	// checkpoint table (SQLSTATE 42501: UPDATE revoked, say): every save
	// would fail until it is granted, so the caller ends the stream and
	// says what to grant, instead of a failure logged every interval.
	OnPrivilegeMissing func(error)
	// Logger receives save failures; nil discards them.
	Logger *slog.Logger
}

// StartSaver starts saving opts.Source's position for slot. start must
// already be stored (the position the session resumed from).
func (s *Store) StartSaver(slot string, start pglogrepl.LSN, opts SaverOptions) *Saver {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	sv := &Saver{store: s, slot: slot, opts: opts, cancel: cancel, done: make(chan struct{}), turn: make(chan struct{}, 1)}
	sv.saved.Store(uint64(start))
	go sv.loop(ctx)
	return sv
}

// Saved returns the newest position stored in the checkpoint table: the
// most the stream may confirm to PostgreSQL. It is cheap and safe for
// concurrent use.
func (sv *Saver) Saved() pglogrepl.LSN { return pglogrepl.LSN(sv.saved.Load()) }

// Flush saves the source's position now, so that a final confirmation can
// include everything delivered.
func (sv *Saver) Flush(ctx context.Context) error {
	select {
	case sv.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("save the checkpoint of slot %q: %w (a save in progress is blocked)", sv.slot, ctx.Err())
	}
	defer func() { <-sv.turn }()
	pos := sv.opts.Source()
	if pos.LSN <= sv.Saved() {
		return nil
	}
	if err := sv.store.SaveAt(ctx, sv.slot, pos); err != nil {
		if pgerr.ShuttingDown(err) && sv.opts.OnServerShutdown != nil {
			sv.shutdown.Do(sv.opts.OnServerShutdown)
		}
		if sv.privilegeSaid(err) {
			sv.privilege.Do(func() { sv.opts.OnPrivilegeMissing(err) })
		}
		return err
	}
	sv.saved.Store(uint64(pos.LSN))
	return nil
}

// saveTimeout bounds one save of the loop; it is retried at the next
// interval.
const saveTimeout = 10 * time.Second

func (sv *Saver) loop(ctx context.Context) {
	defer close(sv.done)
	tick.Every(ctx, sv.opts.Every, func(ctx context.Context) bool {
		// Bounded: a save blocked behind a lock (a migration waiting for
		// a long reader) must not hold confirmation back unseen.
		sctx, cancel := context.WithTimeout(ctx, saveTimeout)
		err := sv.Flush(sctx)
		cancel()
		if err != nil && ctx.Err() == nil && !sv.privilegeSaid(err) {
			// A lost connection is at debug: the relay's outage lines say
			// so once.
			sv.opts.Logger.Log(ctx, pgerr.Level(err), "could not save the checkpoint; PostgreSQL is not told of new positions until it is saved (retrying)", "err", err)
		}
		return true
	})
}

// privilegeSaid reports whether err is a missing privilege that
// OnPrivilegeMissing reports, for the caller to say.
func (sv *Saver) privilegeSaid(err error) bool {
	var pgErr *pgconn.PgError
	return sv.opts.OnPrivilegeMissing != nil && errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// Close stops the saver and saves the source's last position, bounded by
// ctx. It returns the position stored.
func (sv *Saver) Close(ctx context.Context) (pglogrepl.LSN, error) {
	sv.cancel() // a save in progress is abandoned: the one below replaces it
	<-sv.done
	err := sv.Flush(ctx)
	return sv.Saved(), err
}
