package relay

import (
	"context"
	"sync"

	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/progress"
	"github.com/cdc-relay/cdc-relay/status"
)

// progressTable is an outbox table's progress table, as progress.Check
// found it, with the table it follows.
type progressTable struct {
	table  progress.Table
	source progress.Source
}

// checkProgress checks the progress table of each outbox table that has
// one (progress.Check), and returns them, checked. A table the relay
// cannot keep true stops the start: a fatal error, which says what to
// fix.
func (rn *runner) checkProgress(ctx context.Context) ([]progressTable, error) {
	var out []progressTable
	for _, t := range rn.cfg.Tables {
		if t.Progress == nil {
			continue
		}
		src := t.ProgressSource()
		checked, left, err := progress.Check(ctx, rn.pool, *t.Progress, src)
		if err != nil {
			return nil, fatal.Error{Err: err}
		}
		if len(left) > 0 {
			rn.log.Warn("the progress table lacks columns the relay would write or read; it does without them", "table", t.Progress.Schema+"."+t.Progress.Name, "columns", left)
		}
		out = append(out, progressTable{table: checked, source: src})
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
// row vouches, and the errors of each topic's first held event.
func (s *session) keepProgress(ctx context.Context, side *sync.WaitGroup) {
	for _, pt := range s.progress {
		w := progress.NewWriter(s.pool, progress.Config{Table: pt.table, Source: pt.source, Every: s.cfg.StatusInterval,
			Saved: s.saver.Saved, Held: s.failures.TopicsHeld, Heads: s.progressHeads, Log: s.log})
		side.Go(func() { w.Run(ctx) })
	}
}

// progressHeads is the progress writers' Heads: the first held row of each
// topic in the status table.
func (s *session) progressHeads(ctx context.Context, topics []string) ([]progress.Head, error) {
	heads, err := s.failures.Heads(ctx, topics)
	if err != nil {
		return nil, err
	}
	out := make([]progress.Head, len(heads))
	for i, h := range heads {
		out[i] = progress.NewHead(h.Topic, h.EventID, h.Failing(), h.Attempts, h.LastError)
	}
	return out, nil
}
