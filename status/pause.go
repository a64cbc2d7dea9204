package status

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// This file is the pause table: the topics paused for a slot's relay,
// kept in the database so that a restart or a standby's takeover keeps
// them.

// Pauses is a NewStore option: the pause table (schema, table) and the
// slot whose pauses the store reads and writes. Without it, PauseTopic,
// ResumeTopic and PausedTopics return an error and Claim treats no topic
// as paused.
func Pauses(schema, table, slot string) Option {
	return func(s *Store) { s.pauses, s.slot = pgx.Identifier{schema, table}.Sanitize(), slot }
}

// PausedBy makes the topics each of selects names paused too, beside
// those of the pause table (see Pauses, without which it does nothing):
// each is a SELECT of one text column that takes no arguments, such as a
// team's own progress table's paused rows (progress.Table.PausedTopics).
// Claim leaves their rows out and PausedTopics lists them; PauseTopic and
// ResumeTopic change only the pause table. They are the store's
// publisher's (see Publisher): a team's progress table pauses a topic
// for one publisher's rows (progress.Table.Publisher), so the caller
// gives each publisher's store the selects of its own rows.
func PausedBy(selects ...string) Option {
	return func(s *Store) { s.pausedBy = append(s.pausedBy, selects...) }
}

// pausedTopics is a SELECT of the store's publisher's paused topics: the
// pause table's of the slot given by the placeholder slot, and those of
// PausedBy.
func (s *Store) pausedTopics(slot string) string {
	q := "SELECT p.topic FROM " + s.pauses + " AS p WHERE p.slot_name = " + slot + " AND " + s.mine("p")
	for _, sel := range s.pausedBy {
		// A NULL topic would make every row's `<> ALL` NULL: none claimed.
		q += " UNION ALL (SELECT x.topic FROM (" + sel + ") AS x(topic) WHERE x.topic IS NOT NULL)"
	}
	return q
}

// errNoPauses is what the pause methods return without Pauses.
var errNoPauses = errors.New("the status store has no pause table (status.Pauses)")

// resumedReason is the last_error of a PAUSED row its topic's resume made
// WAITING.
const resumedReason = "its topic was resumed: delivered in its key's order"

// PauseTopic records topic as paused for the store's slot and publisher. It reports
// whether it changed anything (false: the topic was paused already). The
// relay parks the topic's new events as PAUSED; Claim claims none of its
// rows.
func (s *Store) PauseTopic(ctx context.Context, topic string) (bool, error) {
	if s.pauses == "" {
		return false, errNoPauses
	}
	tag, err := s.db.Exec(ctx, "INSERT INTO "+s.pauses+" (slot_name, topic, publisher) VALUES ($1, $2, "+s.publisherSQL+")"+
		" ON CONFLICT (slot_name, topic, publisher) DO NOTHING", s.slot, topic)
	if err != nil {
		return false, fmt.Errorf("pause topic %q in %s: %w", topic, s.pauses, err)
	}
	return tag.RowsAffected() > 0, nil
}

// ResumeTopic, in one transaction, deletes topic's pause for the store's
// slot and publisher and makes the topic's PAUSED rows of the publisher
// WAITING, so that each is
// delivered in its key's order before any newer event of its key. It
// reports whether it changed anything (false: the topic was not paused
// and had no PAUSED rows).
func (s *Store) ResumeTopic(ctx context.Context, topic string) (bool, error) {
	if s.pauses == "" {
		return false, errNoPauses
	}
	var changed bool
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		del, err := tx.Exec(ctx, "DELETE FROM "+s.pauses+" AS p WHERE p.slot_name = $1 AND p.topic = $2 AND "+s.mine("p"), s.slot, topic)
		if err != nil {
			return err
		}
		upd, err := tx.Exec(ctx, "UPDATE "+s.table+" AS d SET status = 'WAITING', last_error = $2, updated_at = now() WHERE d.status = 'PAUSED' AND d.topic = $1 AND "+s.mine("d"),
			topic, resumedReason)
		if err != nil {
			return err
		}
		changed = del.RowsAffected() > 0 || upd.RowsAffected() > 0
		if upd.RowsAffected() > 0 {
			return notifyDue(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("resume topic %q in %s and %s: %w", topic, s.pauses, s.table, err)
	}
	return changed, nil
}

// PausedTopics lists the slot's paused topics of the store's publisher,
// sorted: the pause table's, and those of PausedBy (Kafka's store only).
// It reads only.
func (s *Store) PausedTopics(ctx context.Context) ([]string, error) {
	if s.pauses == "" {
		return nil, errNoPauses
	}
	rows, _ := s.db.Query(ctx, "SELECT DISTINCT t.topic FROM ("+s.pausedTopics("$1")+") AS t(topic) WHERE t.topic IS NOT NULL ORDER BY t.topic", s.slot)
	topics, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the paused topics of %s: %w", s.pauses, err)
	}
	return topics, nil
}
