package pubwatch

import (
	"context"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// Watches watch each outbox table of a session, table i at index i.
// Together they vouch for the oldest position each vouches for.
type Watches []*tableWatch

// watchTables checks each outbox table of cfg once and returns their
// watches (see watchTable); prev are the marks of the watches of an
// earlier session of the Run (Watches.Marks), or nil.
func watchTables(ctx context.Context, db pgdb.DB, cfg Config, start pglogrepl.LSN, prev []Mark, stop func()) (Watches, error) {
	ws := make(Watches, len(cfg.Tables))
	for i := range cfg.Tables {
		var mark *Mark
		if i < len(prev) {
			mark = &prev[i]
		}
		w, err := watchTable(ctx, db, cfg, i, start, mark, stop)
		if err != nil {
			return nil, err
		}
		ws[i] = w
	}
	return ws, nil
}

// Bounds are the positions the watches vouch for, as the gate's bounds:
// VouchedAt, or none without a table (a relay of messages only: no table
// can leave the publication, nothing to lower).
func (ws Watches) Bounds() []func() checkpoint.Position {
	if len(ws) == 0 {
		return nil
	}
	return []func() checkpoint.Position{ws.VouchedAt}
}

// Vouched is the oldest position a watch vouches for; at least one watch.
// Safe for concurrent use.
func (ws Watches) Vouched() pglogrepl.LSN {
	v := ws[0].Vouched()
	for _, w := range ws[1:] {
		v = min(v, w.Vouched())
	}
	return v
}

// VouchedAt is Vouched with its time: the oldest position a watch vouches
// for, with that watch's time, which covers every transaction after it;
// at least one watch. Safe for concurrent use.
func (ws Watches) VouchedAt() checkpoint.Position {
	v := ws[0].VouchedAt()
	for _, w := range ws[1:] {
		if at := w.VouchedAt(); at.LSN < v.LSN {
			v = at
		}
	}
	return v
}

// Err is why the first watch that failed stopped vouching, or nil: the
// session must end with it.
func (ws Watches) Err() error {
	for _, w := range ws {
		if err := w.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Relation tells the watch of the message's table of a Relation message,
// in stream order, from the stream's reader alone. An error ends the
// session: a [fatal.Error] when the table was dropped and created again,
// or lacks now too a column the message's rows lack (see unfit).
func (ws Watches) Relation(ctx context.Context, rel decoder.Relation) error {
	return ws[rel.Table].relation(ctx, rel)
}

// Start starts every watch checking every Config.Every; the returned
// function stops them all.
func (ws Watches) Start() (stop func()) {
	stops := make([]func(), len(ws))
	for i, w := range ws {
		stops[i] = w.start(w.every)
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// Marks are what each watch last found right, table i at index i: where
// the watches of the Run's next session start from. Safe for concurrent
// use.
func (ws Watches) Marks() []Mark {
	out := make([]Mark, len(ws))
	for i, w := range ws {
		out[i] = w.mark()
	}
	return out
}

// Refresh checks every watch now, unless it already failed, so that a
// final confirmation includes everything delivered; a failure to check is
// logged (see tableWatch.refresh).
func (ws Watches) Refresh(ctx context.Context) {
	for _, w := range ws {
		w.refresh(ctx)
	}
}
