package progress

import (
	"context"
	"time"
)

// Head is what the held rows of a topic (its events the relay has not
// delivered yet: parked, held, paused, adopted or reset) say of its
// progress.
type Head struct {
	// Topic is the rows' topic.
	Topic string
	// MinID is the lowest id among them, HasMinID false when none has an
	// integer id: the topic's position stays below it.
	MinID    int64
	HasMinID bool
	// Failing is true while one of them fails; Attempts and LastError are
	// then the first such one's failed attempts and last error.
	Failing   bool
	Attempts  int
	LastError string
}

// HeadsFunc reads the heads of those of topics whose held rows come from
// the source table, among the rows parked after the status table's id
// afterID (0: every held row), and returns the status table's highest id
// read before them (status.Store.Heads).
type HeadsFunc func(ctx context.Context, topics []string, afterID int64) (heads []Head, maxID int64, err error)

// headCache keeps the heads read, so that a read of every held row (a
// scan of a paused topic's backlog) is not made every round: each round
// reads only the rows parked since the last read (afterID), merged in, and
// every row again only when the last full read is older than headsEvery
// times its cost. A head kept is never above the topic's lowest held id
// now, so it holds a position back, never past an event still held: a
// row delivered since only raises the lowest id, and a row parked since
// is read at the next round (one committed more than sinceRounds rounds
// after a later one, at the next full read). (A held row whose topic an
// operator changed in place, `failed retry --topic`, counts in its new
// topic from the next full read.)
type headCache struct {
	heads  map[string]Head
	topics map[string]bool // those the last full read read
	// maxIDs are the status table's highest ids read before the last
	// reads, newest last, at most sinceRounds: a read of the rows parked
	// since starts after the oldest, so that a park committed a few rounds
	// after a later one's (the table's id is taken before the commit) is
	// still read.
	maxIDs []int64
	full   time.Time
	cost   time.Duration // of the last full read
}

// sinceRounds is how many rounds back a read of the rows parked since
// starts: a park that stays uncommitted that long while a later one
// commits is read at the next full read only.
const sinceRounds = 10

// headsEvery is how much longer than it took a full read of the heads
// waits before the next one: at most a twentieth of the database's time.
const headsEvery = 20

// readHeads returns the heads of topics: a full read when one is due,
// else the last heads with the rows parked since merged in.
func (w *Writer) readHeads(ctx context.Context, topics []string) (map[string]Head, error) {
	c := &w.heads
	if c.heads == nil || !c.covers(topics) || time.Since(c.full) >= max(w.cfg.Every, headsEvery*c.cost) {
		start := time.Now()
		heads, maxID, err := w.cfg.Heads(ctx, topics, 0)
		if err != nil {
			return nil, err
		}
		c.heads, c.maxIDs, c.full, c.cost = make(map[string]Head, len(heads)), []int64{maxID}, start, time.Since(start)
		c.topics = make(map[string]bool, len(topics))
		for _, topic := range topics {
			c.topics[topic] = true
		}
		for _, h := range heads {
			c.heads[h.Topic] = h
		}
		return c.heads, nil
	}
	heads, maxID, err := w.cfg.Heads(ctx, topics, c.maxIDs[0])
	if err != nil {
		return nil, err
	}
	if c.maxIDs = append(c.maxIDs, maxID); len(c.maxIDs) > sinceRounds {
		c.maxIDs = c.maxIDs[1:]
	}
	for _, h := range heads {
		c.heads[h.Topic] = merge(c.heads[h.Topic], h)
	}
	return c.heads, nil
}

// merge is the head of a topic kept (old, perhaps zero) with the rows
// parked since (h): the lower id, and the failure kept unless it had
// none.
func merge(old, h Head) Head {
	if old.Topic == "" {
		return h
	}
	if h.HasMinID && (!old.HasMinID || h.MinID < old.MinID) {
		old.MinID, old.HasMinID = h.MinID, true
	}
	if !old.Failing && h.Failing {
		old.Failing, old.Attempts, old.LastError = true, h.Attempts, h.LastError
	}
	return old
}

// covers reports whether the last full read read every one of topics.
func (c *headCache) covers(topics []string) bool {
	for _, topic := range topics {
		if !c.topics[topic] {
			return false
		}
	}
	return true
}
