package status

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// This file is the publisher a store is made for: the status table and
// the pause table hold the rows of every publisher (Kafka's and the
// webhook publishers'), and a store reads and writes its own only.

// KafkaPublisher is the name of Kafka's publisher (the producer): a
// store's publisher unless Publisher names another, and the publisher of
// every row parked, and every topic paused, before the tables knew
// publishers (migration 20). It is the one declaration of the name: the
// config file's (outbox.KafkaPublisher) is this constant.
const KafkaPublisher = "kafka"

// maxPublisherName is the most bytes of a publisher's name: an SQL
// identifier's (NAMEDATALEN - 1).
const maxPublisherName = 63

// ValidPublisher returns an error unless name can name a publisher: a
// lowercase ASCII letter, then at most 62 lowercase ASCII letters,
// digits, underscores and hyphens (^[a-z][a-z0-9_-]{0,62}$), the rule the
// config file's publishers follow too. A name is quoted as an SQL
// literal wherever it is written into a statement.
func ValidPublisher(name string) error {
	if name == "" || len(name) > maxPublisherName || name[0] < 'a' || name[0] > 'z' {
		return fmt.Errorf("publisher %q: want a lowercase letter, then at most %d lowercase letters, digits, _ and -", name, maxPublisherName-1)
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return fmt.Errorf("publisher %q: %q at byte %d: want lowercase letters, digits, _ and - only", name, c, i)
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
// publisher's row, and the ids of other publishers' rows are not found
// (PublishersOf, not an operation of the store, says whose they are);
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

// The two functions below are not operations of a store, which sees its
// publisher's rows only (Publisher): they read the publisher column of
// every row of a store's table, and nothing else of another publisher's
// rows, so that an operator's command can say whose an id is, and list
// every publisher's rows through each one's store.

// PublishersOf returns the publisher of each of ids that is a row of s's
// status table, whatever s's publisher; an id not in the table is not in
// the map. With it, a command that a store did not find an id for says
// whose row it is (`cdc-relay failed retry 7 --publisher partner`, 7
// being Kafka's). It reads only.
func PublishersOf(ctx context.Context, s *Store, ids []int64) (map[int64]string, error) {
	rows, err := s.db.Query(ctx, "SELECT d.id, d.publisher FROM "+s.table+" AS d WHERE d.id = ANY($1)", ids)
	if err != nil {
		return nil, fmt.Errorf("read the publishers of ids in %s: %w", s.table, err)
	}
	owners := make(map[int64]string, len(ids))
	var (
		id        int64
		publisher string
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &publisher}, func() error {
		owners[id] = publisher
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the publishers of ids in %s: %w", s.table, err)
	}
	return owners, nil
}

// TablePublishers returns the publishers that have rows in s's status
// table, whatever s's publisher: Kafka's first, then the others by name;
// none for an empty table. `cdc-relay failed list` reads each one's rows
// through its store. It reads only.
func TablePublishers(ctx context.Context, s *Store) ([]string, error) {
	rows, err := s.db.Query(ctx, "SELECT DISTINCT d.publisher FROM "+s.table+" AS d")
	if err != nil {
		return nil, fmt.Errorf("read the publishers of %s: %w", s.table, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the publishers of %s: %w", s.table, err)
	}
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == KafkaPublisher:
			return -1
		case b == KafkaPublisher:
			return 1
		case a < b:
			return -1
		}
		return 1
	})
	return names, nil
}
