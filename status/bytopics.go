package status

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// This file is ordering by topic for some topics only (ByTopics): the
// held rows of those topics are ordered by topic, as ByTopic orders every
// topic's, and the others by topic and record key.

// ByTopics makes the store order the held rows of topics by topic, as
// ByTopic does (a Key of one of them names the topic, with the empty
// key), and those of every other topic by topic and record key (a config
// file's tables with ordering: topic beside tables ordered by key). A
// claim takes the rows of both in one id order; HeldKeys, StillHeld and
// ReloadKeys answer for each topic as its ordering does. With no topics
// it changes nothing; with ByTopic, every topic is ordered by topic.
func ByTopics(topics ...string) Option {
	topics = slices.Clone(topics)
	return func(s *Store) { s.topics = topics }
}

// topicsOf is a condition, starting with AND, that the topic of the row
// of alias is one of a set of topics; "" when every topic is.
type topicsOf func(alias string) string

// allTopics is the topicsOf every topic: no condition.
func allTopics(string) string { return "" }

// notAmong is the topicsOf the topics not in the text array parameter $n
// (the topics ordered by key, when $n is ByTopics').
func notAmong(n int) topicsOf {
	return func(a string) string { return fmt.Sprintf(" AND %s.topic <> ALL ($%d::text[])", a, n) }
}

// among is the topicsOf the topics in the text array parameter $n.
func among(n int) topicsOf {
	return func(a string) string { return fmt.Sprintf(" AND %s.topic = ANY ($%d::text[])", a, n) }
}

// mixedCandidates are candidates with ByTopics: the rows of the topics
// ordered by key as when ordering by key, those of the topics ordered by
// topic as ByTopic claims them, each query restricted to its topics
// (args, the limit and the slot, get the topics after them), merged by
// id.
func (s *Store) mixedCandidates(ctx context.Context, tx pgx.Tx, limit int, args []any) ([]candidate, error) {
	n := len(args) + 1
	args = append(args, s.topics)
	topicSolo, topicKeyed := s.byTopicQueries(among(n))
	queries := append(s.byKeyQueries(notAmong(n)), candidateQuery{topicSolo, true}, candidateQuery{topicKeyed, true})
	return readAllCandidates(ctx, tx, limit, queries, args)
}

// orderedByTopic reports whether the store orders the held rows of topic
// by topic.
func (s *Store) orderedByTopic(topic string) bool {
	return s.byTopic || slices.Contains(s.topics, topic)
}

// keyOrdered is the topicsOf the topics the store orders by key, as the
// array parameter $n when ByTopics names some (args, else nil, is that
// parameter).
func (s *Store) keyOrdered(n int) (topicsOf, []any) {
	if len(s.topics) == 0 {
		return allTopics, nil
	}
	return notAmong(n), []any{s.topics}
}

// splitByOrdering returns those of keys whose topic is ordered by key,
// and those whose topic is ordered by topic.
func (s *Store) splitByOrdering(keys []Key) (byKey, byTopic []Key) {
	for _, k := range keys {
		if s.orderedByTopic(k.Topic) {
			byTopic = append(byTopic, k)
		} else {
			byKey = append(byKey, k)
		}
	}
	return byKey, byTopic
}
