package writeback

// queue holds the outcomes reported since the flusher last took them, in
// the order they were reported. Ids are copied into one arena, so that
// adding an outcome allocates nothing once the slices have grown to the
// load. It is not safe for concurrent use: the Writer guards it.
type queue struct {
	entries []entry
	arena   []byte
	head    int // entries[:head] were dropped
}

// entry is one outcome; its id is arena[off : off+n].
type entry struct {
	reason string // why the event was parked; "" when delivered
	off    int
	n      int32
	table  int32
	failed bool
}

// len is the number of outcomes held.
func (q *queue) len() int { return len(q.entries) - q.head }

func (q *queue) push(table int, id []byte, failed bool, reason string) {
	q.entries = append(q.entries, entry{reason: reason, off: len(q.arena), n: int32(len(id)), table: int32(table), failed: failed})
	q.arena = append(q.arena, id...)
}

// id is e's id; it aliases the arena.
func (q *queue) id(e *entry) []byte { return q.arena[e.off : e.off+int(e.n)] }

// live is the outcomes held, oldest first.
func (q *queue) live() []entry { return q.entries[q.head:] }

// dropOldest forgets the oldest outcome; the queue must not be empty. The
// space it held is reclaimed once the dropped outcomes are at least half
// of the queue, so dropping costs O(1) amortized.
func (q *queue) dropOldest() {
	q.entries[q.head] = entry{} // let go of the reason
	q.head++
	if q.head >= 1024 && 2*q.head >= len(q.entries) {
		q.compact()
	}
}

// compact moves the outcomes held to the front of the slices.
func (q *queue) compact() {
	live := q.entries[q.head:]
	base := len(q.arena)
	if len(live) > 0 {
		base = live[0].off
	}
	q.arena = q.arena[:copy(q.arena, q.arena[base:])]
	n := copy(q.entries, live)
	for i := range q.entries[:n] {
		q.entries[i].off -= base
	}
	clear(q.entries[n:])
	q.entries = q.entries[:n]
	q.head = 0
}

// reset empties the queue and keeps its memory for reuse.
func (q *queue) reset() {
	clear(q.entries)
	q.entries = q.entries[:0]
	q.arena = q.arena[:0]
	q.head = 0
}
