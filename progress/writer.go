package progress

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/tick"
)

// Config configures a [Writer].
type Config struct {
	// Table is the progress table, as [Check] returned it.
	Table Table
	// Source is the outbox table whose positions it follows.
	Source Source
	// Every is how often the writer samples and writes. Default 1s.
	Every time.Duration
	// Saved is the checkpoint row's position: every transaction that
	// committed before it is delivered, or held in the status table.
	Saved func() pglogrepl.LSN
	// Heads reads the held rows of the source's topics (see [HeadsFunc]).
	Heads HeadsFunc
	// Log receives what the writer could not do; nil discards it.
	Log *slog.Logger
}

// A Writer keeps a team's progress table true while the relay runs:
// each (topic, publisher) row's position is the highest position of the
// outbox table up to which every event of the topic was delivered, as
// far as the checkpoint row vouches; its error count and last error are
// those of the topic's first held event that failed, while it does.
//
// A position is written only once the checkpoint row passed it: the
// writer samples the highest id of the outbox table with the WAL
// position and the transactions then in progress (an id visible then
// committed before that position; a lower one may belong to one in
// progress), waits until those transactions ended, takes the WAL position
// then, and writes the id once the checkpoint row is at or past it. A
// topic with an event still held gets the position before the lowest id
// of its held events, at most. Positions only grow.
type Writer struct {
	db      DB
	cfg     Config
	samples []sample // oldest first, at most maxSamples
	reached int64    // the highest id the checkpoint row passed
	known   bool     // reached is set
	heads   headCache
	said    time.Time // when sayStuck last warned
}

// DB is what the writer needs of a connection pool (*pgxpool.Pool has
// it).
type DB interface {
	pgdb.Querier
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// NewWriter returns a writer on db, a pool.
func NewWriter(db DB, cfg Config) *Writer {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Writer{db: db, cfg: cfg}
}

// Run writes every interval until ctx ends. A round that fails is logged
// and the next one tries again.
func (w *Writer) Run(ctx context.Context) {
	tick.Every(ctx, w.cfg.Every, func(ctx context.Context) bool {
		if err := w.Round(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Log.Log(ctx, pgerr.Level(err), "could not write the progress table; trying again", "table", w.cfg.Table.Schema+"."+w.cfg.Table.Name, "err", err)
		}
		return true
	}, tick.Now())
}

// Round samples the outbox table, then writes each topic's row from the
// newest sample the checkpoint row passed. Run calls it every interval.
func (w *Writer) Round(ctx context.Context) error {
	if err := w.sample(ctx); err != nil {
		return err
	}
	w.promote()
	if !w.known {
		return nil
	}
	topics, err := w.topics(ctx)
	if err != nil || len(topics) == 0 {
		return err
	}
	heads, err := w.readHeads(ctx, topics)
	if err != nil {
		return err
	}
	return w.write(ctx, w.rows(topics, heads))
}
