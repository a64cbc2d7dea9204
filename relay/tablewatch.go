package relay

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/tick"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// tableWatch watches, beside the stream, that the outbox table a session
// started with stays in the publication. PostgreSQL sends nothing for a
// table that left it (removed from the publication, or dropped and created
// again: the new table is not in it), and keepalives would move the slot
// past the inserts it never sent.
//
// The watch vouches for positions: [tableWatch.Vouched] is the newest WAL
// position at which it saw the table, with the OID it had when the session
// started, in the publication; [tableWatch.VouchedAt] adds when the WAL was
// there (see look). It checks every status interval, and at
// once when the stream sends a Relation message for the table under
// another OID. When a check finds the table gone, it vouches for nothing
// newer, stops the stream, and [tableWatch.Err] says what happened and how
// to recover: the session ends with it, and Run with it.
//
// A change undone between two checks (removed from the publication and
// added back within a status interval) is not seen, nor one made while no
// relay ran.
type tableWatch struct {
	db      migrations.Querier
	tables  migrations.Config
	mapping decoder.Mapping
	log     *slog.Logger
	stop    func() // ends the stream, after a failed check

	oid     uint32 // the table's OID when the session started
	seenOID bool   // the stream sent a Relation with oid (the reader's alone)

	mu      sync.Mutex // one check at a time
	vouched atomic.Pointer[checkpoint.Position]
	err     atomic.Pointer[tableGoneError]
}

// checkTimeout bounds one check.
const checkTimeout = 10 * time.Second

// watchTable checks outbox table i of cfg once and returns its watch,
// vouching for the current WAL position. start is where the session
// resumes; stop ends its stream. An error is fatal when the table is not
// in the publication.
func watchTable(ctx context.Context, db migrations.Querier, cfg Config, i int, start pglogrepl.LSN, stop func(), log *slog.Logger) (*tableWatch, error) {
	w := &tableWatch{db: db, tables: cfg.Migrations(i), mapping: cfg.Tables[i].Mapping, log: log, stop: stop}
	w.vouched.Store(&checkpoint.Position{LSN: start})
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	at, p, err := w.look(ctx)
	if err != nil {
		return nil, err
	}
	w.oid = p.TableOID
	if gone := w.judge(p); gone != nil {
		return nil, fatalError{gone}
	}
	w.vouch(at)
	return w, nil
}

// Vouched is the newest position the watch vouches for. Safe for
// concurrent use.
func (w *tableWatch) Vouched() pglogrepl.LSN { return w.VouchedAt().LSN }

// VouchedAt is Vouched with a time at or before the commit of every
// transaction after it (zero for the session's start, and on a standby
// that has replayed no transaction yet). Safe for concurrent use.
func (w *tableWatch) VouchedAt() checkpoint.Position { return *w.vouched.Load() }

// Err is why the watch stopped vouching, or nil. Safe for concurrent use.
func (w *tableWatch) Err() error {
	if e := w.err.Load(); e != nil {
		return e
	}
	return nil
}

// start checks every interval until the returned function is called.
func (w *tableWatch) start(every time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick.Every(ctx, every, func(ctx context.Context) bool {
			if err := w.check(ctx); err != nil {
				if w.Err() != nil {
					return false
				}
				if ctx.Err() == nil {
					w.log.Log(ctx, pgerr.Level(err), "could not check that the outbox table is in the publication; confirmation waits for the next check",
						"vouched", w.Vouched(), "err", err)
				}
			}
			return true
		})
	}()
	return func() {
		cancel()
		<-done
	}
}

// refresh checks now, unless the watch already failed, so that a final
// confirmation includes everything delivered. A failure is logged.
func (w *tableWatch) refresh(ctx context.Context) {
	if w.Err() != nil {
		return
	}
	if err := w.check(ctx); err != nil && w.Err() == nil {
		w.log.Log(ctx, pgerr.Level(err), "could not check that the outbox table is in the publication before the final confirmation", "err", err)
	}
}

// check vouches for the current WAL position if the table is still in the
// publication with its OID, and otherwise fails the watch. An error the
// watch did not fail for (the database did not answer) changes nothing.
func (w *tableWatch) check(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	at, p, err := w.look(ctx)
	if err != nil {
		return err
	}
	if gone := w.judge(p); gone != nil {
		w.fail(gone)
		return gone
	}
	w.vouch(at)
	return nil
}

// look reads the WAL position, then the publication. In that order, in two
// statements: the catalog is then read after the position, so a table that
// left the publication before the position cannot look published.
//
// With the position it reads, first, a time no transaction after the
// position committed before: the server's clock (a commit record after
// the position is written after it; with synchronous_commit off, one
// inserted a moment before may be written after, by well under a second,
// which recover's margin covers), or on a standby the commit time of the
// last transaction it replayed (those after it were not replayed yet, but
// may have committed long ago), NULL when it replayed none.
func (w *tableWatch) look(ctx context.Context) (checkpoint.Position, migrations.Publication, error) {
	var text string
	var at *time.Time
	err := w.db.QueryRow(ctx, "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_xact_replay_timestamp() ELSE clock_timestamp() END, "+
		"(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text").Scan(&at, &text)
	if err != nil {
		return checkpoint.Position{}, migrations.Publication{}, fmt.Errorf("read the WAL position: %w", err)
	}
	pos := checkpoint.Position{}
	if pos.LSN, err = pglogrepl.ParseLSN(text); err != nil {
		return checkpoint.Position{}, migrations.Publication{}, fmt.Errorf("read the WAL position: %w", err)
	}
	if at != nil {
		pos.CommitTime = *at
	}
	p, err := migrations.LookupPublication(ctx, w.db, w.tables)
	return pos, p, err
}

// judge says why the publication no longer publishes the watched table's
// inserts, or nil.
func (w *tableWatch) judge(p migrations.Publication) *tableGoneError {
	outbox := pgx.Identifier{w.tables.OutboxSchema, w.tables.OutboxTable}.Sanitize()
	gone := &tableGoneError{vouched: w.Vouched(), fix: "add it back with `cdc-relay migrate` (the same --table and --publication)"}
	switch {
	case p.TableOID == 0:
		gone.what = fmt.Sprintf("the outbox table %s no longer exists (dropped or renamed)", outbox)
		gone.fix = "rename it back, or create it again, and add it to the publication with `cdc-relay migrate` (the same --table and --publication)"
	case p.TableOID != w.oid:
		gone.what = fmt.Sprintf("the outbox table %s was dropped and created again (OID %d, now %d): a new table is not in the publication until it is added", outbox, w.oid, p.TableOID)
	case !p.Exists:
		gone.what = fmt.Sprintf("publication %q no longer exists", w.tables.Publication)
	case p.Partitioned && !p.ViaRoot:
		gone.what = fmt.Sprintf("publication %q publishes the rows of the partitioned table %s under the names of its partitions, which the relay does not read", w.tables.Publication, outbox)
		gone.fix = "run " + migrations.ViaRootFix(w.tables.Publication)
	case !p.HasTable:
		gone.what = fmt.Sprintf("the outbox table %s was removed from publication %q: PostgreSQL no longer sends its inserts", outbox, w.tables.Publication)
	default:
		return nil
	}
	return gone
}

func (w *tableWatch) vouch(at checkpoint.Position) {
	if at.LSN > w.Vouched() {
		w.vouched.Store(&at) // under mu: only check vouches
	}
}

// fail stops vouching and stops the stream; the first failure is kept.
func (w *tableWatch) fail(gone *tableGoneError) {
	if w.err.CompareAndSwap(nil, gone) {
		w.stop()
	}
}

// relation is told of each Relation message for the outbox table, by the
// stream's reader, in stream order. A new OID under the table's name after
// the session's own is the table dropped and created again: the watch
// fails at once. One before it is a table of the same name that the stream
// replays from before the session (its rows were published), unless a
// check now finds the table changed. Then the columns are judged (see
// unfit).
func (w *tableWatch) relation(ctx context.Context, rel decoder.Relation) error {
	switch {
	case rel.OID == w.oid:
		w.seenOID = true
	case w.seenOID:
		gone := w.judge(migrations.Publication{TableOID: rel.OID})
		w.fail(gone)
		return gone
	default:
		if err := w.check(ctx); err != nil {
			return err
		}
		w.log.Warn("relaying rows of an earlier outbox table of the same name, from before this session; inserts into the current one before it was added to the publication, if any, were not published",
			"earlier_oid", rel.OID, "oid", w.oid)
	}
	if rel.Unfit != nil {
		return w.unfit(ctx, rel.Unfit)
	}
	return nil
}

// tableGoneError says the publication stopped publishing the outbox
// table's inserts while the relay ran, and how to recover.
type tableGoneError struct {
	what    string
	fix     string
	vouched pglogrepl.LSN
}

func (e *tableGoneError) Error() string {
	return fmt.Sprintf("%s. The relay confirmed nothing past %s, the last position at which it saw the table in the publication, and stopped. "+
		"To go on, %s and start the relay again. Rows inserted while the table was not in the publication were never published: "+
		"they are still in the outbox table, and `cdc-relay recover --since TIME` (TIME: when the table left the publication) publishes them", e.what, e.vouched, e.fix)
}
