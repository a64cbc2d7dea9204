package keyorder

import (
	"hash/maphash"
	"sync/atomic"
)

// keysInFlight counts the records franz-go holds for each topic and record
// key (produced, its callback not run yet), in counters shared by the keys
// whose hashes meet: a counter at 0 says that no record of its keys is in
// the producer, so none can still fail and join the alone queue. Sharing
// only makes an event wait longer. Safe for concurrent use.
type keysInFlight struct {
	seed   maphash.Seed
	counts []atomic.Int32 // len is a power of two
}

// keysInFlightSlots is the number of counters: 256 KiB per session.
const keysInFlightSlots = 1 << 16

func newKeysInFlight() *keysInFlight {
	return &keysInFlight{seed: maphash.MakeSeed(), counts: make([]atomic.Int32, keysInFlightSlots)}
}

// slot is the counter of an event of topic and key (its order key,
// Order.OrderKey) plus 1, or 0 for one without a key (never ordered).
func (k *keysInFlight) slot(topic string, key []byte) int32 {
	if k == nil || key == nil {
		return 0
	}
	h := maphash.String(k.seed, topic)*31 ^ maphash.Bytes(k.seed, key)
	return int32(h&(keysInFlightSlots-1)) + 1
}

// add counts an event of topic and key, at place p, into the producer.
func (k *keysInFlight) add(topic string, key []byte, p *Place) {
	if p.slot = k.slot(topic, key); p.slot != 0 {
		k.counts[p.slot-1].Add(1)
	}
}

// done counts the event at p out of the producer, once its callback
// settled it, and reports whether that left its counter at 0.
func (k *keysInFlight) done(p *Place) bool {
	if s := p.slot; s != 0 {
		p.slot = 0 // before the count: whoever sees it drop may take it
		return k.counts[s-1].Add(-1) == 0
	}
	return false
}

// busy reports whether a record of topic and key (or of a key sharing
// its counter) is in the producer.
func (k *keysInFlight) busy(topic string, key []byte) bool {
	s := k.slot(topic, key)
	return s != 0 && k.counts[s-1].Load() != 0
}
