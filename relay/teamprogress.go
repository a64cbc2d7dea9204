package relay

import (
	"context"
	"errors"
	"sync"

	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/progress"
	"github.com/cdc-relay/cdc-relay/status"
)

// progressTable is an outbox table's progress table, as progress.Check
// found it, with the table it follows and its name in the status table.
type progressTable struct {
	table  progress.Table
	source progress.Source
	name   string // the outbox table's source_table
}

// checkProgress checks the progress table of each outbox table that has
// one (progress.Check), and returns them, checked. A table the relay
// cannot keep true stops the start: a fatal error, which says what to
// fix; the database not answering is tried again.
func (rn *runner) checkProgress(ctx context.Context) ([]progressTable, error) {
	var out []progressTable
	names := rn.cfg.SourceNames()
	for i, t := range rn.cfg.Tables {
		if t.Progress == nil {
			continue
		}
		src := t.ProgressSource()
		checked, left, err := progress.Check(ctx, rn.pool, *t.Progress, src)
		var refused *progress.RefusedError
		if errors.As(err, &refused) {
			return nil, fatal.Error{Err: err}
		}
		if err != nil {
			return nil, err
		}
		if len(left) > 0 {
			rn.log.Warn("the progress table lacks columns the relay would write or read; it does without them", "table", t.Progress.Schema+"."+t.Progress.Name, "columns", left)
		}
		out = append(out, progressTable{table: checked, source: src, name: names[i]})
	}
	return out, nil
}

// pausedByProgress is the status store's option that makes the topics
// paused in the progress tables paused for the relay.
func pausedByProgress(tables []progressTable) status.Option {
	var selects []string
	for _, pt := range tables {
		selects = append(selects, pt.table.PausedTopics())
	}
	return status.PausedBy(selects...)
}

// keepProgress runs, on the leader until ctx ends, a writer for each
// progress table (progress.Writer): positions as far as the checkpoint
// row vouches, and the errors of each topic's held events.
func (s *session) keepProgress(ctx context.Context, side *sync.WaitGroup) {
	for _, pt := range s.progress {
		w := progress.NewWriter(s.pool, progress.Config{Table: pt.table, Source: pt.source, Every: s.cfg.StatusInterval,
			Saved: s.saver.Saved, Heads: s.progressHeads(pt.name), Log: s.log})
		side.Go(func() { w.Run(ctx) })
	}
}

// progressHeads returns a progress writer's Heads: the held rows of the
// outbox table source in the status table (status.Store.Heads).
func (s *session) progressHeads(source string) progress.HeadsFunc {
	return func(ctx context.Context, topics []string, afterID int64) (progress.HeadsRead, error) {
		return s.failures.Heads(ctx, status.HeadsQuery{Topics: topics, Source: source, AfterID: afterID})
	}
}
