package status

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// This file is the operator correcting a parked event's topic as it
// retries it (`cdc-relay failed retry ID --topic T`): an event parked for
// an illegal or wrong topic could otherwise never be delivered.
//
// A row's topic is half of its key's order group (topic, record key). The
// corrected row leaves the group of its old topic: when it was that
// group's first held row, the WAITING rows behind it are released, as a
// skip or purge of it would release them, and the poller delivers them in
// order to the topic they were parked for (Change.Released counts them;
// their own topic can be corrected once they are FAILED or DEAD). In the
// group of its new topic the table orders it by id, which is commit order:
// the poller delivers it behind that group's earlier held rows, and the
// group's later held rows behind it, once.
//
// The table does not hold the new group's events that the running relay
// streams after the change: the relay does, once it knows of the row.
// RetryOptions.Hold tells it before the change commits (the admin
// endpoint); a change made by another process (`cdc-relay failed retry
// --topic`) is learnt within the relay's status interval
// (CorrectedHeldKeys), and an event of the key streamed before that may be
// delivered ahead of the corrected one.

// retryToTopic is Retry with opts.Topic: one FAILED or DEAD row, not a
// reload row, made FAILED and due now with its topic set to opts.Topic and
// the topic it was parked for kept in original_topic.
func (s *Store) retryToTopic(ctx context.Context, opts RetryOptions) ([]Change, error) {
	if len(opts.IDs) != 1 || opts.All || opts.Status != "" {
		return nil, errors.New("retry: a new topic is given for one id at a time")
	}
	if err := decoder.ValidTopic(opts.Topic); err != nil {
		return nil, fmt.Errorf("retry id %d with a new topic, %w: %w", opts.IDs[0], ErrTopicRefused, err)
	}
	var changes []Change
	var skipped error // why the id was not retried
	var undo func()   // undoes opts.Hold, if the change does not commit
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		var sources []source
		var err error
		changes, sources, err = s.moveTopic(ctx, tx, opts.IDs[0], opts.Topic)
		if err != nil {
			return err
		}
		if len(changes) == 0 {
			skipped, err = s.explainSkipped(ctx, tx, opts.IDs, changes)
			return err
		}
		if err := checkMovable(opts.IDs[0], opts.Topic, sources[0]); err != nil {
			return err
		}
		if err := s.writeRetried(ctx, tx, sources); err != nil {
			return err
		}
		if err := s.countReleased(ctx, tx, changes, sources); err != nil {
			return err
		}
		if err := notifyDue(ctx, tx); err != nil {
			return err
		}
		undo = s.holdMoved(opts, sources[0])
		return nil
	})
	if err != nil && undo != nil {
		undo()
	}
	if err != nil {
		return nil, fmt.Errorf("retry in %s: %w", s.table, err)
	}
	return changes, skipped
}

// checkMovable returns an ErrTopicKept error when the row that src was
// before the move must keep its topic: a reload row, or a row already for
// topic.
func checkMovable(id int64, topic string, src source) error {
	if src.reload {
		return fmt.Errorf("%w: id %d is sent as its outbox row is now (a reset or adopted row): correct the topic in the outbox row, then retry it without --topic", ErrTopicKept, id)
	}
	if src.topic == topic {
		return fmt.Errorf("%w: id %d is already for topic %q: retry it without --topic", ErrTopicKept, id, topic)
	}
	return nil
}

// holdMoved calls opts.Hold with the new topic and key of the moved row
// src, when it is ordered there (a key, or a topic the store orders by
// topic, whose Key is the topic's whatever the row's key), and returns
// its undo (nil when not called).
func (s *Store) holdMoved(opts RetryOptions, src source) func() {
	if opts.Hold == nil || src.reload || src.key == nil && !s.orderedByTopic(opts.Topic) {
		return nil
	}
	return opts.Hold(Key{Topic: opts.Topic, Key: string(src.key)})
}

// moveTopic makes row id, in tx, FAILED and due now with topic, when it is
// FAILED or DEAD, keeping the topic it was parked for in original_topic
// (the first one, when corrected again). The sources returned carry the
// row's topic before the change, so that countReleased counts the rows of
// its old group. An event that has a row for topic already is an error.
func (s *Store) moveTopic(ctx context.Context, tx pgx.Tx, id int64, topic string) ([]Change, []source, error) {
	rows, err := tx.Query(ctx, "WITH target AS (SELECT t.id, t.status, t.topic FROM "+s.table+" AS t WHERE t.id = $1 AND t.status IN ('FAILED', 'DEAD') AND "+s.mine("t")+" FOR UPDATE)"+
		" UPDATE "+s.table+" AS d SET status = 'FAILED', attempts = 0, next_attempt_at = now(), updated_at = now(), skipped_at = NULL,"+
		" original_topic = CASE WHEN target.topic = $2 THEN d.original_topic ELSE coalesce(d.original_topic, target.topic) END, topic = $2"+
		" FROM target WHERE d.id = target.id AND "+s.mine("d")+" RETURNING "+changeColumns("d", "target.status")+", target.topic", id, topic)
	if err != nil {
		return nil, nil, err
	}
	var (
		c        Change
		src      source
		oldTopic string
	)
	_, err = pgx.ForEachRow(rows, []any{&c.ID, &c.Was, &src.table, &src.eventID, &src.next, &src.reload, &src.topic, &src.key, &oldTopic}, func() error {
		src.topic = oldTopic
		return nil
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation: the copy index
		return nil, nil, fmt.Errorf("%w: id %d: its event has a row for topic %q already (an event routed to several topics): retry or purge that one instead", ErrTopicTaken, id, topic)
	}
	if err != nil || c.ID == 0 {
		return nil, nil, err
	}
	return []Change{c}, []source{src}, nil
}
