package pubwatch

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
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
// It also fails when the publication stops publishing the table's inserts
// or the columns the mapping reads: no inserts published, a row filter on
// the table, a column list that leaves out a mapped column. And when the
// publication's stamp (see [migrations.Publication]) changed since the
// last good check although all looks right now: a change made and undone
// between two checks (the table removed and added back, a row filter set
// and removed) may have kept inserts from being published. A session
// starts from the mark of the Run's last session, or else of the
// checkpoint row (see watchTable and Watch), so a change between
// two sessions, or while no relay ran, is seen too.
type tableWatch struct {
	db      pgdb.DB
	tables  migrations.Config
	mapping decoder.Mapping
	log     *slog.Logger
	every   time.Duration // how often start checks
	stop    func()        // ends the stream, after a failed check

	oid     uint32 // the table's OID when the session started
	seenOID bool   // the stream sent a Relation with oid (the reader's alone)

	mu      sync.Mutex // one check at a time
	stamp   string     // the publication's stamp at the last good check (under mu)
	vouched atomic.Pointer[checkpoint.Position]
	err     atomic.Pointer[tableGoneError]
}

// checkTimeout bounds one check.
const checkTimeout = 10 * time.Second

// Mark is what a table watch last found right: the table's OID and the
// publication's stamp at a position it vouched for. A session's watches
// start from the marks of the Run's last session (Watches.Marks).
type Mark struct {
	oid   uint32
	stamp string
	at    checkpoint.Position
}

// watchTable checks outbox table i of cfg once and returns its watch,
// vouching for the current WAL position. start is where the session
// resumes; stop ends its stream. An error is fatal when the publication
// does not publish the table's inserts (see judge). prev, when not nil, is
// the mark of the same table's watch in an earlier session of this Run, or
// the checkpoint row's: resuming at or before its position, the session
// holds the table and the publication to it, so that a change made
// between the two sessions is seen as one made between two checks.
func watchTable(ctx context.Context, db pgdb.DB, cfg Config, i int, start pglogrepl.LSN, prev *Mark, stop func()) (*tableWatch, error) {
	w := &tableWatch{db: db, tables: cfg.migrations(i), mapping: cfg.Tables[i], log: cfg.Log, every: cfg.Every, stop: stop}
	w.vouched.Store(&checkpoint.Position{LSN: start})
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	at, p, err := w.look(ctx)
	if err != nil {
		return nil, err
	}
	w.oid = p.TableOID
	if prev != nil && prev.oid != 0 && start <= prev.at.LSN {
		w.oid, w.stamp = prev.oid, prev.stamp
		w.vouched.Store(&prev.at)
	}
	if gone := w.judge(p); gone != nil {
		return nil, fatal.Error{Err: gone}
	}
	w.stamp = p.Stamp
	w.vouch(at)
	return w, nil
}

// mark is what the watch last found right. Safe for concurrent use.
func (w *tableWatch) mark() Mark {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Mark{oid: w.oid, stamp: w.stamp, at: w.VouchedAt()}
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
		w.fail(w.lookAgain(ctx, gone))
		return w.Err()
	}
	w.stamp = p.Stamp
	w.vouch(at)
	return nil
}

// lookAgain, for a verdict that a change under way can give in place of
// another, looks once more, so that the operator is told what the change
// was; the watch fails either way, only the reason may change. The
// publication is read in more than one statement, so a table dropped and
// created again can show as a stamp changed while the rest still looks
// right (stampOnly). And the table's name is resolved through the
// server's catalog cache, which can still hold the dropped table's OID
// while the statement's snapshot already sees the new table out of the
// publication: it then shows as removed from the publication
// (removedOnly).
func (w *tableWatch) lookAgain(ctx context.Context, gone *tableGoneError) *tableGoneError {
	if !gone.stampOnly && !gone.removedOnly {
		return gone
	}
	if _, p, err := w.look(ctx); err == nil {
		if again := w.judge(p); again != nil && !again.stampOnly && !again.removedOnly {
			return again
		}
	}
	return gone
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
// inserts, or may not have since the last good check, or nil.
func (w *tableWatch) judge(p migrations.Publication) *tableGoneError {
	outbox := pgx.Identifier{w.tables.OutboxSchema, w.tables.OutboxTable}.Sanitize()
	pub := pgx.Identifier{w.tables.Publication}.Sanitize()
	gone := &tableGoneError{vouched: w.VouchedAt(), fix: "add it back with `cdc-relay migrate` (the same --table and --publication)"}
	switch {
	case p.TableOID == 0:
		gone.what = fmt.Sprintf("the outbox table %s no longer exists (dropped or renamed)", outbox)
		gone.fix = "rename it back, or create it again, and add it to the publication with `cdc-relay migrate` (the same --table and --publication)"
	case p.TableOID != w.oid:
		gone.what = fmt.Sprintf("the outbox table %s was dropped and created again (OID %d, now %d): a new table is not in the publication until it is added", outbox, w.oid, p.TableOID)
	case !p.Exists:
		gone.what = fmt.Sprintf("publication %q no longer exists", w.tables.Publication)
		gone.fix = "create it again with `cdc-relay migrate` (the same --table and --publication). That is not enough: pgoutput reads a publication as of the WAL it decodes, " +
			"so the slot can never decode the WAL written while it did not exist, and must be dropped and created again"
		gone.recreate = true
	case p.Partitioned && !p.ViaRoot:
		gone.what = fmt.Sprintf("publication %q publishes the rows of the partitioned table %s under the names of its partitions, which the relay does not read", w.tables.Publication, outbox)
		gone.fix = "run " + migrations.ViaRootFix(w.tables.Publication)
	case !p.HasTable:
		gone.what = fmt.Sprintf("the outbox table %s was removed from publication %q: PostgreSQL no longer sends its inserts", outbox, w.tables.Publication)
		gone.removedOnly = true
	default:
		return w.judgePublishing(p, gone, outbox, pub)
	}
	return gone
}

// judgePublishing judges what the publication publishes of a table in
// it: its inserts, every row of them, the mapped columns, and a stamp
// unchanged since the last good check; nil when all holds.
func (w *tableWatch) judgePublishing(p migrations.Publication, gone *tableGoneError, outbox, pub string) *tableGoneError {
	readd := "publish the whole table again: " + migrations.RepublishFix(w.tables.Publication, w.tables.OutboxSchema, w.tables.OutboxTable)
	hidden := p.Hides(w.mapping.Columns())
	switch {
	case !p.Inserts:
		gone.what = fmt.Sprintf("publication %q no longer publishes inserts: PostgreSQL does not send the rows inserted into the outbox table %s", w.tables.Publication, outbox)
		gone.fix = fmt.Sprintf("add insert back to what it publishes: ALTER PUBLICATION %s SET (publish = 'insert') (list the other operations it should publish too)", pub)
	case p.RowFilter != "":
		gone.what = fmt.Sprintf("publication %q publishes the outbox table %s with a row filter, WHERE %s: PostgreSQL does not send the rows it leaves out",
			w.tables.Publication, outbox, p.RowFilter)
		gone.fix = readd
	case len(hidden) > 0:
		gone.what = fmt.Sprintf("publication %q publishes only some columns of the outbox table %s (a column list), leaving out %s, which the relay reads: its events would lose them",
			w.tables.Publication, outbox, strings.Join(hidden, ", "))
		gone.fix = readd
	case w.stamp != "" && p.Stamp != w.stamp:
		gone.what = fmt.Sprintf("what publication %q publishes of the outbox table %s changed since the last check, although it looks right again: "+
			"%s changed, and a change made and undone in between may have kept inserts from being published",
			w.tables.Publication, outbox, p.ChangedSince(w.stamp))
		gone.fix = "make sure nothing changes the publication while the relay runs"
		gone.stampOnly = true
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

// RecoverMargin is how long before the last good check the printed
// recover command starts: recover's own default --margin, for
// transactions that wrote their rows (a timestamp column of DEFAULT now()
// holds the transaction's start) long before they committed.
const RecoverMargin = 10 * time.Minute

// tableGoneError says the publication stopped publishing the outbox
// table's inserts while the relay ran, or may have, since when, and how to
// recover.
type tableGoneError struct {
	what    string
	fix     string
	vouched checkpoint.Position // of the last check that found all right
	// recreate is true when the slot cannot decode past the change (the
	// publication missing from the WAL): recover must create it again.
	recreate bool
	// stampOnly is true when all looked right but the stamp: see
	// tableWatch.check.
	stampOnly bool
	// removedOnly is true when the table, by its OID, left the
	// publication: see lookAgain.
	removedOnly bool
}

func (e *tableGoneError) Error() string {
	since, checked := "TIME", "the last check that found it right"
	if at := e.vouched.CommitTime; !at.IsZero() {
		since = at.UTC().Add(-RecoverMargin).Truncate(time.Second).Format(time.RFC3339)
		checked = fmt.Sprintf("the check at %s", at.UTC().Format(time.RFC3339))
	}
	command, does := "cdc-relay recover --since "+since, ""
	if e.recreate {
		command, does = "cdc-relay recover --recreate-slot --since "+since, ", which drops the slot and creates it again at the current WAL position first"
	}
	return fmt.Sprintf("%s. The relay confirmed nothing past %s, the position of %s, and stopped. "+
		"To go on: %s; then publish again the rows inserted since, which are still in the outbox table but may never have been published, "+
		"with `%s` and the same flags as run%s (%s, less recover's margin of %s; rows already delivered arrive twice); "+
		"then start the relay again",
		e.what, e.vouched.LSN, checked, e.fix, command, does, sinceIs(e.vouched), RecoverMargin)
}

// sinceIs says what the --since time of a tableGoneError is.
func sinceIs(vouched checkpoint.Position) string {
	if vouched.CommitTime.IsZero() {
		return "TIME: before the publication changed; the relay has no time for that position (the session's start, or a standby that had replayed no transaction)"
	}
	return "the time of that check"
}
