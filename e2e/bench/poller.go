package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The polling baseline: a 500 ms polling outbox like the ones teams run today.
const (
	pollInterval = 500 * time.Millisecond
	pollBatch    = 50
)

func (b *bench) createPollTable(ctx context.Context) error {
	return b.exec(ctx, `DROP TABLE IF EXISTS poll_outbox;
		CREATE TABLE poll_outbox (
			id             bigserial   PRIMARY KEY,
			aggregate_type text        NOT NULL,
			aggregate_id   text        NOT NULL,
			event_type     text        NOT NULL,
			payload        jsonb       NOT NULL,
			status         text        NOT NULL DEFAULT 'PENDING',
			retry_count    int         NOT NULL DEFAULT 0,
			created_at     timestamptz NOT NULL DEFAULT now(),
			processed_at   timestamptz
		);
		CREATE INDEX poll_outbox_pending ON poll_outbox (created_at) WHERE status = 'PENDING'`)
}

// poll runs the poller until ctx is done: every 500 ms, claim up to 50
// PENDING rows older than 1 s with FOR UPDATE SKIP LOCKED, produce them and
// wait for the acks, mark them DELIVERED, commit. delivered, when set,
// counts the rows delivered.
func (b *bench) poll(ctx context.Context, brokers []string, topic string, delivered *int64) error {
	conn, err := pgx.Connect(context.Background(), b.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation())
	if err != nil {
		return err
	}
	defer cl.Close()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT id, aggregate_id, payload::text FROM poll_outbox
				WHERE status = 'PENDING' AND created_at < now() - interval '1 second'
				ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`, pollBatch)
			if err != nil {
				return err
			}
			var ids []int64
			var recs []*kgo.Record
			for rows.Next() {
				var id int64
				var key, payload string
				if err := rows.Scan(&id, &key, &payload); err != nil {
					return err
				}
				ids = append(ids, id)
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(payload)})
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if len(recs) == 0 {
				return nil
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE poll_outbox SET status = 'DELIVERED', processed_at = now() WHERE id = ANY($1)`, ids)
			if err == nil && delivered != nil {
				*delivered += int64(len(ids))
			}
			return err
		})
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("poll: %w", err)
		}
	}
}

// pollerDrain measures the poller's rate on a backlog for a fixed time: at
// 50 rows per 500 ms a million-row drain would take hours.
func (b *bench) pollerDrain(ctx context.Context, out io.Writer) error {
	if err := b.createPollTable(ctx); err != nil {
		return err
	}
	const backlog, window = 20000, 20 * time.Second
	if err := b.fillBacklog(ctx, "poll_outbox", backlog, b.c.perTx); err != nil {
		return err
	}
	// Old enough for the poller's 1 s guard.
	if err := b.exec(ctx, "UPDATE poll_outbox SET created_at = now() - interval '1 minute'"); err != nil {
		return err
	}
	broker, err := newBroker(true)
	if err != nil {
		return err
	}
	defer broker.Close()
	pctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	var delivered int64
	start := time.Now()
	if err := b.poll(pctx, broker.ListenAddrs(), "poll.order", &delivered); err != nil {
		return err
	}
	r := float64(delivered) / time.Since(start).Seconds()
	logf("poller drain: %d rows in %s (%.0f/s)", delivered, window, r)
	fmt.Fprintf(out, "### Drain, polling baseline\n\n%d rows delivered in %s: **%.0f events/s**; a %d-row backlog would take %s.\n\n",
		delivered, window, r, b.c.rows, (time.Duration(float64(b.c.rows)/r) * time.Second).Round(time.Minute))
	return nil
}
