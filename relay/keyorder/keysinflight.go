package keyorder

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/cdc-relay/cdc-relay/decoder"
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

// slot is ev's counter plus 1, or 0 for an event without a key (never
// ordered).
func (k *keysInFlight) slot(ev *decoder.Event) int32 {
	if k == nil || ev.Key == nil {
		return 0
	}
	h := maphash.String(k.seed, ev.Topic)*31 ^ maphash.Bytes(k.seed, ev.Key)
	return int32(h&(keysInFlightSlots-1)) + 1
}

// add counts ev, at place p, into the producer.
func (k *keysInFlight) add(ev *decoder.Event, p *Place) {
	if p.slot = k.slot(ev); p.slot != 0 {
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

// busy reports whether a record of ev's key (or of a key sharing its
// counter) is in the producer.
func (k *keysInFlight) busy(ev *decoder.Event) bool {
	s := k.slot(ev)
	return s != 0 && k.counts[s-1].Load() != 0
}
