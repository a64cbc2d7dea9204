package checkpoint

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// fakeDB is the checkpoint table: Exec records the position saved, blocks
// until its context ends while block is set, or fails with fail.
type fakeDB struct {
	mu      sync.Mutex
	saved   []string
	commits []*time.Time // the commit time of each save, nil for none
	block   bool
	fail    error
	called  chan struct{}
}

func (f *fakeDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	f.mu.Lock()
	block, fail := f.block, f.fail
	f.mu.Unlock()
	select {
	case f.called <- struct{}{}:
	default:
	}
	if block {
		<-ctx.Done()
		return pgconn.CommandTag{}, ctx.Err()
	}
	if fail != nil {
		return pgconn.CommandTag{}, fail
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.saved = append(f.saved, args[1].(string))
	f.commits = append(f.commits, args[2].(*time.Time))
	return pgconn.CommandTag{}, nil
}

func (f *fakeDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row { panic("not used") }

// lsnSource is a saver's source that reports lsn with no commit time.
func lsnSource(lsn *atomic.Uint64) func() Position {
	return func() Position { return Position{LSN: pglogrepl.LSN(lsn.Load())} }
}

func TestSaverSavesBeforeItVouches(t *testing.T) {
	db := &fakeDB{called: make(chan struct{}, 1)}
	commit := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	var pos atomic.Pointer[Position]
	pos.Store(&Position{LSN: 0x100})
	sv := NewStore(db, "public", "cp").StartSaver("s", 0x100, SaverOptions{Every: time.Hour, Source: func() Position { return *pos.Load() }})
	pos.Store(&Position{LSN: 0x200, CommitTime: commit})
	if got := sv.Saved(); got != 0x100 {
		t.Fatalf("Saved %s before any save, want the start 0/100", got)
	}
	if err := sv.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sv.Saved(); got != 0x200 || len(db.saved) != 1 || db.saved[0] != "0/200" {
		t.Fatalf("after Flush: Saved %s, saved rows %v; want 0/200 once", got, db.saved)
	}
	if c := db.commits[0]; c == nil || !c.Equal(commit) {
		t.Fatalf("saved with commit time %v, want the source's %s", c, commit)
	}
	if err := sv.Flush(context.Background()); err != nil || len(db.saved) != 1 {
		t.Fatalf("a Flush with nothing new saved again: %v, %v", err, db.saved)
	}
	// A position without a commit time (none read yet) saves NULL, so
	// that the row keeps the time it has.
	pos.Store(&Position{LSN: 0x300})
	if err := sv.Flush(context.Background()); err != nil || len(db.saved) != 2 || db.commits[1] != nil {
		t.Fatalf("a position without a commit time: %v, saved %v with %v; want it saved with none", err, db.saved, db.commits)
	}
	if final, err := sv.Close(context.Background()); err != nil || final != 0x300 {
		t.Fatalf("Close = %s, %v", final, err)
	}
}

// TestSaverFlushGivesUpWhenASaveIsBlocked: a save blocked behind a lock
// holds the saver's turn, and a Flush bounded by its context (a stop's
// final save) returns at its deadline instead of waiting for it.
func TestSaverFlushGivesUpWhenASaveIsBlocked(t *testing.T) {
	db := &fakeDB{block: true, called: make(chan struct{}, 1)}
	var pos atomic.Uint64
	pos.Store(0x100)
	sv := NewStore(db, "public", "cp").StartSaver("s", 0x100, SaverOptions{Every: 10 * time.Millisecond, Source: lsnSource(&pos)})
	defer sv.cancel()
	pos.Store(0x200)
	select {
	case <-db.called: // the loop's save is blocked now
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not save")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := sv.Flush(ctx)
	if err == nil || time.Since(began) > 2*time.Second {
		t.Fatalf("Flush = %v after %s; want an error at its deadline", err, time.Since(began))
	}
	if got := sv.Saved(); got != 0x100 {
		t.Fatalf("Saved %s while no save succeeded, want 0/100", got)
	}
}

func TestSaverReportsAServerShutdown(t *testing.T) {
	db := &fakeDB{fail: &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, called: make(chan struct{}, 1)}
	var calls atomic.Int32
	sv := NewStore(db, "public", "cp").StartSaver("s", 0x100, SaverOptions{Every: time.Hour,
		Source: func() Position { return Position{LSN: 0x200} }, OnServerShutdown: func() { calls.Add(1) }})
	for range 3 {
		if err := sv.Flush(context.Background()); err == nil {
			t.Fatal("Flush succeeded on a failing table")
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("OnServerShutdown called %d times, want once", calls.Load())
	}
	sv.cancel()
}

// TestSaverReportsAMissingPrivilege: a save refused for a privilege
// (UPDATE revoked on the checkpoint table) is reported once to
// OnPrivilegeMissing, with the error, and not logged at every interval;
// another failure is not reported to it.
func TestSaverReportsAMissingPrivilege(t *testing.T) {
	denied := &pgconn.PgError{Code: "42501", Message: "permission denied for table cp"}
	for _, tt := range []struct {
		fail  error
		calls int32
	}{{denied, 1}, {&pgconn.PgError{Code: "55P03", Message: "lock timeout"}, 0}} {
		db := &fakeDB{fail: tt.fail, called: make(chan struct{}, 1)}
		var calls atomic.Int32
		var got atomic.Pointer[error]
		var logged syncbuf.Buffer
		sv := NewStore(db, "public", "cp").StartSaver("s", 0x100, SaverOptions{Every: time.Millisecond,
			Source:             func() Position { return Position{LSN: 0x200} },
			OnPrivilegeMissing: func(err error) { calls.Add(1); got.Store(&err) },
			Logger:             slog.New(slog.NewTextHandler(&logged, nil))})
		for range 3 {
			if err := sv.Flush(context.Background()); err == nil {
				t.Fatal("Flush succeeded on a failing table")
			}
		}
		sv.cancel()
		<-sv.done
		if calls.Load() != tt.calls {
			t.Errorf("%v: OnPrivilegeMissing called %d times, want %d", tt.fail, calls.Load(), tt.calls)
		}
		if tt.calls > 0 && (!errors.Is(*got.Load(), denied) || strings.Contains(logged.String(), "could not save")) {
			t.Errorf("%v: reported %v, logged:\n%s\nwant the error reported and nothing logged", tt.fail, *got.Load(), logged.String())
		}
	}
}
