package report

import (
	"context"
	"slices"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

const (
	// heldCostFactor is how many times the last count of the held rows
	// took a StatsReader waits before counting them again; heldMaxWait
	// is the longest it waits.
	heldCostFactor = 20
	heldMaxWait    = time.Minute
	// heldRetry is how long it waits after a count that failed (with
	// earlier counts to give meanwhile) before it counts again.
	heldRetry = 30 * time.Second
)

// StatsReader reads a relay's DatabaseStats again and again, as a running
// relay does every few seconds. Every Read reads the slot, the pause
// tables and the backfills; the held counts, whose query reads every held
// row of the status table, are counted again only once twenty times
// their last count's duration (at most a minute) has passed since it: a
// backlog of a million
// held rows takes its count a second, which every five seconds would
// take a fifth of the database's time from the poller draining that
// backlog. In between, Read gives the last counts (DatabaseStats.HeldAt
// says when they were counted), each oldest held event older by the
// time since; a status table whose file changed (a TRUNCATE) is counted
// again at once. A few thousand held rows are counted at every Read. Not
// safe for concurrent use.
type StatsReader struct {
	names Names
	// last is the last count of the held rows; counted when it was
	// taken, due when it is to be taken again.
	last           DatabaseStats
	counted, due   time.Time
	countedAtLeast bool
}

// NewStatsReader returns a StatsReader of the slot and tables names
// names.
func NewStatsReader(names Names) *StatsReader {
	return &StatsReader{names: names}
}

// Read reads the figures as ReadDatabaseStats does, but for the held
// counts, counted again only when due (see StatsReader). A Read that
// fails otherwise counts them again at the next.
func (r *StatsReader) Read(ctx context.Context, db pgdb.Querier) (DatabaseStats, error) {
	s, err := readStats(ctx, db, r.names, func(s *DatabaseStats) error { return r.held(ctx, db, s) })
	if err != nil {
		r.countedAtLeast = false
	}
	return s, err
}

// held fills s's held counts: counted now when due, or when the status
// table's file changed since the last count (a TRUNCATE, which
// WarnTruncated must see at once), else the last ones aged by the time
// since. A count that fails (a backlog too large to count within the
// reading's time) gives the last counts too, and is tried again after
// heldRetry; with none to give, it fails the reading.
func (r *StatsReader) held(ctx context.Context, db pgdb.Querier, s *DatabaseStats) error {
	now := time.Now()
	if r.countedAtLeast && now.Before(r.due) && s.StatusFile == r.last.StatusFile {
		copyHeld(s, r.last, now.Sub(r.counted))
		return nil
	}
	if err := readHeld(ctx, db, r.names, s); err != nil {
		if !r.countedAtLeast || s.StatusFile != r.last.StatusFile {
			return err
		}
		r.due = now.Add(heldRetry)
		copyHeld(s, r.last, now.Sub(r.counted))
		return nil
	}
	took := time.Since(now)
	r.last, r.counted, r.due, r.countedAtLeast = *s, now, now.Add(min(heldCostFactor*took, heldMaxWait)), true
	return nil
}

// copyHeld sets s's held counts to those of from, with each topic's
// oldest held event older by age.
func copyHeld(s *DatabaseStats, from DatabaseStats, age time.Duration) {
	s.Failed, s.Dead, s.Waiting, s.Paused = from.Failed, from.Dead, from.Waiting, from.Paused
	s.HeldTopics, s.HeldAt = from.HeldTopics, from.HeldAt
	if s.OldestOwedSeconds = from.OldestOwedSeconds; s.OldestOwedSeconds > 0 {
		s.OldestOwedSeconds += age.Seconds()
	}
	s.Topics = slices.Clone(from.Topics)
	for i := range s.Topics {
		s.Topics[i].OldestHeldSeconds += age.Seconds()
	}
}
