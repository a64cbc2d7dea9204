package status

import (
	"fmt"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// This file is the publisher a store is made for: the status table and
// the pause table hold the rows of every publisher (Kafka's and the
// webhook publishers'), and a store reads and writes its own only.

// KafkaPublisher is the name of Kafka's publisher (the producer): a
// store's publisher unless Publisher names another, and the publisher of
// every row parked, and every topic paused, before the tables knew
// publishers (migration 20).
const KafkaPublisher = "kafka"

// maxPublisherName is the most bytes of a publisher's name: an SQL
// identifier's (NAMEDATALEN - 1).
const maxPublisherName = 63

// ValidPublisher returns an error unless name can name a publisher: a
// lowercase ASCII letter, then at most 62 lowercase ASCII letters, digits
// and underscores (^[a-z][a-z0-9_]{0,62}$), the rule the config file's
// publishers follow too.
func ValidPublisher(name string) error {
	if name == "" || len(name) > maxPublisherName || name[0] < 'a' || name[0] > 'z' {
		return fmt.Errorf("publisher %q: want a lowercase letter, then at most %d lowercase letters, digits and underscores", name, maxPublisherName-1)
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return fmt.Errorf("publisher %q: %q at byte %d: want lowercase letters, digits and underscores only", name, c, i)
		}
	}
	return nil
}

// Publisher makes the store the publisher name's (KafkaPublisher without
// it): every statement it runs on the status table and the pause table
// reads and writes that publisher's rows only. Its parks are the
// publisher's rows, a parked event's identity including the publisher
// (the same event parked for two publishers is two rows); Claim, the held
// keys, List, Get, Retry, Skip, Purge, NextDue and Heads see no other
// publisher's row, and the ids of other publishers' rows are not found;
// PauseTopic, ResumeTopic and PausedTopics are the publisher's pauses.
// PausedBy is Kafka's only: see there. It panics on a name ValidPublisher
// refuses: the caller checks a name it did not write (the config file's
// are checked as they are read).
func Publisher(name string) Option {
	if err := ValidPublisher(name); err != nil {
		panic("status.Publisher: " + err.Error())
	}
	return func(s *Store) { s.publisher, s.publisherSQL = name, pgdb.QuoteLiteral(name) }
}

// mine is the condition that the row of alias a (of the status table or
// the pause table) is the store's publisher's: a.publisher = 'kafka'. The
// name is a literal, not a parameter, so that no statement's parameters
// are renumbered; ValidPublisher's names need no escaping, and
// QuoteLiteral quotes it all the same.
func (s *Store) mine(a string) string {
	return a + ".publisher = " + s.publisherSQL
}

// Publisher returns the publisher whose rows the store reads and writes.
func (s *Store) Publisher() string { return s.publisher }

// ownRows sets the Publisher of each of rows, read without the column
// from the store's own rows (a claim's), to the store's publisher.
func (s *Store) ownRows(rows []Row) {
	for i := range rows {
		rows[i].Publisher = s.publisher
	}
}
