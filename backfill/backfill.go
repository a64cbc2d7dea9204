package backfill

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/republish"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Result says what [Run] did.
type Result struct {
	// Progress is where it ended: rows published and skipped, the total
	// counted at the start, the last key done.
	Progress
	// Key is the table's key.
	Key Key
	// First and Last are the first and last key the predicate selected at
	// the start (after Config.After), empty when it selected none: the
	// backfill ends at Last.
	First, Last string
	// Stopped is true when the context ended before the last row:
	// Progress.LastKey is where to resume (every row up to it, in key
	// order, was published).
	Stopped bool
}

// Run backfills: it takes the table's backfill lock (one backfill per
// table at a time: see [ErrBusy]), checks the mapping against the table,
// fixes the rows to publish (the keys the predicate selects now: rows
// committed later are the stream's), and publishes them in key order, a
// batch at a time, each batch's records acknowledged before the next is
// read, at most Config.Rate rows a second. When ctx ends it stops once
// the batch in flight is acknowledged (or Config.StopTimeout has passed)
// and returns with Result.Stopped set, and no error. With Config.DryRun
// it counts and publishes nothing.
func Run(ctx context.Context, cfg Config) (Result, error) {
	start := time.Now()
	cfg = cfg.withDefaults(start)
	res := Result{Progress: Progress{Table: cfg.Mapping.Schema + "." + cfg.Mapping.Table, Started: start, Now: start}}
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	b, err := open(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer b.close()
	res.Key = b.q.key
	res.LastKey = cfg.After
	if err := b.selectKeys(ctx, &res); err != nil {
		return res, err
	}
	if cfg.DryRun || res.Total == 0 {
		res.Now = time.Now()
		return res, nil
	}
	b.keeper.start(ctx, cfg.Where, res.Total, cfg.After)
	err = b.publishAll(ctx, &res)
	res.Now = time.Now()
	b.keeper.end(ctx, endState(res, err), res.Progress)
	return res, err
}

// endState is the state a backfill's row ends in.
func endState(res Result, err error) string {
	switch {
	case err != nil:
		return StateFailed
	case res.Stopped:
		return StateStopped
	}
	return StateDone
}

// backfiller is one backfill's connections, with its query and where it
// is.
type backfiller struct {
	cfg Config
	// conn runs the backfill's queries and writes its row; lockConn
	// holds the table's backfill lock and runs nothing else: the
	// predicate, on conn, cannot release a lock of another session.
	conn, lockConn *pgx.Conn
	q              query
	after          []string // the last selected key done; nil before the first
	rows           *decoder.Rows
	keyAt          []int // the field of each key column
	keeper         *rowKeeper
}

// open connects twice (with the text settings the decoder reads), takes
// the table's backfill lock, finds the table's key, parses Config.After
// and checks the mapping against the table's columns.
func open(ctx context.Context, cfg Config) (*backfiller, error) {
	b := &backfiller{cfg: cfg}
	b.q.table, b.q.where = pgx.Identifier{cfg.Mapping.Schema, cfg.Mapping.Table}.Sanitize(), cfg.Where
	var err error
	if b.lockConn, err = connect(ctx, cfg.PostgresURL); err != nil {
		return nil, err
	}
	if b.conn, err = connect(ctx, cfg.PostgresURL); err != nil {
		b.close()
		return nil, err
	}
	b.keeper = &rowKeeper{conn: b.conn, table: cfg.RecordTable, name: cfg.Mapping.Schema + "." + cfg.Mapping.Table, runID: cfg.RunID,
		problem: func(msg string, err error) { cfg.Logger.Warn(msg, "err", err) }}
	if err := b.prepare(ctx); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// connect opens one of the backfill's sessions, named for
// pg_stat_activity.
func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	return pgconnect.Open(ctx, url, pgconnect.Options{RuntimeParams: map[string]string{
		"TimeZone": "UTC", "DateStyle": "ISO", "bytea_output": "hex",
		// A read that row-level security would filter fails instead.
		"row_security":     pgerr.RowSecurityOff,
		"application_name": "cdc-relay backfill, pid " + strconv.Itoa(os.Getpid()) + " on " + hostname(),
	}})
}

// prepare takes the lock, finds the key, parses Config.After and
// resolves the mapping.
func (b *backfiller) prepare(ctx context.Context) error {
	if err := lock(ctx, b.lockConn, b.q.table); err != nil {
		return err
	}
	var err error
	if b.q.key, err = LookupKey(ctx, b.conn, b.q.table, b.cfg.Mapping.IDColumn); err != nil {
		return err
	}
	if b.cfg.After != "" {
		if b.after, err = b.q.key.ParseKey(b.cfg.After); err != nil {
			return fmt.Errorf("--after %q: %w", b.cfg.After, err)
		}
	}
	return b.resolveMapping(ctx)
}

// hostname is the machine's name, or "?" .
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "?"
	}
	return h
}

// close ends the sessions; the lock's end releases the lock.
func (b *backfiller) close() {
	for _, c := range []*pgx.Conn{b.conn, b.lockConn} {
		if c != nil {
			_ = c.Close(context.Background())
		}
	}
}

// publishAll publishes page after page of selected keys until none is
// left, or ctx ends (res.Stopped), counting in res and telling
// Config.Progress after each.
func (b *backfiller) publishAll(ctx context.Context, res *Result) error {
	snk, err := sink.New(b.cfg.Kafka)
	if err != nil {
		return err
	}
	defer snk.Close()
	pctx, cancel := afterStop(ctx, b.cfg.StopTimeout)
	defer cancel()
	lim := NewLimiter(b.cfg.Rate)
	var prod republish.Producer = snk
	if len(b.cfg.Publishers) > 0 || b.cfg.KafkaSends != nil {
		prod = &fanOut{kafka: snk, kafkaSends: b.cfg.KafkaSends, pubs: b.cfg.Publishers, log: b.cfg.Logger.Info}
	}
	pub := b.publisher(prod)
	for ctx.Err() == nil {
		before := pub.Counts()
		end, err := b.read(ctx, pub)
		if err != nil {
			return stopped(ctx, res, err)
		}
		if end == nil {
			return nil
		}
		page := pub.Counts()
		rows, skipped := page.Rows-before.Rows, page.Skipped-before.Skipped
		if err := lim.Wait(ctx, max(rows, 1)); err != nil {
			return stopped(ctx, res, err)
		}
		if err := pub.Flush(pctx); err != nil {
			res.Stopped = ctx.Err() != nil // the stop's wait ran out, or Kafka refused
			return err
		}
		b.done(ctx, end, rows, skipped, res)
	}
	res.Stopped = true
	return nil
}

// done records a page acknowledged: the next starts after its last key;
// the backfill's row and Config.Progress are told.
func (b *backfiller) done(ctx context.Context, end []string, rows, skipped int, res *Result) {
	b.after = end
	res.Rows += int64(rows - skipped)
	res.Skipped += int64(skipped)
	res.LastKey = FormatKey(b.after)
	res.Now = time.Now()
	b.keeper.progress(ctx, res.Progress)
	if b.cfg.Progress != nil {
		b.cfg.Progress(res.Progress)
	}
}

// stopped is err, unless ctx ended, which made it: the backfill stopped
// before the batch was produced, and nothing of the batch counts.
func stopped(ctx context.Context, res *Result, err error) error {
	if ctx.Err() == nil {
		return err
	}
	res.Stopped = true
	return nil
}

// afterStop returns the context of the records in flight: it ends
// timeout after ctx does, so that a stop waits that long for their
// acknowledgements.
func afterStop(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(timeout, cancel) })
	return pctx, func() { stop(); cancel() }
}
