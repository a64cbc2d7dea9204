package writeback

import "time"

// shrinkAbove is the number of outcomes above which memory that a burst
// made grow is released once the burst is over.
const shrinkAbove = 1 << 16

// tableState is one table's outcomes held by the flusher.
type tableState struct {
	Table
	quoted string
	// held are the outcomes taken from the queue, in the order they were
	// reported. Only the latest outcome of an id is live: index maps each
	// id held to its entry; settled entries are compacted away.
	held  []pending
	index map[string]int
	live  int
	peak  int         // the most ids index held since it was made
	sql   *statements // nil until looked up (again, after a refusal)
	// took records that the table took the delivered value for at least
	// one row since the Writer started: the value is good, so a row that
	// refuses it refuses for itself (a trigger, a constraint on another
	// column).
	took bool

	backoff time.Duration
	due     time.Time // no attempt before
	failing int       // attempts failed since the last success
}

// pending is one outcome held by the flusher.
type pending struct {
	id   string
	done Done
	// earlier are the Done of the outcomes of the same id it superseded:
	// told with its own, once the row is written (an earlier event is
	// confirmed only once its row says what a later one made it say).
	earlier []Done
	settled bool // written, refused or superseded: no longer live
	// xid is the transaction that inserted the row, 0 if unknown: while
	// the database does not show it, a row not found is not yet visible
	// rather than deleted (Writer).
	xid uint32
	// tries counts the statements that left its row, which exists,
	// unchanged; unseen is when a statement first found no row while its
	// transaction was not visible (unwritten).
	tries  int
	unseen time.Time
}

// merge moves the queue's outcomes into the tables' held outcomes. The
// latest outcome of an id supersedes any earlier one still held, and takes
// over its Done: told once the row is written.
func (f *flusher) merge(q *queue) {
	for _, e := range q.entries {
		t := &f.tables[e.table]
		id := string(q.id(&e))
		p := pending{id: id, done: e.done}
		if x, ok := e.done.(inserter); ok {
			p.xid = x.Xid() // here, not in Delivered: off the producer's ack path
		}
		if i, ok := t.index[id]; ok {
			old := &t.held[i]
			p.earlier = append(old.earlier, old.done)
			old.settled, old.done, old.earlier = true, nil, nil
		} else {
			t.live++
			f.live++
			t.peak = max(t.peak, t.live)
		}
		t.index[id] = len(t.held)
		t.held = append(t.held, p)
	}
	for i := range f.tables {
		if t := &f.tables[i]; len(t.held) > 2*t.live+1024 {
			t.compact()
		}
	}
}

// settle marks held[i] settled and tells its Done and those it took over.
func (t *tableState) settle(i int) {
	p := &t.held[i]
	p.settled = true
	if p.done != nil {
		p.done.WrittenBack()
	}
	for _, d := range p.earlier {
		if d != nil {
			d.WrittenBack()
		}
	}
	p.done, p.earlier = nil, nil
}

// forget settles held[i], whose outcome is in its row or refused by it:
// its id is no longer held.
func (f *flusher) forget(t *tableState, i int) {
	if t.held[i].settled {
		return // settled already: counted out once
	}
	t.settle(i)
	delete(t.index, t.held[i].id)
	t.live--
	f.live--
}

// compact drops the settled entries of held and re-indexes the others.
func (t *tableState) compact() {
	n := 0
	for i := range t.held {
		if !t.held[i].settled {
			t.held[n] = t.held[i]
			t.index[t.held[n].id] = n
			n++
		}
	}
	clear(t.held[n:])
	t.held = t.held[:n]
}
