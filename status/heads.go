package status

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Head is the first held row of a topic, by id: the oldest event of the
// topic the relay has not delivered yet (parked, held behind another, of
// a paused topic, adopted or reset).
type Head struct {
	// Topic is the row's topic.
	Topic string
	// EventID is the row's event id: its outbox row's id, as text.
	EventID string
	// Status is FAILED, DEAD, WAITING or PAUSED.
	Status string
	// Attempts are its failed deliveries; LastError why the last failed
	// (or why it waits).
	Attempts  int
	LastError string
}

// Failing reports whether the head failed and holds its topic for that:
// FAILED (to be tried again) or DEAD (given up on).
func (h Head) Failing() bool { return h.Status == "FAILED" || h.Status == "DEAD" }

// Heads returns the head of each of topics that has held rows, in no
// order; a topic with none is left out. It reads only, through the held
// rows' indexes (migration 0013): each topic costs the held rows before
// its first, not the delivered ones, which can be many (a paused topic's
// backlog before another's head): ask TopicsHeld first, and Heads only
// for the topics it gives.
func (s *Store) Heads(ctx context.Context, topics []string) ([]Head, error) {
	first := func(which string) string {
		return "(SELECT d.id, d.topic, coalesce(d.event_id, ''), d.status, d.attempts, d.last_error FROM " + s.table + " AS d" +
			" WHERE " + heldWhere("d") + " AND " + which + " AND d.topic = k.topic ORDER BY d.id LIMIT 1)"
	}
	rows, _ := s.db.Query(ctx, "SELECT h.topic, h.event_id, h.status, h.attempts, h.last_error FROM unnest($1::text[]) AS k(topic)"+
		" CROSS JOIN LATERAL (SELECT * FROM ("+first(soloRow("d"))+" UNION ALL "+first(keyedRow("d"))+") AS u(id, topic, event_id, status, attempts, last_error)"+
		" ORDER BY u.id LIMIT 1) AS h", topics)
	heads, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Head, error) {
		var h Head
		err := r.Scan(&h.Topic, &h.EventID, &h.Status, &h.Attempts, &h.LastError)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the first held event of each topic in %s: %w", s.table, err)
	}
	return heads, nil
}

// TopicsHeld returns those of topics that have held rows, in no order. It
// reads only, one probe of the order index (migration 0010) per topic.
func (s *Store) TopicsHeld(ctx context.Context, topics []string) ([]string, error) {
	rows, _ := s.db.Query(ctx, "SELECT k.topic FROM unnest($1::text[]) AS k(topic)"+
		" WHERE EXISTS (SELECT 1 FROM "+s.table+" AS d WHERE "+heldWhere("d")+" AND d.topic = k.topic)", topics)
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read which topics have held events in %s: %w", s.table, err)
	}
	return held, nil
}
