package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// retention measures the relay's throughput while its retention cleanup
// deletes -rows old outbox rows (created 30 days ago, before the relay's
// slot existed, so they are not relayed): the relay starts (the first
// cleanup runs at once) and a backlog of 200,000 new events is written in
// transactions of 1,000; the time is from starting the relay until Kafka
// acked every new event. The same run without old rows is the control.
func (b *bench) retention(ctx context.Context, out io.Writer) error {
	const events = 200000
	fmt.Fprintf(out, "### Relay throughput while retention deletes %d old outbox rows\n\n", b.c.rows)
	fmt.Fprintf(out, "%d new events in transactions of 1,000, written while the relay starts; the first cleanup runs at once. Load average before: %s.\n\n", events, loadAverage())
	fmt.Fprintf(out, "| old rows | new events delivered in | events/s | old rows left |\n|---|---|---|---|\n")
	for _, old := range []int{b.c.rows, 0} {
		took, left, err := b.retentionRun(ctx, old, events)
		if err != nil {
			return err
		}
		logf("retention: %d old rows, %d new events in %s, %d old rows left", old, events, took.Round(time.Millisecond), left)
		fmt.Fprintf(out, "| %d | %s | %.0f | %d |\n", old, took.Round(time.Millisecond), rate(events, took), left)
	}
	fmt.Fprintln(out)
	return nil
}

func (b *bench) retentionRun(ctx context.Context, old, events int) (took time.Duration, left int, err error) {
	if err := b.exec(ctx, "TRUNCATE outbox"); err != nil {
		return 0, 0, err
	}
	if old > 0 {
		err := b.exec(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
			SELECT 'order', 'key-' || g, 'OrderPlaced', json_build_object('seq', g, 'pad', repeat('x', 240))::jsonb,
			       now() - interval '30 days'
			FROM generate_series(1, $1) g`, old)
		if err != nil {
			return 0, 0, err
		}
		if err := b.exec(ctx, "VACUUM ANALYZE outbox"); err != nil {
			return 0, 0, err
		}
	}
	broker, err := newBroker(true)
	if err != nil {
		return 0, 0, err
	}
	defer broker.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.ListenAddrs()...))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, benchTopic); err != nil {
		return 0, 0, err
	}
	slot := fmt.Sprintf("bench_retention_%d", time.Now().UnixNano())
	defer b.dropSlot(ctx, slot)
	start := time.Now()
	p, err := b.startRelay(slot, broker.ListenAddrs())
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if stopErr := p.Stop(60 * time.Second); err == nil && stopErr != nil {
			err = stopErr
		}
	}()
	if err := b.waitSlotActive(ctx, slot, p); err != nil {
		return 0, 0, err
	}
	if err := b.fillBacklog(ctx, "outbox", events, 1000); err != nil {
		return 0, 0, err
	}
	if err := waitAcked(ctx, cl, benchTopic, int64(events), p, 5*time.Minute); err != nil {
		return 0, 0, err
	}
	took = time.Since(start)
	err = b.conn.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE created_at < now() - interval '7 days'").Scan(&left)
	return took, left, err
}
