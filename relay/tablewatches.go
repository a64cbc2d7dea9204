package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// tableWatches watch each outbox table of a session, table i at index i.
// Together they vouch for the oldest position each vouches for.
type tableWatches []*tableWatch

// watchTables checks each outbox table of cfg once and returns their
// watches (see watchTable); prev are the marks of the watches of an
// earlier session of the Run (tableWatches.marks), or nil.
func watchTables(ctx context.Context, db pgdb.DB, cfg Config, start pglogrepl.LSN, prev []watchMark, stop func(), log *slog.Logger) (tableWatches, error) {
	ws := make(tableWatches, len(cfg.Tables))
	for i := range cfg.Tables {
		var mark *watchMark
		if i < len(prev) {
			mark = &prev[i]
		}
		w, err := watchTable(ctx, db, cfg, i, start, mark, stop, log)
		if err != nil {
			return nil, err
		}
		ws[i] = w
	}
	return ws, nil
}

// bounds are the positions the watches vouch for, as the gate's bounds:
// VouchedAt, or none without a table (a relay of messages only: no table
// can leave the publication, nothing to lower).
func (ws tableWatches) bounds() []func() checkpoint.Position {
	if len(ws) == 0 {
		return nil
	}
	return []func() checkpoint.Position{ws.VouchedAt}
}

// Vouched is the oldest position a watch vouches for; at least one watch.
// Safe for concurrent use.
func (ws tableWatches) Vouched() pglogrepl.LSN {
	v := ws[0].Vouched()
	for _, w := range ws[1:] {
		v = min(v, w.Vouched())
	}
	return v
}

// VouchedAt is Vouched with its time: the oldest position a watch vouches
// for, with that watch's time, which covers every transaction after it;
// at least one watch. Safe for concurrent use.
func (ws tableWatches) VouchedAt() checkpoint.Position {
	v := ws[0].VouchedAt()
	for _, w := range ws[1:] {
		if at := w.VouchedAt(); at.LSN < v.LSN {
			v = at
		}
	}
	return v
}

// Err is why the first watch that failed stopped vouching, or nil.
func (ws tableWatches) Err() error {
	for _, w := range ws {
		if err := w.Err(); err != nil {
			return err
		}
	}
	return nil
}

// relation tells the watch of the message's table of a Relation message.
func (ws tableWatches) relation(ctx context.Context, rel decoder.Relation) error {
	return ws[rel.Table].relation(ctx, rel)
}

// start starts every watch; the returned function stops them all.
func (ws tableWatches) start(every time.Duration) (stop func()) {
	stops := make([]func(), len(ws))
	for i, w := range ws {
		stops[i] = w.start(every)
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// marks are what each watch last found right, table i at index i.
func (ws tableWatches) marks() []watchMark {
	out := make([]watchMark, len(ws))
	for i, w := range ws {
		out[i] = w.mark()
	}
	return out
}

// refresh refreshes every watch (see tableWatch.refresh).
func (ws tableWatches) refresh(ctx context.Context) {
	for _, w := range ws {
		w.refresh(ctx)
	}
}
