package writeback

import "time"

// shrinkAbove is the number of outcomes above which memory that a burst
// made grow is released once the burst is over.
const shrinkAbove = 1 << 16

// tableState is one table's outcomes held by the flusher.
type tableState struct {
	Table
	quoted string
	// held are the outcomes taken from the queue in the order they were
	// reported. Only the latest outcome of an id is live: latest maps
	// each id held to its seq; older entries are skipped and compacted
	// away.
	held   []pending
	latest map[string]uint64
	live   int
	peak   int         // the most ids latest held since it was made
	sql    *statements // nil until looked up (again, after a refusal)

	backoff time.Duration
	due     time.Time // no attempt before
	failing int       // attempts failed since the last success
}

// pending is one outcome held by the flusher.
type pending struct {
	id, reason string
	seq        uint64
	failed     bool
}

func (t *tableState) isLive(p *pending) bool { return t.latest[p.id] == p.seq }

// compact drops the entries of held that are not live.
func (t *tableState) compact() {
	n := 0
	for i := range t.held {
		if t.isLive(&t.held[i]) {
			t.held[n] = t.held[i]
			n++
		}
	}
	clear(t.held[n:])
	t.held = t.held[:n]
}

// merge moves the queue's outcomes into the tables' held outcomes. The
// latest outcome of an id replaces any earlier one still held.
func (f *flusher) merge(q *queue) {
	for _, e := range q.live() {
		t := &f.tables[e.table]
		id := string(q.id(&e))
		f.seq++
		if _, ok := t.latest[id]; !ok {
			t.live++
			f.live++
			t.peak = max(t.peak, t.live)
		}
		t.latest[id] = f.seq
		reason := ""
		if e.failed {
			reason = cleanReason(e.reason)
		}
		t.held = append(t.held, pending{id: id, reason: reason, seq: f.seq, failed: e.failed})
	}
	for i := range f.tables {
		if t := &f.tables[i]; len(t.held) > 2*t.live+1024 {
			t.compact()
		}
	}
}

// dropOldest drops the n oldest outcomes held, over all tables.
func (f *flusher) dropOldest(n int) {
	if n <= 0 {
		return
	}
	next := make([]int, len(f.tables)) // per table, the first entry not dropped
	for ; n > 0; n-- {
		var oldest *tableState
		at := -1
		for i := range f.tables {
			t := &f.tables[i]
			for next[i] < len(t.held) && !t.isLive(&t.held[next[i]]) {
				next[i]++
			}
			if next[i] < len(t.held) && (oldest == nil || t.held[next[i]].seq < oldest.held[next[at]].seq) {
				oldest, at = t, i
			}
		}
		if oldest == nil {
			break
		}
		delete(oldest.latest, oldest.held[next[at]].id)
		oldest.live--
		f.live--
		next[at]++
		f.w.dropped.Add(1)
	}
	for i := range f.tables {
		if next[i] > 0 {
			f.tables[i].compact()
		}
	}
}
