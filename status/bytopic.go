package status

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// This file is ordering by topic (ByTopic): a held row holds its whole
// topic, whatever its record key.

// ByTopic makes the store order held rows by topic rather than by topic
// and record key (`--ordering topic`): a topic's held rows, with a key or
// without, reload rows too, are claimed in id order, each only while
// every earlier held row of its topic is deliverable; a Key names a
// topic, with the empty key (HeldKeys gives them so, and StillHeld reads
// only their topics). For event stores and consumers that read a topic
// in commit order: the relay then holds every later event of a topic
// behind a parked one.
func ByTopic() Option {
	return func(s *Store) { s.byTopic = true }
}

// byTopicQueries are candidatesQueries when ordering by topic: the
// first blocking row of each topic (FAILED and not due, or DEAD:
// blocking) is found once; the empty topic is none (a row the reset
// trigger added, its topic not read yet; an event that has none): its
// rows are not ordered; the candidates are the deliverable held rows of
// the topics not paused before it, in id order, read through the solo
// and the keyed index as when ordering by key, so that a backlog costs a
// claim only the rows it takes.
// Of the topics of which only (allTopics: every one).
func (s *Store) byTopicQueries(of topicsOf) (solo, keyed string) {
	half := func(which string) string {
		return "WITH " + blockedAlias + " AS MATERIALIZED (SELECT x.topic, min(x.id) AS first FROM (" + s.blocking() + ") AS x WHERE x.topic <> ''" + of("x") + " GROUP BY x.topic) " +
			"SELECT d.id, d.topic, ''::bytea, false, " + recordSize + " FROM " + s.table + " AS d" +
			" WHERE " + heldWhere("d") + " AND " + which + " AND " + s.deliverable() + " AND " + s.mine("d") + of("d") +
			" AND (d.topic NOT IN (SELECT b.topic FROM " + blockedAlias + " AS b) OR d.id < (SELECT b.first FROM " + blockedAlias + " AS b WHERE b.topic = d.topic))" +
			" ORDER BY d.id LIMIT $1"
	}
	return half(soloRow("d")), half(keyedRow("d"))
}

// heldTopics returns every topic of which (allTopics: of every one, with
// no args; else with its parameter in args) with held rows, each as a Key
// with the empty key (HeldKeys when ordering by topic); not the empty
// topic.
func (s *Store) heldTopics(ctx context.Context, of topicsOf, args ...any) ([]Key, error) {
	rows, _ := s.db.Query(ctx, "SELECT DISTINCT d.topic, ''::bytea FROM "+s.table+" AS d WHERE "+heldWhere("d")+" AND d.topic <> '' AND "+s.mine("d")+of("d"), args...)
	keys, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return nil, fmt.Errorf("read the topics with held events in %s: %w", s.table, err)
	}
	return keys, nil
}

// stillHeldTopics returns the topics of keys that still have held rows,
// each once as a Key with the empty key (StillHeld when ordering by
// topic).
func (s *Store) stillHeldTopics(ctx context.Context, keys []Key) ([]Key, error) {
	topics := make([]string, len(keys))
	for i, k := range keys {
		topics[i] = k.Topic
	}
	rows, _ := s.db.Query(ctx, "SELECT DISTINCT k.topic, ''::bytea FROM unnest($1::text[]) AS k(topic)"+
		" CROSS JOIN LATERAL (SELECT 1 FROM "+s.table+" AS d WHERE "+heldWhere("d")+" AND d.topic = k.topic AND "+s.mine("d")+" LIMIT 1) AS h", topics)
	held, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return nil, fmt.Errorf("read which topics still have held rows in %s: %w", s.table, err)
	}
	return held, nil
}
