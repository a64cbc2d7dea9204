package relay

import (
	"context"
	"errors"
	"sync"

	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/progress"
	"github.com/cdc-relay/cdc-relay/status"
)

// progressTable is an outbox table's progress table as one publisher
// keeps its rows in it, as progress.Check found it, with the table it
// follows and its name in the status table.
type progressTable struct {
	publisher string // the relay's: outbox.KafkaPublisher or a webhook's
	table     progress.Table
	source    progress.Source
	name      string // the outbox table's source_table
}

// checkProgress checks the progress table of each outbox table that has
// one (progress.Check), and returns it, checked, once for each publisher
// that keeps rows in it (outbox.Table.ProgressTables). A table the relay
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
		for _, pp := range t.ProgressTables() {
			table := checked
			table.Publisher = pp.Table.Publisher
			out = append(out, progressTable{publisher: pp.Publisher, table: table, source: pp.Source, name: names[i]})
		}
	}
	return out, nil
}

// pausedByProgress is the status store's option of publisher (the
// relay's name) that makes the topics paused in its rows of the progress
// tables paused for it.
func pausedByProgress(tables []progressTable, publisher string) status.Option {
	return status.PausedBy(progressPauses(tables, publisher)...)
}

// progressPauses are the selects of the topics paused in publisher's rows
// of the progress tables (progress.Table.PausedTopics), and no other's.
func progressPauses(tables []progressTable, publisher string) []string {
	var selects []string
	for _, pt := range tables {
		if pt.publisher == publisher {
			selects = append(selects, pt.table.PausedTopics())
		}
	}
	return selects
}

// keepProgress runs, on the leader until ctx ends, a writer for each
// publisher's rows of each progress table (progress.Writer): positions
// as far as the checkpoint row vouches (it passes an event once every
// publisher delivered or parked it), below the publisher's own held
// events, and the errors of the first of them.
func (s *session) keepProgress(ctx context.Context, side *sync.WaitGroup) {
	for _, pt := range s.progress {
		w := progress.NewWriter(s.pool, progress.Config{Table: pt.table, Source: pt.source, Every: s.cfg.StatusInterval,
			Saved: s.saver.Saved, Heads: progressHeads(s.storeOf(pt.publisher), pt.name), Log: s.log})
		side.Go(func() { w.Run(ctx) })
	}
}

// storeOf is the status store of publisher: Kafka's, or a webhook's.
func (s *session) storeOf(publisher string) *status.Store {
	for _, e := range s.publishers {
		if e.Name == publisher {
			return e.store
		}
	}
	return s.failures
}

// progressHeads returns a progress writer's Heads: the held rows of the
// outbox table source in store, a publisher's (status.Store.Heads).
func progressHeads(store *status.Store, source string) progress.HeadsFunc {
	return func(ctx context.Context, topics []string, afterID int64) (progress.HeadsRead, error) {
		return store.Heads(ctx, status.HeadsQuery{Topics: topics, Source: source, AfterID: afterID})
	}
}
