package status

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

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
// key (found by the order index's hash), and a is not a reload row. Rows
// with a NULL key never match.
func sameKey(a, b string) string {
	return a + ".topic = " + b + ".topic AND sha256(" + a + ".record_key) = sha256(" + b + ".record_key) AND " +
		a + ".record_key = " + b + ".record_key AND NOT " + a + ".reload"
}

// HeldKeys returns every key with held rows (FAILED, DEAD not skipped,
// WAITING, PAUSED), except NULL keys and reload rows, which are not
// ordered. It reads only.
func (s *Store) HeldKeys(ctx context.Context) ([]Key, error) {
	rows, _ := s.db.Query(ctx, "SELECT DISTINCT d.topic, d.record_key FROM "+s.table+" AS d WHERE "+heldWhere("d")+
		" AND d.record_key IS NOT NULL AND NOT d.reload")
	keys, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return nil, fmt.Errorf("read the held keys of %s: %w", s.table, err)
	}
	return keys, nil
}

// CorrectedHeldKeys returns the keys of the held rows whose topic was
// corrected (original_topic is set: `cdc-relay failed retry --topic`), in
// their new topic, except NULL keys and reload rows. A running relay reads
// them every status interval, to hold the later events of a key corrected
// by another process. It reads only, through the corrected index.
func (s *Store) CorrectedHeldKeys(ctx context.Context) ([]Key, error) {
	rows, _ := s.db.Query(ctx, "SELECT DISTINCT d.topic, d.record_key FROM "+s.table+" AS d WHERE d.original_topic IS NOT NULL AND "+
		heldWhere("d")+" AND d.record_key IS NOT NULL AND NOT d.reload")
	keys, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return nil, fmt.Errorf("read the keys of the corrected held rows of %s: %w", s.table, err)
	}
	return keys, nil
}

// StillHeld returns those of keys that still have held rows, each once,
// in one query whatever their number. It reads only.
func (s *Store) StillHeld(ctx context.Context, keys []Key) ([]Key, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	topics, ks := make([]string, len(keys)), make([][]byte, len(keys))
	for i, k := range keys {
		topics[i], ks[i] = k.Topic, []byte(k.Key)
	}
	rows, _ := s.db.Query(ctx, "SELECT DISTINCT k.topic, k.record_key FROM unnest($1::text[], $2::bytea[]) AS k(topic, record_key)"+
		" WHERE EXISTS (SELECT 1 FROM "+s.table+" AS d WHERE "+heldWhere("d")+" AND d.topic = k.topic"+
		" AND sha256(d.record_key) = sha256(k.record_key) AND d.record_key = k.record_key AND NOT d.reload)", topics, ks)
	held, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return nil, fmt.Errorf("read which keys still have held rows in %s: %w", s.table, err)
	}
	return held, nil
}

func scanKey(r pgx.CollectableRow) (Key, error) {
	var k Key
	var key []byte
	err := r.Scan(&k.Topic, &key)
	k.Key = string(key)
	return k, err
}
