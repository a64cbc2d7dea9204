package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/ratelog"
	"github.com/cdc-relay/cdc-relay/status"
)

// order is what one session holds back so that a key's events reach Kafka
// in commit order: the held keys (a topic and record key with an event
// parked in the status table, or waiting to be produced alone) and the
// paused topics. The stream asks it about every event (check); the
// deliveries hold a key the moment a record of it fails (beginPark,
// holdAlone); the poller's Delivered releases the keys whose held rows are
// gone (release). A nil *order holds nothing.
//
// Nothing held and no topic paused, check is one atomic load; otherwise a
// map lookup under a mutex, without allocating.
type order struct {
	byKey bool        // Config.Ordering is OrderingKey: keys are held
	any   atomic.Bool // a key is held or a topic is paused

	mu     sync.Mutex
	keys   map[string]map[string]*heldKey // topic → record key → its hold
	paused map[string]bool

	violations *ratelog.Logger
	// flight counts, by key, the records at-least-once delivery has in
	// the producer (nil unless byKey).
	flight *keysInFlight
}

// heldKey is the hold on one topic and record key.
type heldKey struct {
	topic, key string // what it holds
	// since is the stream sequence of the event that held it (0: held
	// before the session started), and head its id, for the reason of
	// the WAITING rows behind it.
	since uint64
	head  string
	// parked: the key has held rows in the status table (or parks of it
	// are under way). alone counts its records waiting to be produced
	// alone (atLeastOnce).
	parked bool
	alone  int
	// gen counts the parks begun, parking those under way, last is the
	// last begun: the next park of the key waits for it to commit.
	gen     uint64
	parking int
	last    *turn
	// deferred, in exactly-once delivery, holds the key only once the
	// stream meets the event its held row is (parkedAt): a Kafka
	// transaction that aborted parked it, and the redo produces the
	// events of its key before it as usual.
	deferred bool
	parkedAt eventKey
}

// turn is one park of a key: done is closed once it committed its row
// (ok) or gave up.
type turn struct {
	done chan struct{}
	ok   bool
}

// verdict is what the stream does with an event.
type verdict uint8

const (
	pass        verdict = iota // produce it
	holdPaused                 // park it PAUSED: its topic is paused
	holdWaiting                // park it WAITING: its key is held
	holdAlone                  // produce it alone, behind its key's record waiting there
)

// newOrder returns an order that holds keys if byKey, and paused topics
// either way; violations are logged on log.
func newOrder(byKey bool, log *slog.Logger) *order {
	o := &order{byKey: byKey, keys: map[string]map[string]*heldKey{}, paused: map[string]bool{},
		violations: ratelog.New(log, ratelog.Config{Every: time.Minute,
			Summary: "more records were acked while an earlier event of their key was parked", KeyAttr: "key", CountAttr: "records"})}
	if byKey {
		o.flight = newKeysInFlight()
	}
	return o
}

// rebuild holds, before the stream starts, the keys that have held rows
// and the paused topics; a key in deferred is held only from its parked
// event on (exactly-once's redo).
func (o *order) rebuild(held []status.Key, paused []string, deferred map[status.Key]eventKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byKey {
		for _, k := range held {
			h := o.entryLocked(k.Topic, k.Key, 0, "")
			h.parked = true
			h.parkedAt, h.deferred = deferred[k]
		}
	}
	o.setPausedLocked(paused)
}

// ordersKeys reports whether o holds keys (Config.Ordering is key).
func (o *order) ordersKeys() bool { return o != nil && o.byKey }

// holding reports whether a key is held or a topic paused.
func (o *order) holding() bool { return o != nil && o.any.Load() }

// check tells the stream what to do with ev, whose stream sequence is seq:
// holdAlone when records of its key wait to be produced alone or are
// still in the producer, where they may yet fail (ev goes after them, in
// stream order; counted in the hold), else holdPaused when its topic is
// paused, holdWaiting when its key is held (head is the id of the event
// it waits for, "" if it was parked before the session), pass otherwise.
func (o *order) check(ev *decoder.Event, seq uint64) (v verdict, head string) {
	if !o.holding() {
		return pass, ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	paused := o.paused[ev.Topic]
	if !o.byKey || ev.Key == nil {
		if paused {
			return holdPaused, ""
		}
		return pass, ""
	}
	h := o.keys[ev.Topic][string(ev.Key)]
	if h != nil && h.deferred {
		h = nil
	}
	busy := o.flight.busy(ev)
	switch {
	case h != nil && h.alone > 0, h != nil && busy:
		h.alone++
		return holdAlone, ""
	case paused && busy:
		// Its key's earlier records are in the producer: parked PAUSED
		// now, it would go before one of them that fails.
		o.entryLocked(ev.Topic, string(ev.Key), seq, string(ev.ID)).alone++
		return holdAlone, ""
	case paused:
		return holdPaused, ""
	case h != nil && h.parked:
		return holdWaiting, h.head
	}
	return pass, ""
}

// intoProducer counts it, which at-least-once delivery hands the
// producer, as its key's record in flight there.
func (o *order) intoProducer(it *inflight) {
	if o != nil && o.flight != nil {
		o.flight.add(it)
	}
}

// outOfProducer counts it out again, once its callback held its key if it
// failed.
func (o *order) outOfProducer(it *inflight) {
	if o != nil && o.flight != nil {
		o.flight.done(it)
	}
}

// mayGoAlone reports whether it, the earliest event in the alone queue,
// may be produced or parked: no earlier record of its key is left in the
// producer, where it could still fail and join the queue ahead of it.
func (o *order) mayGoAlone(it *inflight) bool {
	return o == nil || o.flight == nil || !o.flight.busy(&it.ev)
}

// metParked tells o that the stream met ev again, an event a Kafka
// transaction that aborted parked (it, seq): its key is held from now on.
func (o *order) metParked(ev *decoder.Event, it eventKey, seq uint64) {
	if o == nil || !o.byKey || ev.Key == nil || !o.any.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if h := o.keys[ev.Topic][string(ev.Key)]; h != nil && h.deferred && h.parkedAt == it {
		h.deferred, h.since, h.head = false, seq, string(ev.ID)
	}
}

// parkTurn is one park's place in its key's order.
type parkTurn struct {
	h          *heldKey
	prev, mine *turn
}

// beginPark holds ev's key as parked, at once, and takes the park's turn
// after the key's earlier parks; nil for an event that is not ordered
// (no key, or keys not held). seq is ev's stream sequence. A paused
// topic's events (paused) take turns even when keys are not held, so
// that a resume delivers them in commit order; the key is held only
// while they are parked.
func (o *order) beginPark(ev *decoder.Event, seq uint64, paused bool) *parkTurn {
	if o == nil || !o.byKey && !paused || ev.Key == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.entryLocked(ev.Topic, string(ev.Key), seq, string(ev.ID))
	h.parked, h.deferred = true, false
	h.gen++
	h.parking++
	t := &parkTurn{h: h, prev: h.last, mine: &turn{done: make(chan struct{})}}
	h.last = t.mine
	return t
}

// waitTurn waits for the key's previous park, and reports whether it
// committed its row: if it gave up, so must this one, or its row would
// precede the earlier event's.
func (t *parkTurn) waitTurn() bool {
	if t == nil || t.prev == nil {
		return true
	}
	<-t.prev.done
	return t.prev.ok
}

// endPark ends the park t, which committed its row if ok.
func (o *order) endPark(t *parkTurn, ok bool) {
	if t == nil {
		return
	}
	t.mine.ok = ok
	close(t.mine.done)
	o.mu.Lock()
	defer o.mu.Unlock()
	t.h.parking--
	if !o.byKey && t.h.parking == 0 {
		// Only turns: a key is not held when keys are not.
		if h := o.keys[t.h.topic][t.h.key]; h == t.h {
			o.deleteLocked(t.h.topic, t.h.key)
		}
	}
}

// holdAlone holds ev's key while ev waits to be produced alone.
func (o *order) holdAlone(ev *decoder.Event, seq uint64) {
	if o == nil || !o.byKey || ev.Key == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.entryLocked(ev.Topic, string(ev.Key), seq, string(ev.ID)).alone++
}

// doneAlone undoes holdAlone once ev's outcome is known (and held, if it
// failed).
func (o *order) doneAlone(ev *decoder.Event) {
	if o == nil || !o.byKey || ev.Key == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if h := o.keys[ev.Topic][string(ev.Key)]; h != nil {
		h.alone--
		if !h.parked && h.alone <= 0 && h.parking == 0 {
			o.deleteLocked(ev.Topic, string(ev.Key))
		}
	}
}

// aloneHeld reports whether a record of ev's key waits to be produced
// alone.
func (o *order) aloneHeld(ev *decoder.Event) bool {
	if o == nil || !o.byKey || ev.Key == nil || !o.any.Load() {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[ev.Topic][string(ev.Key)]
	return h != nil && h.alone > 0
}

// parkedHeld reports whether ev's key has held rows: ev, waiting to be
// produced alone, is parked behind them instead.
func (o *order) parkedHeld(ev *decoder.Event) (bool, string) {
	if o == nil || !o.byKey || ev.Key == nil || !o.any.Load() {
		return false, ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[ev.Topic][string(ev.Key)]
	if h == nil || !h.parked || h.deferred {
		return false, ""
	}
	return true, h.head
}

// overtook reports whether Kafka acked it while its key was held by an
// earlier event: a break of the key's order (see DESIGN.md).
func (o *order) overtook(it *inflight) bool {
	if o == nil || !o.byKey || it.ev.Key == nil || !o.any.Load() {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[it.ev.Topic][string(it.ev.Key)]
	return h != nil && !h.deferred && h.since < it.seq && (h.parked || h.alone > 0 && !it.alone)
}

// release drops the hold of the keys the poller delivered that have no
// held row left (store.StillHeld), unless a park of the key began or was
// under way since before the store was asked: its row may be newer than
// the answer.
func (o *order) release(ctx context.Context, store heldStore, keys []status.Key) error {
	if o == nil || !o.byKey || len(keys) == 0 {
		return nil
	}
	gens := o.generations(keys)
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
		if h != nil && !held[k] && gens[i] == h.gen && h.parking == 0 && h.alone <= 0 {
			o.deleteLocked(k.Topic, k.Key)
		}
	}
	return nil
}

// holdRow holds k as parked, as a held row of it now is (or is about to
// be) in the status table that the relay did not park itself: a row whose
// topic was corrected, or one the poller claims. It returns what undoes
// the hold if the row is not there after all (its change did not commit);
// the undo does nothing once the key was held otherwise. Keys that are
// not held (keys not ordered) hold nothing.
func (o *order) holdRow(k status.Key) (undo func()) {
	if o == nil || !o.byKey {
		return func() {}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[k.Topic][k.Key]
	if h != nil && h.parked {
		// Held already; a deferred key (exactly-once's redo) is held from
		// its parked event on, and its earlier events go before it.
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

// holdRows holds each of keys that is not held (holdRow), and returns
// those it held.
func (o *order) holdRows(keys []status.Key) []status.Key {
	if o == nil || !o.byKey {
		return nil
	}
	var held []status.Key
	for _, k := range keys {
		if !o.rowHeld(k) {
			o.holdRow(k)
			held = append(held, k)
		}
	}
	return held
}

// rowHeld reports whether k is held as parked (a deferred key too).
func (o *order) rowHeld(k status.Key) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.keys[k.Topic][k.Key]
	return h != nil && h.parked
}

// generations returns the park generation of each key, or one no hold has
// while a park of the key is under way (or it is not held).
func (o *order) generations(keys []status.Key) []uint64 {
	gens := make([]uint64, len(keys))
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, k := range keys {
		gens[i] = ^uint64(0)
		if h := o.keys[k.Topic][k.Key]; h != nil && h.parking == 0 {
			gens[i] = h.gen
		}
	}
	return gens
}

// pauseTopic and resumeTopic change the paused topics at once; setPaused
// replaces them with what the pause table says.
func (o *order) pauseTopic(topic string) { o.changePaused(func() { o.paused[topic] = true }) }

func (o *order) resumeTopic(topic string) { o.changePaused(func() { delete(o.paused, topic) }) }

func (o *order) setPaused(topics []string) { o.changePaused(func() { o.setPausedLocked(topics) }) }

func (o *order) changePaused(f func()) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	f()
	o.any.Store(len(o.keys) > 0 || len(o.paused) > 0)
}

func (o *order) setPausedLocked(topics []string) {
	clear(o.paused)
	for _, t := range topics {
		o.paused[t] = true
	}
	o.any.Store(len(o.keys) > 0 || len(o.paused) > 0)
}

// topicPaused reports whether topic is paused.
func (o *order) topicPaused(topic string) bool {
	if !o.holding() {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.paused[topic]
}

// pausedTopics returns the paused topics, in no order.
func (o *order) pausedTopics() []string {
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
func (o *order) entryLocked(topic, key string, seq uint64, id string) *heldKey {
	byKey := o.keys[topic]
	if byKey == nil {
		byKey = map[string]*heldKey{}
		o.keys[topic] = byKey
	}
	h := byKey[key]
	if h == nil {
		h = &heldKey{topic: topic, key: key, since: seq, head: id}
		byKey[key] = h
		o.any.Store(true)
	}
	return h
}

func (o *order) deleteLocked(topic, key string) {
	delete(o.keys[topic], key)
	if len(o.keys[topic]) == 0 {
		delete(o.keys, topic)
	}
	o.any.Store(len(o.keys) > 0 || len(o.paused) > 0)
}

// waitReason is the reason of a WAITING row: what it waits for.
func waitReason(ev *decoder.Event, head string) error {
	if head == "" {
		return fmt.Errorf("waits for an earlier held event of its key on topic %s", ev.Topic)
	}
	return fmt.Errorf("waits for event %s of its key on topic %s", head, ev.Topic)
}

// errPaused is the reason given for a PAUSED event in the cause log.
var errPaused = errors.New("its topic is paused")
