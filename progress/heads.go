package progress

import (
	"context"
	"slices"
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
	// Unknown is true when one of them has no integer id: where it stands
	// is not known, and the topic's position is left as it is.
	Unknown bool
	// Failing is true while one of them fails; Attempts and LastError are
	// then the first such one's failed attempts and last error.
	Failing   bool
	Attempts  int
	LastError string
}

// HeadsRead is what a HeadsFunc read.
type HeadsRead struct {
	// Heads are the heads of the topics with held rows, in no order.
	Heads []Head
	// MaxID is the status table's highest id, and Writers the
	// transactions writing to it (holding its ROW EXCLUSIVE lock), read
	// before the rows: a row with an id up to MaxID that the read did not
	// see is one of theirs. Once none of them writes any more (a later
	// read's Writers), every row up to MaxID was read, or committed
	// since, and a read after MaxID misses none.
	MaxID   int64
	Writers []string
}

// HeadsFunc reads the heads of those of topics whose held rows come from
// the source table, among the rows parked after the status table's id
// afterID (0: every held row) (status.Store.Heads).
type HeadsFunc func(ctx context.Context, topics []string, afterID int64) (HeadsRead, error)

// headCache keeps the heads read, so that a read of every held row (a
// scan of a paused topic's backlog) is not made every round: each round
// reads only the rows parked since a settled read (afterID), merged in,
// and every row again only when the last full read is older than
// headsEvery times its cost. A read is settled once none of the
// transactions writing to the status table when it read its highest id
// writes any more: a row up to that id it did not see (the id is taken
// before the park commits) has committed since, and a later read sees
// it. So a head kept is never above the topic's lowest held id: it holds
// a position back, never past an event still held. (A held row whose
// topic an operator changed in place, `failed retry --topic`, counts in
// its new topic from the next full read.)
type headCache struct {
	heads   map[string]Head
	topics  map[string]bool // those the last full read read
	after   int64           // the highest settled read's MaxID: where a read of the rows since starts
	pending []HeadsRead     // reads not settled yet, oldest first (their heads dropped)
	full    time.Time
	cost    time.Duration // of the last full read
}

// headsEvery is how much longer than it took a full read of the heads
// waits before the next one: at most a twentieth of the database's time.
const headsEvery = 20

// maxPending bounds the reads waiting to settle; past it, the newest is
// dropped (a later read settles in its place).
const maxPending = 64

// readHeads returns the heads of topics: a full read when one is due,
// else the last heads with the rows parked since merged in.
func (w *Writer) readHeads(ctx context.Context, topics []string) (map[string]Head, error) {
	c := &w.heads
	if c.heads == nil || !c.covers(topics) || time.Since(c.full) >= max(w.cfg.Every, headsEvery*c.cost) {
		start := time.Now()
		read, err := w.cfg.Heads(ctx, topics, 0)
		if err != nil {
			return nil, err
		}
		c.heads, c.full, c.cost = make(map[string]Head, len(read.Heads)), start, time.Since(start)
		c.topics = make(map[string]bool, len(topics))
		for _, topic := range topics {
			c.topics[topic] = true
		}
		for _, h := range read.Heads {
			c.heads[h.Topic] = h
		}
		c.settle(read)
		return c.heads, nil
	}
	read, err := w.cfg.Heads(ctx, topics, c.after)
	if err != nil {
		return nil, err
	}
	for _, h := range read.Heads {
		c.heads[h.Topic] = merge(c.heads[h.Topic], h)
	}
	c.settle(read)
	return c.heads, nil
}

// settle settles the pending reads none of whose writers is among read's,
// then read itself when it had none, or keeps it pending.
func (c *headCache) settle(read HeadsRead) {
	n := 0
	for _, p := range c.pending {
		if slices.ContainsFunc(p.Writers, func(x string) bool { return slices.Contains(read.Writers, x) }) {
			c.pending[n] = p
			n++
			continue
		}
		c.after = max(c.after, p.MaxID)
	}
	c.pending = c.pending[:n]
	switch {
	case len(read.Writers) == 0:
		c.after = max(c.after, read.MaxID)
	case len(c.pending) < maxPending:
		c.pending = append(c.pending, HeadsRead{MaxID: read.MaxID, Writers: read.Writers})
	}
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

// merge is the head of a topic kept (old, perhaps zero) with the rows
// parked since (h): the lower id, an unknown one kept, and the failure
// kept unless it had none.
func merge(old, h Head) Head {
	if old.Topic == "" {
		return h
	}
	if h.HasMinID && (!old.HasMinID || h.MinID < old.MinID) {
		old.MinID, old.HasMinID = h.MinID, true
	}
	old.Unknown = old.Unknown || h.Unknown
	if !old.Failing && h.Failing {
		old.Failing, old.Attempts, old.LastError = true, h.Attempts, h.LastError
	}
	return old
}
