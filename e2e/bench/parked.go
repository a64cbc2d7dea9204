package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// parked measures the poller: -parked events parked in the status table
// (FAILED, due, ~300-byte values, as the fast path leaves them when a
// topic was missing) are delivered by a relay whose stream is idle; the
// time is from starting the relay until every row is DELIVERED. The
// broker discards record bytes, as in the drain.
func (b *bench) parked(ctx context.Context, out io.Writer) error {
	n := b.c.parkedRows
	logf("parking %d events in the status table", n)
	if err := b.exec(ctx, "TRUNCATE outbox_delivery"); err != nil {
		return err
	}
	err := b.exec(ctx, `INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, headers, last_error, commit_lsn)
		SELECT 'e-' || g, $1, convert_to('key-' || (g % $2), 'UTF8'),
		       convert_to(json_build_object('seq', g, 'pad', repeat('x', 240))::text, 'UTF8'),
		       jsonb_build_array(jsonb_build_object('key', 'id', 'value', 'e-' || g)),
		       'UNKNOWN_TOPIC_OR_PARTITION', '0/1000'::pg_lsn
		FROM generate_series(1, $3) g`, benchTopic, b.c.keys, n)
	if err != nil {
		return err
	}
	broker, err := newBroker(true)
	if err != nil {
		return err
	}
	defer broker.Close()
	slot := fmt.Sprintf("bench_parked_%d", time.Now().UnixNano())
	defer b.dropSlot(ctx, slot)
	start := time.Now()
	p, err := b.startRelay(slot, broker.ListenAddrs())
	if err != nil {
		return err
	}
	err = poll(ctx, 10*time.Minute, func() (bool, error) {
		var left int
		if err := b.conn.QueryRow(ctx, "SELECT count(*) FROM outbox_delivery WHERE status <> 'DELIVERED'").Scan(&left); err != nil {
			return false, err
		}
		if !p.Running() {
			return false, fmt.Errorf("relay exited (%v) with %d parked events left:\n%s", p.Err(), left, tail(p.Log()))
		}
		return left == 0, nil
	})
	took := time.Since(start)
	cpu, cpuErr := p.CPU()
	if stopErr := p.Stop(60 * time.Second); err == nil {
		err = stopErr
	}
	if err != nil {
		return err
	}
	logf("poller: %d parked events delivered in %s", n, took.Round(time.Millisecond))
	batches := "batches of the default `--retry-batch`"
	if b.c.relayArgs != "" {
		batches += ", unless `" + b.c.relayArgs + "` sets it"
	}
	fmt.Fprintf(out, "### Parked events delivered by the poller: %d events, %s\n\n", n, batches)
	fmt.Fprintf(out, "| | time | events/s | relay CPU per event |\n|---|---|---|---|\n")
	perEv := ""
	if cpuErr == nil {
		perEv = fmt.Sprintf("%.2f µs", perEvent(cpu, n))
	}
	fmt.Fprintf(out, "| poller | %s | %.0f | %s |\n\n", took.Round(time.Millisecond), rate(n, took), perEv)
	fmt.Fprintf(out, "From starting the relay until every row was DELIVERED; the fast path's rate is the drain above.\n\n")
	return nil
}
