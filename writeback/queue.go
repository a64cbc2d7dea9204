package writeback

// queue holds the outcomes reported since the flusher last took them, in
// the order they were reported. Ids are copied into one arena, so that
// adding an outcome allocates nothing once the slices have grown to the
// load. It is not safe for concurrent use: the Writer guards it.
type queue struct {
	entries []entry
	arena   []byte
}

// entry is one outcome; its id is arena[off : off+n].
type entry struct {
	done  Done // told once the outcome is settled; may be nil
	off   int
	n     int32
	table int32
}

// len is the number of outcomes held.
func (q *queue) len() int { return len(q.entries) }

func (q *queue) push(table int, id []byte, done Done) {
	q.entries = append(q.entries, entry{done: done, off: len(q.arena), n: int32(len(id)), table: int32(table)})
	q.arena = append(q.arena, id...)
}

// id is e's id; it aliases the arena.
func (q *queue) id(e *entry) []byte { return q.arena[e.off : e.off+int(e.n)] }

// reset empties the queue and keeps its memory for reuse.
func (q *queue) reset() {
	clear(q.entries)
	q.entries = q.entries[:0]
	q.arena = q.arena[:0]
}
