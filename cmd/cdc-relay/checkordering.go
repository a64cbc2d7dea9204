package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/relay"
)

// topicOrdered returns the topics the tables of f with ordering: topic
// order by topic (outbox.OrderedTopics).
func topicOrdered(f *config.File) []string { return outbox.OrderedTopics(f.Tables) }

// orderingText says in words how the relay orders the events of t, for
// check-config: by its own ordering, else the file's (fileOrdering),
// else the default (key); byTopic are the topics the file's tables order
// by topic (topicOrdered), which order t's events of them by topic too.
func orderingText(t outbox.Table, fileOrdering string, byTopic []string) string {
	ordering, whose := t.Ordering, ""
	switch {
	case ordering != "":
	case fileOrdering != "":
		ordering, whose = fileOrdering, " (the file's)"
	default:
		ordering, whose = relay.OrderingKey, " (the default)"
	}
	const topicWords = "a parked event holds every later event of its topic, with a key or without, until it is delivered"
	switch ordering {
	case relay.OrderingNone:
		return "ordering: none" + whose + ": later events overtake a parked one"
	case relay.OrderingTopic:
		if whose != "" {
			return "ordering: topic" + whose + ", of every topic: " + topicWords
		}
		return fmt.Sprintf("ordering: topic, of its topics %s: %s", strings.Join(t.Topics(), ", "), topicWords)
	}
	text := "ordering: key" + whose + ": a parked event holds the later events of its topic and record key; events without a key are never held"
	var shared []string
	for _, topic := range t.Topics() {
		if slices.Contains(byTopic, topic) {
			shared = append(shared, topic)
		}
	}
	switch {
	case len(shared) == 0 || fileOrdering == relay.OrderingNone:
	case len(shared) == 1:
		text += fmt.Sprintf("; but %s, a topic of a table with ordering: topic, is ordered by topic", shared[0])
	default:
		text += fmt.Sprintf("; but %s, topics of tables with ordering: topic, are ordered by topic", strings.Join(shared, ", "))
	}
	return text
}

// orderingProblem is what relay.Config.CheckOrdering finds wrong with the
// tables' own orderings under the file's ordering (else the default), or
// "".
func orderingProblem(f *config.File) string {
	ordering := f.Ordering
	if ordering == "" {
		ordering = relay.OrderingKey
	}
	if err := (relay.Config{Ordering: ordering, Tables: f.Tables}).CheckOrdering(); err != nil {
		return err.Error()
	}
	return ""
}
