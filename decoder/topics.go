package decoder

import (
	"hash/maphash"
	"strconv"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// maxTopicCache is how many topic names a Decoder keeps validated: far more
// than the topics an outbox sends to. Full, it holds 1.5 MB for names like
// outbox.event.order1234 and 16 MB at worst (names of 249 control
// characters, quoted escaped in the reason they are refused); names longer
// than Kafka allows are not kept.
const maxTopicCache = 10000

// topicCache interns rendered topic names with the result of their
// validation, so that a topic is validated and allocated once, not once per
// event. It keeps the maxTopicCache names used most recently (an LRU): rows
// that name ever new topics cost a validation and an allocation per new
// name and bounded memory, and the topics in steady use stay cached.
//
// It is the non-locking simplelru: a Decoder is used by the one goroutine
// that reads the replication stream, so a lock would be paid on every event
// for nothing.
//
// Names are looked up by a hash of their bytes, and the name found is
// compared with the bytes: passing string(b) to a (generic) method, unlike
// indexing a map with it, allocates a string when the name is longer than
// 32 bytes, and this is on the per-event path. Two names with the same hash
// (1 in 2^64 per pair) are both right, each evicting the other when used.
// Before the LRU comes the last name looked up: consecutive events mostly
// share a topic, and a comparison of bytes is cheaper than an LRU lookup.
type topicCache struct {
	seed  maphash.Seed
	lru   *simplelru.LRU[uint64, topicEntry]
	last  topicEntry
	check func(name string) error
}

// topicEntry is a topic name and why it cannot be used, or nil.
type topicEntry struct {
	name string
	err  error
}

// newTopicCache returns a cache of size names (size > 0) validated by check.
func newTopicCache(size int, check func(name string) error) *topicCache {
	lru, err := simplelru.NewLRU[uint64, topicEntry](size, nil)
	if err != nil {
		panic("decoder: topic cache of size " + strconv.Itoa(size) + ": " + err.Error())
	}
	return &topicCache{seed: maphash.MakeSeed(), lru: lru, check: check}
}

// get returns the topic named by b and nil when it is a legal Kafka topic
// name that Mapping.AllowedTopics allows, else the reason it is not. The
// name is allocated and checked once while it stays cached; b is only read
// during the call.
func (c *topicCache) get(b []byte) (string, error) {
	// An empty b skips the comparison: last.name is "" before any lookup.
	if len(b) > 0 && string(b) == c.last.name {
		return c.last.name, c.last.err
	}
	if len(b) > maxTopicLen {
		name := string(b)
		return name, c.check(name)
	}
	h := maphash.Bytes(c.seed, b)
	e, ok := c.lru.Get(h)
	if !ok || e.name != string(b) {
		name := string(b)
		e = topicEntry{name: name, err: c.check(name)}
		c.lru.Add(h, e)
	}
	c.last = e
	return e.name, e.err
}
