package exactlyonce

import (
	"errors"
	"sync"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/status"
)

// Exactly-once delivery. The pipeline's records go into Kafka transactions,
// each holding one or more whole PostgreSQL transactions and, in the same
// transaction, a record of the slot's position in the checkpoint topic. A
// PostgreSQL transaction is held in the checkpoint tracker (Tracker.Hold)
// until the Kafka transaction that holds it committed, so PostgreSQL is
// never told a position Kafka has not committed; Kafka's acks of single
// records only free in-flight capacity. A session starts from the later of
// the slot's position and the checkpoint topic's, and skips what ends at or
// before the latter.
//
// Anything that keeps a Kafka transaction from committing ends the session
// without aborting it at the broker: the next session's producer, started
// after it retakes leadership, aborts it, and PostgreSQL sends the same
// transactions again. A record Kafka refused for itself is parked in the
// status table first and left out the next time (State); a record that
// failed with its batch is produced alone the next time, to learn whose
// fault it was.

// ErrRedo ends a session whose Kafka transaction could not commit: the next
// session produces the same PostgreSQL transactions again, at once.
var ErrRedo = errors.New("the Kafka transaction could not commit; producing its PostgreSQL transactions again")

// keyOf names one copy of an event across sessions (keyorder.KeyOf).
func keyOf(it *delivery.Inflight) keyorder.EventKey { return keyorder.KeyOf(&it.Event) }

// State is what exactly-once delivery learns across sessions of one Run:
// records parked after Kafka refused them (left out from now on) and
// records that failed with their batch (produced alone next time). Both
// stay small: a record enters each at most once. After a restart of the
// process they are learnt again, at the cost of one more aborted
// transaction each.
type State struct {
	mu       sync.Mutex
	parked   map[keyorder.EventKey]struct{}
	suspects map[keyorder.EventKey]struct{}
	// heldFrom is, for each key with a parked record, the first such
	// record: the redo holds the key from it on, not before (keyorder).
	heldFrom map[status.Key]keyorder.EventKey
}

// holdFrom notes that ev (k), parked, holds its key from it on, unless an
// earlier parked record does.
func (s *State) holdFrom(ev *decoder.Event, k keyorder.EventKey) {
	if ev.Key == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.heldFrom == nil {
		s.heldFrom = map[status.Key]keyorder.EventKey{}
	}
	key := status.Key{Topic: ev.Topic, Key: string(ev.Key)}
	if _, ok := s.heldFrom[key]; !ok {
		s.heldFrom[key] = k
	}
}

// passed forgets the holds of records in transactions that end at or
// before end, which a Kafka transaction committed: no redo meets them
// again.
func (s *State) passed(end uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.heldFrom {
		if v.Commit() <= end {
			delete(s.heldFrom, k)
		}
	}
}

// Holds returns, for each key with a parked record, the first such
// record: a session's order holds the key from it on (Order.Rebuild).
func (s *State) Holds() map[status.Key]keyorder.EventKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[status.Key]keyorder.EventKey, len(s.heldFrom))
	for k, v := range s.heldFrom {
		m[k] = v
	}
	return m
}

// add adds k to the set m, and reports whether it is new there.
func (s *State) add(m *map[keyorder.EventKey]struct{}, k keyorder.EventKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *m == nil {
		*m = map[keyorder.EventKey]struct{}{}
	}
	if _, ok := (*m)[k]; ok {
		return false
	}
	(*m)[k] = struct{}{}
	return true
}

// IsParked reports whether it was parked when a transaction aborted: its
// status row stands for it, and the delivery leaves it out.
func (s *State) IsParked(it *delivery.Inflight) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return has(s.parked, it)
}

// isSuspect reports whether it failed with its batch before.
func (s *State) isSuspect(it *delivery.Inflight) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return has(s.suspects, it)
}

func has(m map[keyorder.EventKey]struct{}, it *delivery.Inflight) bool {
	if len(m) == 0 {
		return false
	}
	_, ok := m[keyOf(it)]
	return ok
}
