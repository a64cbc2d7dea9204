package relay

import (
	"fmt"

	"github.com/cdc-relay/cdc-relay/outbox"
)

// This file is a table's own ordering (outbox.Table.Ordering, a config
// file's ordering: in tables:): the topics of a table with ordering: topic
// are ordered by topic, the other topics by Config.Ordering.

// CheckOrdering checks each table's own ordering against the relay's: key
// or topic; topic only on a table whose topics are known at start
// (outbox.Table.Topics), never beside --ordering none or exactly-once
// delivery; key not under --ordering topic, which orders every topic by
// topic, nor under --ordering none, which holds no key. Each error names
// the table and what to change.
func (c Config) CheckOrdering() error {
	for _, t := range c.Tables {
		if err := c.checkTableOrdering(t.Name(), t.Ordering, len(t.Topics()) > 0); err != nil {
			return err
		}
	}
	return nil
}

// checkTableOrdering is CheckOrdering of the table named name, whose own
// ordering is ordering and whose topics are known (known) or not.
func (c Config) checkTableOrdering(name, ordering string, known bool) error {
	switch {
	case ordering == "":
		return nil
	case ordering == OrderingNone:
		return fmt.Errorf("table %s: ordering none applies to the whole relay: --ordering none (ordering: none at the config file's top level); "+
			"a table's ordering is key or topic", name)
	case ordering != OrderingKey && ordering != OrderingTopic:
		return fmt.Errorf("table %s: ordering %q: want %s (the table's events in commit order by topic and record key) or %s "+
			"(its topics' events in commit order, with a key or without)", name, ordering, OrderingKey, OrderingTopic)
	case ordering == OrderingKey && c.Ordering == OrderingTopic:
		return fmt.Errorf("table %s: ordering key under --ordering topic: the relay orders every topic by topic; to order only some tables' topics "+
			"by topic, leave --ordering key (the default) and set ordering: topic on those tables", name)
	case ordering == OrderingKey && c.Ordering == OrderingNone:
		return fmt.Errorf("table %s: ordering key under --ordering none: the relay holds no key, so later events of a key would overtake "+
			"a parked one all the same; use --ordering key (the default), or remove the table's ordering", name)
	case ordering == OrderingKey:
		return nil
	case c.Ordering == OrderingNone:
		return fmt.Errorf("table %s: ordering topic beside --ordering none: a relay that lets later events overtake parked ones orders no topic; "+
			"use --ordering key (the default) with it, or remove the table's ordering", name)
	case c.ExactlyOnce.Enabled:
		return fmt.Errorf("table %s: ordering %s is not built for exactly-once delivery yet: remove the table's ordering (its events are then "+
			"ordered by key), or use at-least-once delivery (leave --delivery out)", name, OrderingTopic)
	case !known:
		return fmt.Errorf("table %s: ordering topic needs the table's topics known at start, and a column chooses them: name its topics "+
			"with routes (or one fixed topic), or order every topic by topic (--ordering topic)", name)
	}
	return nil
}

// topicOrdered returns the topics ordered by topic beside those ordered
// by key: the topics of the tables with ordering: topic, each once, in
// the tables' order (a topic named by a table ordered by key too is
// ordered by topic: the stricter order wins). None when the relay orders
// every topic by topic (--ordering topic), or none (--ordering none).
func (c Config) topicOrdered() []string {
	if c.Ordering == OrderingTopic || c.Ordering == OrderingNone {
		return nil
	}
	return outbox.OrderedTopics(c.Tables)
}
