package status

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// This file is the order of a key's held events: parking an event behind
// them (WAITING, PAUSED) and finding which keys still hold some.

// Key is a topic and record key whose held events are delivered in commit
// order.
type Key struct {
	Topic string
	Key   string // the record key's bytes, as a string
}

// pausedReason is the last_error of a PAUSED row.
const pausedReason = "its topic is paused"

// Waiting parks ev as WAITING behind its key's held events, with reason
// (why, e.g. "waits for event 123 of its key") as the row's last_error. It
// parks as Failed does (the same dedup of an event sent again, the same
// degraded row for data PostgreSQL refuses), with no attempt counted. The
// event's outbox row, when its table writes back, is left as it is: it
// was not sent, and will be; the poller writes its outcome once it is
// delivered, as for any parked row.
func (s *Store) Waiting(ctx context.Context, ev *decoder.Event, reason error) error {
	return s.park(ctx, ev, Waiting, reason)
}

// Paused parks ev as PAUSED: its topic is paused. It parks as Waiting
// does; the row becomes WAITING when the topic is resumed (ResumeTopic),
// and is delivered in its key's order.
func (s *Store) Paused(ctx context.Context, ev *decoder.Event) error {
	return s.park(ctx, ev, Paused, errors.New(pausedReason))
}

// heldWhere is true of a held row of alias: FAILED, DEAD and not skipped,
// WAITING or PAUSED. Its first condition implies the order index's
// predicate, so that the index serves it.
func heldWhere(alias string) string {
	return alias + ".status IN ('FAILED', 'DEAD', 'WAITING', 'PAUSED') AND " + alias + ".skipped_at IS NULL"
}

// sameKey is true when row a is ordered with row b: the same topic and
// key (found by the order index's hash). A reload row is ordered with
// its key when it has one (an adopted row, a reset of a parked one): the
// key the relay holds for it. Rows with a NULL key never match.
func sameKey(a, b string) string {
	return a + ".topic = " + b + ".topic AND sha256(" + a + ".record_key) = sha256(" + b + ".record_key) AND " +
		a + ".record_key = " + b + ".record_key"
}

// HeldKeys returns every key with held rows (FAILED, DEAD not skipped,
// WAITING, PAUSED), except NULL keys, which are not ordered, and keys
// held by reload rows only, which ReloadKeys reads (a switch-over may
// adopt a million); ordering by topic (ByTopic), every topic with held
// rows, with the empty key, and ReloadKeys reads none; with ByTopics, the
// one of the topics it names and the other of the others. It reads only.
// EachHeldKey reads them without keeping them.
func (s *Store) HeldKeys(ctx context.Context) ([]Key, error) {
	var keys []Key
	err := s.EachHeldKey(ctx, func(k Key) { keys = append(keys, k) })
	return keys, err
}

// EachHeldKey calls f with each key HeldKeys returns, each once, in no
// order, as they are read: a relay holds millions of keys after a long
// refusal or pause, which it does not keep twice.
func (s *Store) EachHeldKey(ctx context.Context, f func(Key)) error {
	if s.byTopic {
		return s.eachHeldTopic(ctx, f, allTopics)
	}
	of, args := s.keyOrdered(1)
	rows, _ := s.db.Query(ctx, "SELECT DISTINCT d.topic, d.record_key FROM "+s.table+" AS d WHERE "+heldWhere("d")+
		" AND d.record_key IS NOT NULL AND NOT d.reload AND "+s.mine("d")+of("d"), args...)
	var (
		topic string
		key   []byte
	)
	if _, err := pgx.ForEachRow(rows, []any{&topic, &key}, func() error {
		f(Key{Topic: topic, Key: string(key)})
		return nil
	}); err != nil {
		return fmt.Errorf("read the held keys of %s: %w", s.table, err)
	}
	if len(s.topics) == 0 {
		return nil
	}
	return s.eachHeldTopic(ctx, f, among(1), s.topics)
}

// eachHeldTopic calls f with each of heldTopics.
func (s *Store) eachHeldTopic(ctx context.Context, f func(Key), of topicsOf, args ...any) error {
	topics, err := s.heldTopics(ctx, of, args...)
	for _, k := range topics {
		f(k)
	}
	return err
}

// CorrectedHeldKeys returns the keys of the held rows whose topic was
// corrected (original_topic is set: `cdc-relay failed retry --topic`), in
// their new topic, except reload rows, and rows with a NULL key but in a
// topic the store orders by topic (ByTopic, ByTopics), whose Key is the
// empty one. A running relay reads them every status interval, to hold
// the later events of a key (or topic) corrected by another process. It
// reads only, through the corrected index.
func (s *Store) CorrectedHeldKeys(ctx context.Context) ([]Key, error) {
	ordered, args := " AND d.record_key IS NOT NULL", []any(nil)
	switch {
	case s.byTopic:
		ordered = ""
	case len(s.topics) > 0:
		ordered, args = " AND (d.record_key IS NOT NULL OR d.topic = ANY($1::text[]))", []any{s.topics}
	}
	rows, _ := s.db.Query(ctx, "SELECT DISTINCT d.topic, coalesce(d.record_key, ''::bytea) FROM "+s.table+" AS d WHERE d.original_topic IS NOT NULL AND "+
		heldWhere("d")+ordered+" AND NOT d.reload AND "+s.mine("d"), args...)
	keys, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return nil, fmt.Errorf("read the keys of the corrected held rows of %s: %w", s.table, err)
	}
	return keys, nil
}

// StillHeld returns those of keys that still have held rows (reload rows
// too), each once, in one query whatever their number; ordering by
// topic, those of their topics with held rows, with the empty key; with
// ByTopics, each key as its topic is ordered, in one query each. It
// reads only.
func (s *Store) StillHeld(ctx context.Context, keys []Key) ([]Key, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if s.byTopic {
		return s.stillHeldTopics(ctx, keys)
	}
	if len(s.topics) == 0 {
		return s.stillHeldKeys(ctx, keys)
	}
	byKey, byTopic := s.splitByOrdering(keys)
	var held []Key
	if len(byKey) > 0 {
		k, err := s.stillHeldKeys(ctx, byKey)
		if err != nil {
			return nil, err
		}
		held = k
	}
	if len(byTopic) > 0 {
		t, err := s.stillHeldTopics(ctx, byTopic)
		if err != nil {
			return nil, err
		}
		held = append(held, t...)
	}
	return held, nil
}

// stillHeldKeys is StillHeld of keys ordered by key.
func (s *Store) stillHeldKeys(ctx context.Context, keys []Key) ([]Key, error) {
	topics, ks := make([]string, len(keys)), make([][]byte, len(keys))
	for i, k := range keys {
		topics[i], ks[i] = k.Topic, []byte(k.Key)
	}
	// One probe of the order index per key (a LATERAL with a LIMIT,
	// which the planner does not turn into a join over the whole table),
	// from the key's newest row: its delivered rows, whose entries
	// linger until a vacuum, are its oldest.
	rows, _ := s.db.Query(ctx, "SELECT DISTINCT k.topic, k.record_key FROM unnest($1::text[], $2::bytea[]) AS k(topic, record_key)"+
		" CROSS JOIN LATERAL (SELECT 1 FROM "+s.table+" AS d WHERE "+heldWhere("d")+" AND d.topic = k.topic"+
		" AND sha256(d.record_key) = sha256(k.record_key) AND d.record_key = k.record_key AND "+s.mine("d")+" ORDER BY d.id DESC LIMIT 1) AS h", topics, ks)
	held, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return nil, fmt.Errorf("read which keys still have held rows in %s: %w", s.table, err)
	}
	return held, nil
}

// ReloadKeys calls f with the topic and record key of each held reload
// row that has a key (a row adopted at the switch-over, a reset of a
// parked row), in no order, a key as often as it has rows; key is valid
// only during the call. The relay holds them before its stream starts,
// so that no later event of their key overtakes them. It reads only,
// through the solo index (migration 0013), row by row, keeping none.
// Ordering by topic it reads none, and with ByTopics none of the topics
// it names: HeldKeys has their topics.
func (s *Store) ReloadKeys(ctx context.Context, f func(topic string, key []byte)) error {
	if s.byTopic {
		return nil // HeldKeys has their topics
	}
	of, args := s.keyOrdered(1)
	rows, _ := s.db.Query(ctx, "SELECT d.topic, d.record_key FROM "+s.table+" AS d WHERE "+heldWhere("d")+
		" AND d.record_key IS NOT NULL AND d.reload AND "+s.mine("d")+of("d"), args...)
	var (
		topic string
		key   []byte
	)
	_, err := pgx.ForEachRow(rows, []any{&topic, &key}, func() error {
		f(topic, key)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the keys of the rows to send again from %s: %w", s.table, err)
	}
	return nil
}

func scanKey(r pgx.CollectableRow) (Key, error) {
	var k Key
	var key []byte
	err := r.Scan(&k.Topic, &key)
	k.Key = string(key)
	return k, err
}

// Held is one event for ParkHeld: parked WAITING with Reason, as Waiting
// parks it, or PAUSED, as Paused does.
type Held struct {
	Event  *decoder.Event
	Reason error // WAITING's last_error; unused when Paused
	Paused bool
}

// parkHeldMax is the most rows of one ParkHeld statement (10 parameters
// each, within PostgreSQL's 65,535).
const parkHeldMax = 1000

// parkHeldBytes is about the most bytes of records one ParkHeld statement
// carries (and always one row): the statement's parameters and its
// message are copies of them, made while the events are still in memory.
const parkHeldBytes = 1 << 20

// ParkHeld parks each of held as Waiting or Paused would, in one INSERT
// per 1,000 rows or about 1 MiB of records (parkHeldBytes), their ids in the order of held (so a key's rows keep
// the order they are given in). When it returns nil every row is
// committed. When PostgreSQL refuses a row for its data, it parks them
// one at a time instead, each degraded as Waiting degrades it.
func (s *Store) ParkHeld(ctx context.Context, held []Held) error {
	for len(held) > 0 {
		n, size := 0, 0
		for n < min(len(held), parkHeldMax) && (n == 0 || size < parkHeldBytes) {
			size += held[n].Event.Size()
			n++
		}
		if err := s.parkHeld(ctx, held[:n]); err != nil {
			return err
		}
		held = held[n:]
	}
	return nil
}

func (s *Store) parkHeld(ctx context.Context, held []Held) error {
	var sql strings.Builder
	sql.WriteString("INSERT INTO " + s.table + " (" + parkColumns + ") VALUES ")
	args := make([]any, 0, 11*len(held))
	for i, h := range held {
		state, reason := Waiting, h.Reason
		if h.Paused {
			state, reason = Paused, errors.New(pausedReason)
		}
		r := s.row(h.Event, reason)
		var headers any
		if r.headers != nil {
			headers = r.headers
		}
		if i > 0 {
			sql.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&sql, "($%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d::pg_lsn, $%d, $%d, $%d::integer, %s)", n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+9, n+10, n+11, s.publisherSQL)
		args = append(args, r.id, sanitize(r.topic), r.key, r.value, headers, r.timestamp, sanitize(r.reason), r.commitLSN, state, r.sourceTable, r.partition)
	}
	sql.WriteString(parkConflict)
	_, err := s.db.Exec(ctx, sql.String(), args...)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && dataError(pgErr) {
		for _, h := range held {
			if h.Paused {
				err = s.Paused(ctx, h.Event)
			} else {
				err = s.Waiting(ctx, h.Event, h.Reason)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("park %d held events in %s: %w", len(held), s.table, err)
	}
	return nil
}
