package audit

import (
	"bytes"
	"cmp"
	"hash/maphash"
	"slices"
	"sort"
)

// Row is one outbox row as the audit needs it: what the relay makes of it.
type Row struct {
	// ID is the value of the record's "id" header, as the relay writes it
	// (the id column's text, converted by the table's header_converter).
	ID []byte
	// Topics are the topics the row's mapping sends it to: one, or a
	// routed row's matched routes' (none: it goes nowhere).
	Topics []string
	// Key is the record key; KeyNull when the record has none (it then
	// has no order to keep).
	Key     []byte
	KeyNull bool
	// Order is the row's place in commit order (the order column's
	// value), compared only when HasOrder.
	Order    int64
	HasOrder bool
	// Placed says the table's partition column placed the row's record
	// on a partition (decoder.Event.Placed): two placed rows of a key in
	// different partitions are in no order to check, as Kafka keeps none
	// between partitions.
	Placed bool
	// Poison, when set, is why the row cannot become a record: the relay
	// parks it DEAD, and the audit reports it missing with this reason.
	Poison string
}

// Record is one Kafka record as the audit reads it.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	// ID is the "id" header's value; HasID false when it has none.
	ID    []byte
	HasID bool
	// Key is the record key (nil for none): a record whose id is a row's
	// but whose key is not is another row's (another table's sharing the
	// topic, with colliding ids).
	Key []byte
}

// keyShown is how much of a record key the audit keeps, to name it in a
// finding: its order is kept by a hash of the whole key.
const keyShown = 64

// entry is one expected record: a row on one of its topics. 48 bytes.
type entry struct {
	id, key   uint64 // maphash of the id header and of the key
	order     int64
	offset    int64 // of its first record, once seen
	row       uint32
	topic     uint32
	partition int32
	seen      uint16 // records seen (saturating)
	flags     uint8
}

const (
	flagKeyNull uint8 = 1 << iota
	flagOrder
	flagPlaced
)

// arena keeps byte strings end to end, the i-th at end[i-1]:end[i]: one
// allocation for a million ids, not a million strings.
type arena struct {
	b   []byte
	end []uint32
}

func (a *arena) add(v []byte) {
	a.b = append(a.b, v...)
	a.end = append(a.end, uint32(len(a.b)))
}

func (a *arena) get(i uint32) []byte {
	start := uint32(0)
	if i > 0 {
		start = a.end[i-1]
	}
	return a.b[start:a.end[i]]
}

// Ledger matches the records read to the rows read. Add every row, then
// Seal, then See every record, then Result. Its memory is the rows'
// (about 60 bytes a row and their ids' and keys' text), whatever the
// number of records. It is not safe for concurrent use.
type Ledger struct {
	seed     maphash.Seed
	limit    int // findings listed of each kind
	topics   []string
	topicAt  map[string]uint32
	entries  []entry
	ids      arena // per row: the id header
	keys     arena // per row: up to keyShown bytes of the key
	res      Result
	poisoned []Missing
	reserve  int // rows Reserve made room for, until the first Add sizes the arenas
}

// NewLedger returns an empty ledger that lists at most limit findings of
// each kind (it counts them all); limit 0 lists them all.
func NewLedger(limit int) *Ledger {
	return &Ledger{seed: maphash.MakeSeed(), limit: limit, topicAt: map[string]uint32{}}
}

// topic is the index of topic name, added when new.
func (l *Ledger) topic(name string) uint32 {
	if i, ok := l.topicAt[name]; ok {
		return i
	}
	i := uint32(len(l.topics))
	l.topics = append(l.topics, name)
	l.topicAt[name] = i
	return i
}

// Reserve makes room for about n rows of one topic each, so that the
// ledger's slices do not grow (and, growing, hold twice their size) while
// a known number of rows is added: the arenas' room follows the first
// row's id and key. A hint too low only leaves them to grow.
func (l *Ledger) Reserve(n int) {
	if n > 0 && len(l.entries) == 0 {
		l.entries = make([]entry, 0, n)
		l.ids.end = make([]uint32, 0, n)
		l.keys.end = make([]uint32, 0, n)
		l.reserve = n
	}
}

// Add adds a row: one expected record per topic.
func (l *Ledger) Add(r Row) {
	if l.reserve > 0 {
		l.ids.b = make([]byte, 0, l.reserve*(len(r.ID)+1))
		l.keys.b = make([]byte, 0, l.reserve*(min(len(r.Key), keyShown)+1))
		l.reserve = 0
	}
	l.res.Rows++
	if r.Poison != "" {
		l.res.MissingCount++
		l.res.Poison++
		if l.listed(len(l.poisoned)) {
			l.poisoned = append(l.poisoned, Missing{ID: string(r.ID), Key: shownKey(r.Key, r.KeyNull), Reason: r.Poison})
		}
		return
	}
	if len(r.Topics) == 0 {
		l.res.Unrouted++
		return
	}
	row := uint32(len(l.ids.end))
	l.ids.add(r.ID)
	l.keys.add(r.Key[:min(len(r.Key), keyShown)])
	e := entry{id: maphash.Bytes(l.seed, r.ID), row: row, order: r.Order}
	if r.KeyNull {
		e.flags |= flagKeyNull
	} else {
		e.key = maphash.Bytes(l.seed, r.Key)
	}
	if r.HasOrder {
		e.flags |= flagOrder
	}
	if r.Placed {
		e.flags |= flagPlaced
	}
	for _, t := range r.Topics {
		e.topic = l.topic(t)
		l.entries = append(l.entries, e)
	}
}

// Topics are the topics the rows added go to, in the order first seen:
// those to read.
func (l *Ledger) Topics() []string { return slices.Clone(l.topics) }

// Seal ends the adding of rows: the ledger sorts them by id to look the
// records up.
func (l *Ledger) Seal() {
	slices.SortFunc(l.entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.row, b.row), cmp.Compare(a.topic, b.topic))
	})
	l.res.Expected = int64(len(l.entries))
}

// See matches one record to its row. Records of one partition must come
// in offset order.
func (l *Ledger) See(r Record) {
	l.res.Records++
	if !r.HasID {
		l.res.Unmatched++
		return
	}
	h := maphash.Bytes(l.seed, r.ID)
	i := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].id >= h })
	topic, known := l.topicAt[r.Topic]
	matched, want := false, []string(nil)
	for ; i < len(l.entries) && l.entries[i].id == h; i++ {
		e := &l.entries[i]
		if !bytes.Equal(l.ids.get(e.row), r.ID) {
			continue // another id of the same hash
		}
		if !l.keyOf(e, r.Key) {
			continue // another row's of the same id: another table's
		}
		if known && e.topic == topic {
			l.hit(e, r)
			return
		}
		matched = true
		want = append(want, l.topics[e.topic])
	}
	if !matched {
		l.res.Unmatched++
		return
	}
	l.res.WrongTopicCount++
	if l.listed(len(l.res.WrongTopic)) {
		l.res.WrongTopic = append(l.res.WrongTopic, WrongTopic{ID: string(r.ID), Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Want: want})
	}
}

// keyOf reports whether k, a record key, is e's row's (by its hash): no
// key (or an empty one) for a row whose key is null.
func (l *Ledger) keyOf(e *entry, k []byte) bool {
	if e.flags&flagKeyNull != 0 {
		return len(k) == 0
	}
	return maphash.Bytes(l.seed, k) == e.key
}

// hit counts r, a record of e's row on e's topic.
func (l *Ledger) hit(e *entry, r Record) {
	l.res.Matched++
	if e.seen == 0 {
		e.partition, e.offset = r.Partition, r.Offset
	}
	if e.seen < ^uint16(0) {
		e.seen++
	}
}

// listed says whether a finding kind with n listed may list one more.
func (l *Ledger) listed(n int) bool { return l.limit <= 0 || n < l.limit }

// shownKey is the key as a finding names it.
func shownKey(k []byte, null bool) string {
	if null {
		return ""
	}
	return string(k[:min(len(k), keyShown)])
}
