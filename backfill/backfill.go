package backfill

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
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
// table at a time: see [ErrBusy]), finds the last key the predicate
// selects (the backfill's end: rows committed later beyond it are the
// stream's), counts the rows up to it, and publishes them in key order, a
// batch at a time, each batch's records acknowledged before the next is
// read, at most Config.Rate rows a second. When ctx ends it stops once the batch in flight is
// acknowledged (or Config.StopTimeout has passed) and returns with
// Result.Stopped set, and no error. With Config.DryRun it counts and
// publishes nothing.
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
	if err := b.bound(ctx, &res); err != nil {
		return res, err
	}
	if b.upTo != nil { // else the predicate selects nothing
		if res.Total, err = b.count(ctx); err != nil {
			return res, err
		}
	}
	if cfg.DryRun || b.upTo == nil {
		res.Now = time.Now()
		return res, nil
	}
	b.keeper.start(ctx, cfg.Where, res.Total, cfg.After)
	err = b.publishAll(ctx, &res)
	res.Now = time.Now()
	b.keeper.end(endState(res, err), res.Progress)
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

// backfiller is one backfill's connection, with its query and where it
// is.
type backfiller struct {
	cfg    Config
	conn   *pgx.Conn
	q      query
	after  []string // the key of the last row done; nil before the first
	upTo   []string // the key of the last row to do, found at the start
	rec    *recorder
	keeper *rowKeeper
}

// open connects (with the text settings the decoder reads), finds the
// table's key, parses Config.After and takes the table's backfill lock.
func open(ctx context.Context, cfg Config) (*backfiller, error) {
	conn, err := pgconnect.Open(ctx, cfg.PostgresURL, pgconnect.Options{RuntimeParams: map[string]string{
		"TimeZone": "UTC", "DateStyle": "ISO", "bytea_output": "hex",
		"application_name": "cdc-relay backfill, pid " + strconv.Itoa(os.Getpid()) + " on " + hostname(),
	}})
	if err != nil {
		return nil, err
	}
	b := &backfiller{cfg: cfg, conn: conn}
	b.keeper = &rowKeeper{conn: conn, table: cfg.RecordTable, name: cfg.Mapping.Schema + "." + cfg.Mapping.Table, runID: cfg.RunID,
		problem: func(msg string, err error) { cfg.Logger.Warn(msg, "err", err) }}
	b.q.table, b.q.where = pgx.Identifier{cfg.Mapping.Schema, cfg.Mapping.Table}.Sanitize(), cfg.Where
	if err := b.prepare(ctx); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// prepare finds the key, parses Config.After, and takes the lock.
func (b *backfiller) prepare(ctx context.Context) error {
	var err error
	if b.q.key, err = LookupKey(ctx, b.conn, b.q.table); err != nil {
		return err
	}
	if b.cfg.After != "" {
		if b.after, err = b.q.key.ParseKey(b.cfg.After); err != nil {
			return fmt.Errorf("--after %q: %w", b.cfg.After, err)
		}
		b.q.after = true
	}
	return lock(ctx, b.conn, b.q.table)
}

// hostname is the machine's name, or "?" .
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "?"
	}
	return h
}

// close ends the session, which releases the lock.
func (b *backfiller) close() { _ = b.conn.Close(context.Background()) }

// params are the query's parameters: the key after which to read, the
// key up to which to read, then extra.
func (b *backfiller) params(extra ...string) [][]byte {
	var ps [][]byte
	for _, vs := range [][]string{b.after, b.upTo, extra} {
		for _, v := range vs {
			ps = append(ps, []byte(v))
		}
	}
	return ps
}

// publishAll publishes batch after batch until a batch is short (the
// last), or ctx ends (res.Stopped), counting in res and telling
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
	bt := &batch{}
	for ctx.Err() == nil {
		if err := b.read(ctx, bt); err != nil {
			return stopped(ctx, res, err)
		}
		if len(bt.keys) == 0 {
			return nil
		}
		if err := lim.Wait(ctx, len(bt.keys)); err != nil {
			return stopped(ctx, res, err)
		}
		if err := produce(pctx, snk, bt); err != nil {
			res.Stopped = ctx.Err() != nil // the stop's wait ran out, or Kafka refused
			return err
		}
		b.done(ctx, bt, res)
		if len(bt.keys) < b.cfg.Batch {
			return nil
		}
	}
	res.Stopped = true
	return nil
}

// done records a batch acknowledged: the next starts after its last key;
// the backfill's row and Config.Progress are told.
func (b *backfiller) done(ctx context.Context, bt *batch, res *Result) {
	b.after, b.q.after = bt.keys[len(bt.keys)-1], true
	res.Rows += int64(len(bt.keys)) - bt.skipped
	res.Skipped += bt.skipped
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
