package keyorder

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/ratelog"
	"github.com/cdc-relay/cdc-relay/status"
)

// Order is what one session holds back so that a key's events reach Kafka
// in commit order: the held keys (a topic and record key with an event
// parked in the status table, or waiting to be produced alone) and the
// paused topics. The stream asks it about every event (Check); the
// deliveries hold a key the moment a record of it fails (BeginPark,
// HoldAlone); the poller's Delivered releases the keys whose held rows are
// gone (Release). A nil *Order holds nothing. Safe for concurrent use.
//
// Nothing held and no topic paused, Check is one atomic load; otherwise a
// map lookup under a mutex, without allocating (but to make a key held
// by its hash whole again).
type Order struct {
	byKey bool // ordering by key (or by topic): keys are held
	// byTopic: ordering by topic, every event of a topic ordered by one
	// key, topicKey (empty, not nil), whatever its record key: of every
	// topic, or, when topics is set, of those topics only (the others
	// by key).
	byTopic  bool
	topics   map[string]bool
	topicKey []byte
	any      atomic.Bool // a key is held (reloads too) or a topic is paused

	mu     sync.Mutex
	keys   map[string]map[string]*heldKey // topic → record key → its hold
	paused map[string]bool

	violations *ratelog.Logger
	// flight counts, by key, the records at-least-once delivery has in
	// the producer (nil unless byKey).
	flight *keysInFlight
	// drained, if set, is called when a drain ends (BeginDrain's end):
	// the alone queue's events of its key may go.
	drained func()
	// carried are the holds whose drain the last claim carried over to
	// the next one (heldKey.carry).
	carried []*heldKey
	// drains counts the holds' draining, so that MayGoAlone takes no
	// lock while nothing drains.
	drains atomic.Int32
	// reloads are the keys of the reload rows (adopted at the
	// switch-over, reset parked rows) held before the session, by
	// reloadHash of their topic and key: 8 bytes each plus the map's, so
	// that a switch-over of a million rows holds them in about 16 MiB. A
	// key in it is held; the first event of it that Check meets makes it
	// a held key like the others. Release drops it with the key's hold.
	reloads map[uint64]struct{}
	seed    maphash.Seed
	// entries counts the holds in keys; past maxEntries, a key that holds
	// nothing but its parked rows (spillLocked) is held by its hash only,
	// in spilled, with the spill's number (spills counts them), so that a
	// refusal or a pause over millions of keys holds about 24 bytes each
	// rather than a hold's 270: the first event of it that Check meets,
	// or a claim of it, makes it a held key again, and Release drops it,
	// as a reload row's. respill are the holds that were not idle when
	// they could have been spilled, tried again as parks end.
	entries    int
	maxEntries int
	// drainEvents and drainBytes bound a draining key's events that wait
	// (drainCap and drainCapBytes, or SetDrainCap's).
	drainEvents, drainBytes int
	spilled                 map[uint64]uint64
	spills                  uint64
	spillLogged             bool
	respill                 []*heldKey
	log                     *slog.Logger
}

// maxHeldEntries is the number of holds kept whole (about 270 bytes each)
// before the keys held past it are held by their hash only (about 24
// bytes): about 17 MiB of holds, then 24 MiB per million keys.
const maxHeldEntries = 1 << 16

// respillTries is how many of respill each park's end tries again.
const respillTries = 4

// drainCap and drainCapBytes bound the events of a draining key that
// wait in memory for the drain's end (their count, and their bytes as
// Event.Size counts them): past either, the alone queue parks those
// queued behind the key's rows, in order, so that a key whose claim is
// slow (a slow broker, outcomes waiting for a lock) holds no more of the
// in-flight limits.
const (
	drainCap      = 1024
	drainCapBytes = 8 << 20
)

// Place is one event's place in the stream as the order sees it; the
// delivery keeps it with the event (embedded in its in-flight record),
// so that asking about the event allocates nothing.
type Place struct {
	// Seq is the event's place in the session's stream, from 1.
	Seq uint64
	// Alone: the event is produced again in a batch of its own, behind
	// its key's records waiting there (Check's Alone, or a failure of
	// its batch).
	Alone bool
	// slot is its key's counter in keysInFlight, plus 1, while the
	// producer holds it; 0 when not counted.
	slot int32
}

// Store says which of the keys still have held rows in the status table
// (*status.Store).
type Store interface {
	StillHeld(ctx context.Context, keys []status.Key) ([]status.Key, error)
}

// EventKey names one copy of an event across sessions: the commit LSN of
// its transaction, its id and its topic, as the status table does.
type EventKey struct {
	commit    uint64
	id, topic string
}

// KeyOf returns the name of ev across sessions.
func KeyOf(ev *decoder.Event) EventKey {
	return EventKey{ev.CommitLSN, string(ev.ID), ev.Topic}
}

// Commit is the commit LSN of the transaction of the event k names.
func (k EventKey) Commit() uint64 { return k.commit }

// heldKey is the hold on one topic and record key.
type heldKey struct {
	topic, key string // what it holds
	// since is the stream sequence of the event that held it (0: held
	// before the session started), and head its id, for the reason of
	// the WAITING rows behind it.
	since uint64
	head  string
	// placedOn is 1 plus the partition the table's partition column
	// placed the event that held it on (decoder.Event.Placed); 0 when it
	// was not placed, or is not known (held before the session started).
	placedOn int64
	// parked: the key has held rows in the status table (or parks of it
	// are under way). alone counts its records waiting to be produced
	// alone (atLeastOnce).
	parked bool
	alone  int
	// aloneBytes is the size of the events alone counts (Event.Size).
	aloneBytes int
	// gen counts the parks begun, parking those under way, last is the
	// last begun: the next park of the key waits for it to commit.
	gen     uint64
	parking int
	last    *turn
	// draining counts the poller's claims delivering the key's held
	// rows now (BeginDrain), and a drain carried over to the next claim:
	// its new events wait in the alone queue for the drain's end instead
	// of being parked behind the rows.
	draining int
	// carry: the claim draining the key delivered its rows, but the key
	// still has held rows (parks that were being stored when the claim
	// began, rows past its limit): its drain goes on to the next claim,
	// rather than its waiting events being parked behind them, which
	// would leave parks under way at every claim. carried: the drain
	// waits for the next claim, which takes it over if it claims the
	// key, and else ends it.
	carry, carried bool
	// deferred, in exactly-once delivery, holds the key only once the
	// stream meets the event its held row is (parkedAt): a Kafka
	// transaction that aborted parked it, and the redo produces the
	// events of its key before it as usual.
	deferred bool
	parkedAt EventKey
}

// addAlone counts ev in (n 1) or out (n -1) of the events of h waiting
// alone.
func (h *heldKey) addAlone(ev *decoder.Event, n int) {
	h.alone += n
	h.aloneBytes += n * ev.Size()
}

// turn is one park of a key: done is closed once it committed its row
// (ok) or gave up; queued once it is queued where a batch stores it in
// order (inQueue, set before), or else with done.
type turn struct {
	done    chan struct{}
	ok      bool
	queued  chan struct{}
	inQueue bool
}

// Verdict is what the stream does with an event.
type Verdict uint8

// The verdicts of Check.
const (
	Pass    Verdict = iota // produce it
	Paused                 // park it PAUSED: its topic is paused
	Waiting                // park it WAITING: its key is held
	Alone                  // produce it alone, behind its key's record waiting there
)

// New returns an Order that holds keys if byKey (ordering by key), and
// paused topics either way; violations are logged on log.
func New(byKey bool, log *slog.Logger) *Order {
	o := &Order{byKey: byKey, keys: map[string]map[string]*heldKey{}, paused: map[string]bool{}, seed: maphash.MakeSeed(),
		maxEntries: maxHeldEntries, log: log, drainEvents: drainCap, drainBytes: drainCapBytes,
		violations: ratelog.New(log, ratelog.Config{Every: time.Minute,
			Summary: "more records were acked while an earlier event of their key was parked", KeyAttr: "key", CountAttr: "records"})}
	if byKey {
		o.flight = newKeysInFlight()
	}
	return o
}

// NewByTopic returns an Order that holds topics: each event of a topic,
// with a record key or without, is ordered behind the topic's earlier
// events as a key's are, by the key OrderKey gives it (the empty key, the
// same for all); paused topics are held too; violations are logged on
// log.
func NewByTopic(log *slog.Logger) *Order {
	o := New(true, log)
	o.byTopic, o.topicKey = true, []byte{}
	return o
}

// NewByTopics returns an Order that holds the events of topics by topic,
// as NewByTopic does, and those of every other topic by key, as New(true)
// does (a config file's tables with ordering: topic beside tables
// ordered by key). With no topics it orders every topic by key.
func NewByTopics(log *slog.Logger, topics []string) *Order {
	o := New(true, log)
	if len(topics) == 0 {
		return o
	}
	o.byTopic, o.topicKey, o.topics = true, []byte{}, make(map[string]bool, len(topics))
	for _, t := range topics {
		o.topics[t] = true
	}
	return o
}

// OrderKey returns the key ev is ordered by: its record key (nil: an event
// without one is not ordered), or, when its topic is ordered by topic
// (NewByTopic, NewByTopics), the empty key that every event of its topic
// shares. It allocates nothing.
func (o *Order) OrderKey(ev *decoder.Event) []byte {
	if o != nil && o.topicOrdered(ev.Topic) {
		return o.topicKey
	}
	return ev.Key
}

// topicOrdered reports whether o orders the events of topic by topic.
func (o *Order) topicOrdered(topic string) bool {
	return o.byTopic && (o.topics == nil || o.topics[topic])
}

// norm is k as o holds it: of a topic ordered by topic, with the empty
// key.
func (o *Order) norm(k status.Key) status.Key {
	if o.topicOrdered(k.Topic) {
		k.Key = ""
	}
	return k
}

// Rebuild holds, before the stream starts, the keys that have held rows
// and the paused topics; a key in deferred is held only from its parked
// event on (exactly-once's redo).
func (o *Order) Rebuild(held []status.Key, paused []string, deferred map[status.Key]EventKey) {
	_ = o.RebuildFrom(func(f func(status.Key)) error {
		for _, k := range held {
			f(k)
		}
		return nil
	}, paused, deferred)
}

// RebuildFrom is Rebuild with the held keys read from each, which calls
// its argument once per key (status.Store.EachHeldKey), so that they are
// never all in memory at once: past maxHeldEntries, each is held by its
// hash only (about 24 bytes). It returns each's error.
func (o *Order) RebuildFrom(each func(func(status.Key)) error, paused []string, deferred map[status.Key]EventKey) error {
	if o.byKey {
		err := each(func(k status.Key) {
			o.mu.Lock()
			defer o.mu.Unlock()
			k = o.norm(k)
			at, isDeferred := deferred[k]
			if o.entries >= o.maxEntries && !isDeferred {
				o.spillKeyLocked(k.Topic, k.Key)
				return
			}
			h := o.entryLocked(k.Topic, k.Key, 0, "")
			h.parked = true
			h.parkedAt, h.deferred = at, isDeferred
		})
		if err != nil {
			return err
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.setPausedLocked(paused)
	return nil
}

// HoldReload holds, before the stream starts, the key of a reload row
// (status.Store.ReloadKeys: a row adopted at the switch-over, a reset
// parked row) on topic: no later event of it passes Check until the
// poller delivered the row and Release found none of the key's rows held.
// It keeps only the key's hash (reloadHash), not key, which it does not
// retain.
func (o *Order) HoldReload(topic string, key []byte) {
	if o == nil || !o.byKey {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.reloads == nil {
		o.reloads = map[uint64]struct{}{}
	}
	if o.topicOrdered(topic) {
		key = o.topicKey
	}
	o.reloads[o.reloadHash(topic, key)] = struct{}{}
	o.any.Store(true)
}

// reloadHash is the hash of a topic and record key in reloads and
// spilled. Two keys with one hash (one chance in 2^64 per pair: about one
// in 30 million with a million keys held) hold each other, and the
// release of one drops the other's hash: its later events would no
// longer wait for its held rows. The chance is accepted for the memory.
func (o *Order) reloadHash(topic string, key []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(o.seed)
	h.WriteString(topic)
	h.WriteByte(0)
	h.Write(key)
	return h.Sum64()
}

// reloadHeldLocked reports whether ev's key is held by its hash only (a
// reload row's, or a spilled hold) and not as a held key yet: it is held
// from now on as a parked key.
func (o *Order) reloadHeldLocked(ev *decoder.Event) *heldKey {
	if len(o.reloads) == 0 && len(o.spilled) == 0 {
		return nil
	}
	key := o.OrderKey(ev)
	if !o.hashHeldLocked(ev.Topic, key) {
		return nil
	}
	return o.entryLocked(ev.Topic, string(key), 0, "") // parked: hashHeldLocked
}

// hashHeldLocked reports whether topic and key are held by their hash (a
// reload row's, a spilled hold).
func (o *Order) hashHeldLocked(topic string, key []byte) bool {
	if len(o.reloads) == 0 && len(o.spilled) == 0 {
		return false
	}
	hash := o.reloadHash(topic, key)
	if _, ok := o.reloads[hash]; ok {
		return true
	}
	_, ok := o.spilled[hash]
	return ok
}

// dropReloadLocked drops k's hash (a reload row's, a spilled hold): none
// of its rows is held.
func (o *Order) dropReloadLocked(k status.Key) {
	if len(o.reloads) > 0 || len(o.spilled) > 0 {
		hash := o.reloadHash(k.Topic, []byte(k.Key))
		delete(o.reloads, hash)
		delete(o.spilled, hash)
		if len(o.spilled) == 0 {
			o.spilled = nil // a drained backlog's table is let go
		}
		o.any.Store(o.anyLocked())
	}
}

// spillLocked holds h's key by its hash only, past maxEntries holds,
// if h holds nothing but its parked rows: no park, record alone or in the
// producer, drain or redo of it under way, and its last park committed
// its row. A hold that is not idle yet is kept in respill, to be tried
// again (respillLocked). Call it where a hold may have become idle.
func (o *Order) spillLocked(h *heldKey) {
	if o.entries <= o.maxEntries || o.keys[h.topic][h.key] != h || !h.parked || h.deferred {
		return
	}
	if h.parking > 0 || h.last != nil || h.alone > 0 || h.draining > 0 || h.carry || h.carried || o.flight.busy(h.topic, []byte(h.key)) {
		if len(o.respill) < o.maxEntries {
			o.respill = append(o.respill, h)
		}
		return
	}
	o.spillKeyLocked(h.topic, h.key) // first: Check's lock-free look never sees the key unheld
	o.deleteLocked(h.topic, h.key)
}

// respillLocked tries again the first respillTries holds of respill that
// were not idle when they could have been spilled (each goes back to the
// end if it still is not).
func (o *Order) respillLocked() {
	for i := 0; i < respillTries && len(o.respill) > 0 && o.entries > o.maxEntries; i++ {
		h := o.respill[0]
		o.respill[0] = nil
		o.respill = o.respill[1:]
		o.spillLocked(h)
	}
	if len(o.respill) == 0 {
		o.respill = nil // let go of the array
	}
}

// spillKeyLocked holds topic and key by their hash only (spilled).
func (o *Order) spillKeyLocked(topic, key string) {
	if o.spilled == nil {
		o.spilled = map[uint64]uint64{}
	}
	if !o.spillLogged && o.log != nil {
		o.spillLogged = true
		o.log.Info("holding the keys parked past the first ones by their hash only, to bound the memory they take",
			"kept_whole", o.maxEntries, "bytes_per_key_past_them", 24)
	}
	o.spills++
	o.spilled[o.reloadHash(topic, []byte(key))] = o.spills
	o.any.Store(true)
}

// spillOfLocked is the number of k's spill, 0 if it is not spilled.
func (o *Order) spillOfLocked(k status.Key) uint64 {
	if len(o.spilled) == 0 {
		return 0
	}
	return o.spilled[o.reloadHash(k.Topic, []byte(k.Key))]
}

// OrdersKeys reports whether o holds keys (ordering by key).
func (o *Order) OrdersKeys() bool { return o != nil && o.byKey }

// Holding reports whether a key is held (a reload row's too) or a topic
// paused.
func (o *Order) Holding() bool { return o != nil && o.any.Load() }

// Check tells the stream what to do with ev, whose stream sequence is seq:
// Alone when records of its key wait to be produced alone or are
// still in the producer, where they may yet fail (ev goes after them, in
// stream order; counted in the hold), else Paused when its topic is
// paused, Waiting when its key is held (head is the id of the event
// it waits for, "" if it was parked before the session), Pass otherwise.
func (o *Order) Check(ev *decoder.Event, seq uint64) (v Verdict, head string) {
	if !o.Holding() {
		return Pass, ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	paused := o.paused[ev.Topic]
	key := o.OrderKey(ev)
	if !o.byKey || key == nil {
		if paused {
			return Paused, ""
		}
		return Pass, ""
	}
	h := o.keys[ev.Topic][string(key)]
	if h != nil && h.deferred {
		h = nil
	}
	if h == nil {
		h = o.reloadHeldLocked(ev)
	}
	busy := o.flight.busy(ev.Topic, key)
	switch {
	case h != nil && h.alone > 0, h != nil && busy:
		h.addAlone(ev, 1)
		return Alone, ""
	case paused && busy:
		// Its key's earlier records are in the producer: parked PAUSED
		// now, it would go before one of them that fails.
		o.heldByLocked(ev, key, seq).addAlone(ev, 1)
		return Alone, ""
	case paused:
		return Paused, ""
	case h != nil && h.parked && h.draining > 0:
		// The poller is delivering the key's held rows: ev waits for
		// that claim's end in the alone queue, in memory, and goes
		// after them if they were the key's last (Release), else is
		// parked behind what is left.
		h.addAlone(ev, 1)
		return Alone, ""
	case h != nil && h.parked:
		return Waiting, h.head
	}
	return Pass, ""
}

// IntoProducer counts ev, at place p, which at-least-once delivery hands
// the producer, as its key's record in flight there.
func (o *Order) IntoProducer(ev *decoder.Event, p *Place) {
	if o != nil && o.flight != nil {
		o.flight.add(ev.Topic, o.OrderKey(ev), p)
	}
}

// OutOfProducer counts the event at p out again, once its callback held
// its key if it failed, and reports whether no record of its key is left
// in the producer now (MayGoAlone turned true for it).
func (o *Order) OutOfProducer(p *Place) (idle bool) {
	return o != nil && o.flight != nil && o.flight.done(p)
}

// MayGoAlone reports whether ev, the earliest event in the alone queue,
// may be produced or parked: no earlier record of its key is left in the
// producer, where it could still fail and join the queue ahead of it,
// and no claim of the poller is delivering its key's held rows
// (BeginDrain), which it must follow.
func (o *Order) MayGoAlone(ev *decoder.Event) bool {
	return o == nil || o.flight == nil || !o.flight.busy(ev.Topic, o.OrderKey(ev)) && !o.draining(ev)
}

// draining reports whether a claim of the poller is delivering the held
// rows of ev's key, and fewer than the drain's caps (SetDrainCap) of its
// events wait.
func (o *Order) draining(ev *decoder.Event) bool {
	key := o.OrderKey(ev)
	if key == nil || o.drains.Load() == 0 {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[ev.Topic][string(key)]
	return h != nil && h.draining > 0 && h.alone < o.drainEvents && h.aloneBytes < o.drainBytes
}

// SetDrainCap sets how many events, and bytes of them, of a key the
// poller drains may wait in memory for the drain's end (1,024 and 8 MiB
// by default); past either, those behind the key's rows are parked, in
// order. A publisher whose drains take as long as its receiver's answers
// (a webhook) sets 0, 0: its events behind a drain are parked at once, so
// that a slow drain holds none of the in-flight limits the other
// publishers share. It is called before the order is used.
func (o *Order) SetDrainCap(events, bytes int) {
	o.drainEvents, o.drainBytes = events, bytes
}

// OnDrained makes f, which must not block, what the end of a drain
// calls (BeginDrain): the alone queue's wake (at-least-once delivery).
func (o *Order) OnDrained(f func()) {
	if o != nil {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.drained = f
	}
}

// BeginDrain tells o that a claim of the poller is about to deliver held
// rows of keys, and returns what ends it, to call once the claim's
// outcomes are committed and Release was asked about its delivered
// keys; end reports whether it carried a drain over to the next claim,
// which should then come at once. Meanwhile the new events of those keys
// that are held as parked wait in the alone queue (Check's Alone) rather
// than being parked behind the rows. If the claim delivered the key's
// last held rows, Release makes the key no longer parked and they go to
// Kafka after the rows, so that a key whose backlog a claim takes whole
// returns to the stream however fast its events arrive (within the
// drain's caps: SetDrainCap). If it delivered
// the key's rows but others are left (parks under way when it began,
// rows past its limit), the drain goes on to the next claim (carried),
// which takes it over if it claims the key; else (the key's rows were
// not delivered, or the next claim does not claim it) the drain ends and
// they are parked behind what is left, in order. A drain carried over
// that the claim does not take over ends as the claim begins. Only
// at-least-once delivery has the alone queue: call it only there. Claims
// come one at a time.
func (o *Order) BeginDrain(keys []status.Key) (end func() (carried bool)) {
	if o == nil || !o.byKey {
		return func() bool { return false }
	}
	o.mu.Lock()
	var holds []*heldKey
	for _, k := range keys {
		k = o.norm(k)
		h := o.keys[k.Topic][k.Key]
		if h == nil && o.spillOfLocked(k) != 0 {
			h = o.entryLocked(k.Topic, k.Key, 0, "") // parked, and its new events wait for the drain too
		}
		switch {
		case h == nil || !h.parked:
			continue
		case h.carried:
			h.carried = false // taken over: its drain goes on
		default:
			h.draining++
			o.drains.Add(1)
		}
		holds = append(holds, h)
	}
	var left []*heldKey // carried, not taken over: their drains end
	for _, h := range o.carried {
		if h.carried {
			h.carried = false
			h.draining--
			o.drains.Add(-1)
			left = append(left, h)
			o.spillLocked(h)
		}
	}
	o.carried = nil
	o.mu.Unlock()
	if len(left) > 0 {
		o.wakeAlone()
	}
	return func() bool { return o.endDrain(holds) }
}

// endDrain ends a claim's drain of holds, or carries it over to the next
// claim for a hold Release marked (carry), and wakes the alone queue. It
// reports whether it carried one over.
func (o *Order) endDrain(holds []*heldKey) (carried bool) {
	if len(holds) == 0 {
		return false
	}
	o.mu.Lock()
	for _, h := range holds {
		if h.carry {
			h.carry, h.carried = false, true
			o.carried = append(o.carried, h)
			carried = true
			continue
		}
		h.draining--
		o.drains.Add(-1)
		o.spillLocked(h) // a claim that did not deliver the key's rows
	}
	o.mu.Unlock()
	o.wakeAlone()
	return carried
}

// wakeAlone calls drained, outside o.mu.
func (o *Order) wakeAlone() {
	o.mu.Lock()
	drained := o.drained
	o.mu.Unlock()
	if drained != nil {
		drained()
	}
}

// MetParked tells o that the stream met ev again, an event a Kafka
// transaction that aborted parked (it, seq): its key is held from now on.
func (o *Order) MetParked(ev *decoder.Event, it EventKey, seq uint64) {
	key := o.OrderKey(ev)
	if o == nil || !o.byKey || key == nil || !o.any.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if h := o.keys[ev.Topic][string(key)]; h != nil && h.deferred && h.parkedAt == it {
		h.deferred, h.since, h.head = false, seq, string(ev.ID)
	}
}

// Turn is one park's place in its key's order.
type Turn struct {
	h          *heldKey
	prev, mine *turn
}

// BeginPark holds ev's key as parked, at once, and takes the park's Turn
// after the key's earlier parks; nil for an event that is not ordered
// (no key, or keys not held). seq is ev's stream sequence. A paused
// topic's events (paused) take turns even when keys are not held, so
// that a resume delivers them in commit order; the key is held only
// while they are parked.
func (o *Order) BeginPark(ev *decoder.Event, seq uint64, paused bool) *Turn {
	key := o.OrderKey(ev)
	if o == nil || !o.byKey && !paused || key == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.heldByLocked(ev, key, seq)
	h.parked, h.deferred = true, false
	h.gen++
	h.parking++
	t := &Turn{h: h, prev: h.last, mine: &turn{done: make(chan struct{}), queued: make(chan struct{})}}
	h.last = t.mine
	return t
}

// Wait waits for the key's previous park, and reports whether it
// committed its row: if it gave up, so must this one, or its row would
// precede the earlier event's.
func (t *Turn) Wait() bool {
	if t == nil || t.prev == nil {
		return true
	}
	<-t.prev.done
	return t.prev.ok
}

// Queued tells t's key that t's row is queued, in the key's order,
// where batches store rows in the order queued and store none after one
// that failed: the key's next park may queue behind it (WaitQueued).
// Call it at most once, before EndPark, from the park's goroutine.
func (t *Turn) Queued() {
	if t == nil {
		return
	}
	t.mine.inQueue = true
	close(t.mine.queued)
}

// WaitQueued waits until the key's previous park is queued (Queued) or
// has ended, and reports whether this one may go on: true once it is
// queued, else whether it committed its row (as Wait).
func (t *Turn) WaitQueued() bool {
	if t == nil || t.prev == nil {
		return true
	}
	<-t.prev.queued
	return t.prev.inQueue || t.prev.ok
}

// EndPark ends the park t, which committed its row if ok.
func (o *Order) EndPark(t *Turn, ok bool) {
	if t == nil {
		return
	}
	t.mine.ok = ok
	close(t.mine.done)
	if !t.mine.inQueue {
		close(t.mine.queued)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	t.h.parking--
	if ok && t.h.last == t.mine {
		t.h.last = nil // the next park need not wait: this one committed its row
	}
	if !o.byKey {
		// Only turns: a key is not held when keys are not.
		if h := o.keys[t.h.topic][t.h.key]; h == t.h && t.h.parking == 0 {
			o.deleteLocked(t.h.topic, t.h.key)
		}
		return
	}
	o.spillLocked(t.h)
	o.respillLocked()
}

// HoldAlone holds ev's key while ev waits to be produced alone.
func (o *Order) HoldAlone(ev *decoder.Event, seq uint64) {
	key := o.OrderKey(ev)
	if o == nil || !o.byKey || key == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.heldByLocked(ev, key, seq).addAlone(ev, 1)
}

// DoneAlone undoes HoldAlone once ev's outcome is known (and held, if it
// failed).
func (o *Order) DoneAlone(ev *decoder.Event) {
	key := o.OrderKey(ev)
	if o == nil || !o.byKey || key == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if h := o.keys[ev.Topic][string(key)]; h != nil {
		h.addAlone(ev, -1)
		if !h.parked && h.alone <= 0 && h.parking == 0 {
			o.deleteLocked(ev.Topic, string(key))
		} else if h.alone <= 0 {
			o.spillLocked(h)
		}
	}
}

// AloneHeld reports whether a record of ev's key waits to be produced
// alone.
func (o *Order) AloneHeld(ev *decoder.Event) bool {
	key := o.OrderKey(ev)
	if o == nil || !o.byKey || key == nil || !o.any.Load() {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[ev.Topic][string(key)]
	return h != nil && h.alone > 0
}

// ParkedHeld reports whether ev's key has held rows: ev, waiting to be
// produced alone, is parked behind them instead.
func (o *Order) ParkedHeld(ev *decoder.Event) (bool, string) {
	key := o.OrderKey(ev)
	if o == nil || !o.byKey || key == nil || !o.any.Load() {
		return false, ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[ev.Topic][string(key)]
	if h == nil || !h.parked || h.deferred {
		return false, ""
	}
	return true, h.head
}

// Overtook reports whether Kafka acked ev, at place p, while its key was
// held by an earlier event: a break of the key's order (see DESIGN.md).
// An event its table's partition column placed on another partition than
// the event that held the key (both decoder.Event.Placed) did not
// overtake it: Kafka keeps no order between partitions.
func (o *Order) Overtook(ev *decoder.Event, p *Place) bool {
	key := o.OrderKey(ev)
	if o == nil || !o.byKey || key == nil || !o.any.Load() {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[ev.Topic][string(key)]
	if h != nil && ev.Placed && h.placedOn != 0 && h.placedOn != int64(ev.Partition)+1 {
		return false
	}
	return h != nil && !h.deferred && h.since < p.Seq && (h.parked || h.alone > 0 && !p.Alone)
}

// FlushViolations logs the summaries of the violations LogViolation held
// back in the minutes that have passed; call it now and then, so that a
// burst that stopped is still reported.
func (o *Order) FlushViolations() { o.violations.Flush() }

// LogViolation logs that ev overtook an earlier parked event of its key
// (Overtook), at most once a minute per key, the others counted.
func (o *Order) LogViolation(ev *decoder.Event) {
	o.violations.Log(ev.Topic+"/"+string(ev.Key), slog.LevelError,
		"a record overtook an earlier parked event of its key: consumers see the key's events out of commit order",
		"topic", ev.Topic, "key", string(ev.Key), "id", string(ev.ID))
}

// Release drops the hold of the keys the poller delivered that have no
// held row left (store.StillHeld), unless a park of the key began or was
// under way since before the store was asked: its row may be newer than
// the answer. A key with records in the alone queue is no longer held as
// parked, and its hold ends once they are settled (DoneAlone): each of
// them is later in the stream than every held row of the key (the queue
// parks a key's records in stream order, and a key with one queued
// queues its next events behind it rather than parking them).
func (o *Order) Release(ctx context.Context, store Store, keys []status.Key) error {
	return o.release(ctx, store, keys, false)
}

// ReleaseDelivered is Release for the keys a claim of the poller
// delivered: a key it drains (BeginDrain) that keeps held rows has its
// drain carried over to the next claim.
func (o *Order) ReleaseDelivered(ctx context.Context, store Store, keys []status.Key) error {
	return o.release(ctx, store, keys, true)
}

func (o *Order) release(ctx context.Context, store Store, keys []status.Key, delivered bool) error {
	if o == nil || !o.byKey || len(keys) == 0 {
		return nil
	}
	if keys = o.heldOf(o.normAll(keys)); len(keys) == 0 {
		return nil
	}
	gens, spills := o.generations(keys)
	still, err := store.StillHeld(ctx, keys)
	if err != nil {
		return fmt.Errorf("ask which delivered keys still have held events: %w", err)
	}
	held := make(map[status.Key]bool, len(still))
	for _, k := range still {
		held[k] = true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, k := range keys {
		h := o.keys[k.Topic][k.Key]
		if h == nil {
			// Held by its hash only: dropped unless spilled again since.
			if n := o.spillOfLocked(k); !held[k] && n != 0 && n == spills[i] {
				o.dropReloadLocked(k)
			}
			continue
		}
		if !held[k] && gens[i] == h.gen && h.parking == 0 {
			o.dropReloadLocked(k)
		}
		if held[k] || gens[i] != h.gen || h.parking != 0 {
			// Delivered, with rows left: a claim draining it carries
			// the drain over to the next claim.
			if delivered {
				h.carry = h.draining > 0
			}
			o.spillLocked(h)
			continue
		}
		h.carry = false
		if h.alone > 0 {
			h.parked = false
		} else {
			o.deleteLocked(k.Topic, k.Key)
		}
	}
	return nil
}

// HoldRow holds k as parked, as a held row of it now is (or is about to
// be) in the status table that the relay did not park itself: a row whose
// topic was corrected, or one the poller claims. It returns what undoes
// the hold if the row is not there after all (its change did not commit);
// the undo does nothing once the key was held otherwise. Keys that are
// not held (keys not ordered) hold nothing.
func (o *Order) HoldRow(k status.Key) (undo func()) {
	if o == nil || !o.byKey {
		return func() {}
	}
	k = o.norm(k)
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[k.Topic][k.Key]
	if h != nil && h.parked || h == nil && o.hashHeldLocked(k.Topic, []byte(k.Key)) {
		// Held already (by its hash too); a deferred key (exactly-once's
		// redo) is held from its parked event on, and its earlier events
		// go before it.
		return func() {}
	}
	h = o.entryLocked(k.Topic, k.Key, 0, "")
	h.parked = true
	h.gen++
	gen := h.gen
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.keys[k.Topic][k.Key] != h || h.gen != gen || h.parking > 0 {
			return // held again since
		}
		h.parked = false
		if h.alone <= 0 {
			o.deleteLocked(k.Topic, k.Key)
		}
	}
}

// HoldRows holds each of keys that is not held (holdRow), and returns
// those it held.
func (o *Order) HoldRows(keys []status.Key) []status.Key {
	if o == nil || !o.byKey {
		return nil
	}
	var held []status.Key
	for _, k := range keys {
		if !o.rowHeld(k) {
			o.HoldRow(k)
			held = append(held, k)
		}
	}
	return held
}

// rowHeld reports whether k is held as parked (a deferred key too).
func (o *Order) rowHeld(k status.Key) bool {
	k = o.norm(k)
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[k.Topic][k.Key]
	return h != nil && h.parked || o.reloadHeldKeyLocked(k)
}

// reloadHeldKeyLocked reports whether k is held by its hash (HoldReload,
// a spilled hold) and not as a held key yet.
func (o *Order) reloadHeldKeyLocked(k status.Key) bool {
	return o.hashHeldLocked(k.Topic, []byte(k.Key))
}

// heldOf returns those of keys that o holds as held keys, or by a spilled
// hold's hash: a key held only by a reload row's hash is not asked about
// (the poller delivers a switch-over's backlog a claim at a time, a
// thousand keys each): its hash stays until an event of it meets Check,
// which holds it as a key, parks the event WAITING, and the delivery of
// that row releases both.
func (o *Order) heldOf(keys []status.Key) []status.Key {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := keys[:0:0]
	for _, k := range keys {
		if o.keys[k.Topic][k.Key] != nil || o.spillOfLocked(k) != 0 {
			out = append(out, k)
		}
	}
	return out
}

// normAll is keys as o holds them (norm), a copy when it changes any.
func (o *Order) normAll(keys []status.Key) []status.Key {
	if !o.byTopic {
		return keys
	}
	out := make([]status.Key, len(keys))
	for i, k := range keys {
		out[i] = o.norm(k)
	}
	return out
}

// generations returns the park generation of each key, or one no hold has
// while a park of the key is under way (or it is not held), and the
// number of the spill of each key held by its hash only (0 for the
// others).
func (o *Order) generations(keys []status.Key) (gens, spills []uint64) {
	gens, spills = make([]uint64, len(keys)), make([]uint64, len(keys))
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, k := range keys {
		gens[i] = ^uint64(0)
		switch h := o.keys[k.Topic][k.Key]; {
		case h != nil && h.parking == 0:
			gens[i] = h.gen
		case h == nil:
			spills[i] = o.spillOfLocked(k)
		}
	}
	return gens, spills
}

// PauseTopic pauses topic at once: Check parks its events PAUSED from the
// next one on.
func (o *Order) PauseTopic(topic string) { o.changePaused(func() { o.paused[topic] = true }) }

// ResumeTopic resumes topic at once: Check no longer parks its events for
// the pause (a key still held behind a parked event still waits).
func (o *Order) ResumeTopic(topic string) { o.changePaused(func() { delete(o.paused, topic) }) }

// SetPaused replaces the paused topics with topics, what the pause table
// says.
func (o *Order) SetPaused(topics []string) { o.changePaused(func() { o.setPausedLocked(topics) }) }

func (o *Order) changePaused(f func()) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	f()
	o.any.Store(o.anyLocked())
}

func (o *Order) setPausedLocked(topics []string) {
	clear(o.paused)
	for _, t := range topics {
		o.paused[t] = true
	}
	o.any.Store(o.anyLocked())
}

// TopicPaused reports whether topic is paused.
func (o *Order) TopicPaused(topic string) bool {
	if !o.Holding() {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.paused[topic]
}

// PausedTopics returns the paused topics, in no order.
func (o *Order) PausedTopics() []string {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	topics := make([]string, 0, len(o.paused))
	for t := range o.paused {
		topics = append(topics, t)
	}
	return topics
}

// entryLocked returns the hold of topic and key, made (first held by the
// event seq, id) if it has none.
func (o *Order) entryLocked(topic, key string, seq uint64, id string) *heldKey {
	byKey := o.keys[topic]
	if byKey == nil {
		byKey = map[string]*heldKey{}
		o.keys[topic] = byKey
	}
	h := byKey[key]
	if h == nil {
		// A key held by its hash has held rows: its hold is parked.
		h = &heldKey{topic: topic, key: key, since: seq, head: id, parked: o.hashHeldLocked(topic, []byte(key))}
		byKey[key] = h
		o.entries++
		o.any.Store(true)
	}
	return h
}

// heldByLocked is entryLocked for ev, the event seq of order key key:
// a hold it makes keeps the partition ev was placed on (placedOn).
func (o *Order) heldByLocked(ev *decoder.Event, key []byte, seq uint64) *heldKey {
	h := o.entryLocked(ev.Topic, string(key), seq, string(ev.ID))
	if h.since == seq && seq != 0 && ev.Placed && h.placedOn == 0 {
		h.placedOn = int64(ev.Partition) + 1
	}
	return h
}

// anyLocked reports whether a key is held or a topic paused.
func (o *Order) anyLocked() bool {
	return len(o.keys) > 0 || len(o.paused) > 0 || len(o.reloads) > 0 || len(o.spilled) > 0
}

func (o *Order) deleteLocked(topic, key string) {
	if _, ok := o.keys[topic][key]; ok {
		o.entries--
	}
	delete(o.keys[topic], key)
	if len(o.keys[topic]) == 0 {
		delete(o.keys, topic)
	}
	o.any.Store(o.anyLocked())
}
