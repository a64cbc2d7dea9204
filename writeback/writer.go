package writeback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/internal/tick"
)

// DB is what a Writer needs of a connection pool (*pgxpool.Pool has it):
// Exec and QueryRow.
type DB = pgdb.DB

// Table is one outbox table with write-back.
type Table struct {
	// Schema and Name name the table; Schema "" is "public".
	Schema, Name string
	// IDColumn is the column whose text the relay reports as the event's
	// id (the mapping's id column). Its type may be any type whose text
	// form reads back as itself: uuid, bigint, text, varchar, ….
	IDColumn string
	// Columns are the columns that take the outcome, and their values.
	Columns Columns
	// TimeZone is the IANA name of the zone whose wall time the table's
	// timestamp-without-time-zone columns hold (decoder.Mapping.TimeZone);
	// "" is UTC. Such a column takes now() in it.
	TimeZone string
}

// Config configures a Writer.
type Config struct {
	// Tables are the tables written back to. Delivered names a table by
	// its index in this slice.
	Tables []Table
	// FlushInterval is the longest an outcome waits before the Writer
	// writes it (while the database answers); 0 is 100 ms. The Writer
	// also writes as soon as MaxBatch outcomes are waiting.
	FlushInterval time.Duration
	// MaxBatch is the most ids one UPDATE statement names; 0 is 1000.
	MaxBatch int
	// Statements is the most UPDATE statements of a table that run at
	// once (on as many connections of the pool); 0 is 2.
	Statements int
	// Logger; nil discards.
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultFlushInterval = 100 * time.Millisecond
	DefaultMaxBatch      = 1000
	DefaultStatements    = 2
)

// Stats count what a Writer did since New.
type Stats struct {
	// Updated is the number of rows the UPDATE statements changed. A row
	// already deleted, or already in the state it was to take (an
	// outcome reported twice), is not counted.
	Updated int64
	// Statements is the number of UPDATE statements that succeeded.
	Statements int64
	// Failures is the number of failed attempts: UPDATE statements and
	// look-ups of a table's columns that returned an error (each is
	// retried).
	Failures int64
	// Refused is the number of rows that refused their outcome for what
	// they hold (a trigger, a constraint) while the table took the same
	// value for other rows: each was logged and given up.
	Refused int64
	// NotVisible is the number of outcomes whose row was not visible yet
	// when first written (its inserting transaction committed, not yet
	// visible to other sessions): each is written again at later flushes.
	NotVisible int64
	// Pending is the number of outcomes waiting to be written now.
	Pending int
}

// Done is told once an outcome reported to a Writer is settled: written to
// its row (or its row no longer exists), or given up because the row
// refuses it. An outcome superseded by a later one of the same id is
// settled with it. The relay confirms
// an event's position only then, so an outcome not yet settled when the
// relay stops is reported again after the restart.
//
// A Done that also has the method Xid() uint32 names the PostgreSQL
// transaction that inserted the row (its 32-bit id, as logical decoding
// gives it; 0 is unknown). The Writer then settles an outcome whose row
// it cannot find only once that transaction is visible to its own
// statements: a transaction is decoded, and its events delivered, as soon
// as its commit record is flushed, a moment before other sessions see its
// rows (longer under synchronous replication).
type Done interface {
	// WrittenBack is called once, from the Writer's goroutine; it must
	// not block.
	WrittenBack()
}

// inserter is a Done that names the transaction that inserted its row.
type inserter interface {
	Xid() uint32
}

// Writer writes the deliveries of the fast path back to their outbox
// rows. (What becomes of a parked event is written with its status row:
// Rows.)
//
// Delivered only queues the outcome; Run writes them, batched: per flush,
// one UPDATE per table for up to Config.MaxBatch ids, and then tells each
// outcome's Done. A statement that fails is retried with backoff, with
// what was reported since; no outcome is ever dropped: the caller bounds
// how many wait, by holding each event until its Done is told. An id
// reported again while its outcome waits is written once.
//
// The statement is, for a table t with id column id and status column
// status (the column names are those of its Columns):
//
//	UPDATE t SET status = $2::text::<status type>, delivered_at = now()
//	WHERE id = ANY($1::text[]::<id type>[]) AND status::text IS DISTINCT FROM $2::text
//
// The column types are read from the catalog once per table (again after
// an error that retries will not fix), so the condition on the id uses
// the table's index on it, whatever the id's type. The status is cast to
// its column's type without the length, so a status column of an enum
// type works, and a value too long for a varchar(n) column is an error
// rather than a silently shortened status. now() is the transaction's time; a
// timestamp without time zone column takes it in the table's TimeZone, UTC
// by default (now() AT TIME ZONE 'UTC'), the convention the relay reads
// such columns by, whatever the session's or the database's TimeZone. A row already in the state it is to take
// is left alone, so an outcome reported twice (events are delivered at
// least once) does not move its timestamp. A row that no longer exists is
// not updated.
//
// A statement that updated fewer rows than it named ids is followed by a
// look-up of the ids whose row does not say the delivered value, in one
// snapshot. A row that exists is written at the next flush (it may have
// become visible after the UPDATE began); one that three statements left
// unchanged refuses the UPDATE without an error (a BEFORE UPDATE trigger
// that returns NULL, a rule, a row-level security policy) and is given up
// as a refused row is. A row not found whose inserting transaction (Done's
// Xid) the database does not show yet is written once it appears, for up
// to 10 minutes (then given up, logged: a transaction lost in a failover,
// or synchronous replication still waiting for a standby). A row that is
// gone although its transaction is visible, or whose transaction is
// unknown, was deleted, and its outcome is settled.
//
// A statement that fails for what a row holds (a trigger that raises, a
// CHECK or NOT NULL constraint: any SQLSTATE outside the classes that
// concern the table, the connection or the server) is split in halves,
// down to single rows, so that the other rows are written; a single row
// that still refuses is logged at error level with its id, counted in
// Stats.Refused, and given up, once the table has taken the same value
// for another row. Until then the value itself may be what the table
// refuses (a CHECK on the status column), so the outcomes are held and
// retried like any failure.
//
// A failed statement is retried after 100 ms, then after twice as long
// each time up to 10 s, and logged at most once a minute per table and
// cause. An error retries cannot fix (SQLSTATE class 42 or 22: a missing
// table, column or privilege, a status value the column's type refuses)
// is logged at error level with the fix and retried every 30 s, with the
// columns looked up again, so the table catches up once it is fixed;
// other tables are written meanwhile. One goroutine writes the tables in
// turn, each table's statements Config.Statements at a time (a table's
// rows are many, and one UPDATE keeps one server process busy), each
// statement bounded by 30 s.
//
// The relay's role needs SELECT on the id and status columns (the
// statements read them) and UPDATE on the outcome's columns of each table.
type Writer struct {
	db           DB
	cfg          Config
	log          *slog.Logger
	wake         chan struct{} // has a token when MaxBatch outcomes wait
	running      atomic.Bool
	retryMax     time.Duration // the longest wait between attempts
	refusedRetry time.Duration // the wait after an error retries will not fix
	stmtTimeout  time.Duration // bounds each statement
	finalTimeout time.Duration // bounds the flush after Run's context ended
	// notVisibleFor is how long an outcome waits for its row to be
	// visible (the const notVisibleFor; tests shorten it).
	notVisibleFor time.Duration

	mu sync.Mutex
	q  queue
	// held is the number of outcomes the flusher holds (taken from q and
	// not yet settled).
	held int

	updated, statements, failures, refused, notVisible atomic.Int64

	// Owned by the goroutine in Run.
	flusher flusher
}

// New returns a Writer on db for cfg's tables. It checks cfg and does no
// I/O: each table's columns are looked up by the first flush that writes
// to it.
func New(db DB, cfg Config) (*Writer, error) {
	if db == nil {
		return nil, errors.New("writeback: no database")
	}
	cfg.Tables = slices.Clone(cfg.Tables) // check fills in schemas
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.Statements == 0 {
		cfg.Statements = DefaultStatements
	}
	w := &Writer{
		db:            db,
		cfg:           cfg,
		log:           cfg.Logger,
		wake:          make(chan struct{}, 1),
		retryMax:      10 * time.Second,
		refusedRetry:  30 * time.Second,
		stmtTimeout:   30 * time.Second,
		finalTimeout:  5 * time.Second,
		notVisibleFor: notVisibleFor,
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.flusher.init(w)
	return w, nil
}

// check reports what is wrong with c, naming the table.
func (c *Config) check() error {
	if len(c.Tables) == 0 {
		return errors.New("writeback: no tables")
	}
	if c.FlushInterval < 0 || c.MaxBatch < 0 || c.Statements < 0 {
		return fmt.Errorf("writeback: FlushInterval (%v), MaxBatch (%d) and Statements (%d) may not be negative", c.FlushInterval, c.MaxBatch, c.Statements)
	}
	seen := map[string]bool{}
	for i := range c.Tables {
		t := &c.Tables[i]
		if t.Schema == "" {
			t.Schema = "public"
		}
		name := t.Schema + "." + t.Name
		if err := t.check(); err != nil {
			return fmt.Errorf("writeback: table %d (%s): %w", i, name, err)
		}
		if seen[name] {
			return fmt.Errorf("writeback: table %s is listed twice: one entry per table", name)
		}
		seen[name] = true
	}
	return nil
}

func (t *Table) check() error {
	c := &t.Columns
	switch {
	case t.Name == "":
		return errors.New("no table name")
	case t.IDColumn == "":
		return errors.New("no id column: write-back finds the row by the event's id")
	case c.StatusColumn == "":
		return errors.New("no status column")
	case c.Delivered == "" || c.RetryingValue() == "" || c.DeadValue() == "":
		return fmt.Errorf("the delivered (%q) and failed (%q) status values are both required (failed may be left out when retrying and dead are both set)", c.Delivered, c.Failed)
	case c.Delivered == c.RetryingValue():
		return fmt.Errorf("the delivered and retrying status values are the same (%q)", c.Delivered)
	case c.Delivered == c.DeadValue():
		return fmt.Errorf("the delivered and dead status values are the same (%q)", c.Delivered)
	}
	for _, p := range c.Pending {
		if p == c.Delivered || p == c.DeadValue() {
			return fmt.Errorf("pending value %q is also the delivered or dead value: a delivered or given-up event would read as not delivered yet", p)
		}
	}
	cols := map[string]string{t.IDColumn: "id"}
	for _, col := range c.WrittenColumns() {
		if other, ok := cols[col.Name]; ok {
			return fmt.Errorf("column %q is both the %s and the %s", col.Name, other, col.Key)
		}
		cols[col.Name] = col.Key
	}
	return nil
}

// Delivered reports that Kafka acknowledged the event with id from table
// (an index into Config.Tables): its row is to take the delivered status
// and, if configured, the delivered-at time. Once it is settled, done (if
// not nil) is told. id is copied; the caller may reuse it. A nil id (the
// event had none) has no row: done is told at once.
//
// Delivered never waits for the database: it appends the outcome to a
// queue under a lock that is only ever held for O(1) amortized work, and
// allocates nothing once the queue has grown to the load. It is safe for
// concurrent use; it panics if table is out of range. Outcomes reported
// after Run returned are not written, and their done is not told.
func (w *Writer) Delivered(table int, id []byte, done Done) { w.add(table, id, done) }

func (w *Writer) add(table int, id []byte, done Done) {
	if uint(table) >= uint(len(w.cfg.Tables)) {
		panic(fmt.Sprintf("writeback: table %d reported, but Config.Tables has %d", table, len(w.cfg.Tables)))
	}
	if id == nil {
		if done != nil {
			done.WrittenBack()
		}
		return
	}
	w.mu.Lock()
	w.q.push(table, id, done)
	n := w.q.len()
	w.mu.Unlock()
	if n == w.cfg.MaxBatch {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// Stats returns the Writer's counters. It is safe for concurrent use.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	pending := w.held + w.q.len()
	w.mu.Unlock()
	return Stats{
		Updated:    w.updated.Load(),
		Statements: w.statements.Load(),
		Failures:   w.failures.Load(),
		Refused:    w.refused.Load(),
		NotVisible: w.notVisible.Load(),
		Pending:    pending,
	}
}

// Run writes the outcomes reported, every Config.FlushInterval, until ctx
// ends; then it writes what is waiting once more, for at most 5 s, and
// returns. It returns nil when nothing was left unwritten, and otherwise an
// error saying how many outcomes were left and why. Run may be called once.
func (w *Writer) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("writeback: Run called twice")
	}
	tick.Every(ctx, w.cfg.FlushInterval, func(ctx context.Context) bool {
		w.flusher.flush(ctx, false)
		return true
	}, tick.Wake(w.wake))
	return w.flusher.final(ctx)
}
