package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/relayproc"
)

// adoptTopic is the adopt part's topic.
const adoptTopic = "bench.adopt.order-events"

// adoptConfig is the adopt part's relay config: the outbox of
// examples/order-service-outbox (uuid ids, a status column the relay
// writes back, NEW rows pending), in a table of its own.
const adoptConfig = `kafka: {brokers: [%[1]q]}
slot: %[2]s
publication: bench_adopt
tables:
  - table: public.adopt_outbox
    id: id
    key: aggregate_id
    value: payload
    topic: ` + adoptTopic + `
    headers: {event_type: event_type, aggregate_type: aggregate_type}
    timestamp: created_at
    write_back:
      status_column: status
      delivered: SENT
      failed: FAILED
      pending: [NEW]
      delivered_at_column: sent_at
      error_column: error_message
`

// adopt measures the switch-over: -adopt-rows pending (NEW) rows of an
// order service's outbox, written before the relay's first run, are
// adopted when that run creates the slot, and sent by the poller; the
// time is from starting the relay until every row is DELIVERED in the
// status table, SENT in the outbox table, and in Kafka, with the relay's
// CPU per row. The broker discards record bytes, as in the drain.
func (b *bench) adopt(ctx context.Context, out io.Writer) error {
	n := b.c.adoptRows
	if err := b.fillAdoptOutbox(ctx, n); err != nil {
		return err
	}
	broker, err := newBroker(true)
	if err != nil {
		return err
	}
	defer broker.Close()
	slot := fmt.Sprintf("bench_adopt_%d", time.Now().UnixNano())
	path := filepath.Join(b.tmp, "adopt.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, adoptConfig, broker.ListenAddrs()[0], slot), 0o600); err != nil {
		return err
	}
	if o, err := exec.Command(b.relayBin, "migrate", "--config", path, "--postgres-url", b.url, "--no-slot").CombinedOutput(); err != nil {
		return fmt.Errorf("migrate --config: %v\n%s", err, o)
	}
	defer b.dropSlot(ctx, slot)
	start := time.Now()
	args := []string{"run", "--metrics-addr", "", "--config", path, "--postgres-url", b.url, "--kafka-create-topics", "--log-level", "warn"}
	if b.c.relayArgs != "" {
		args = append(args, strings.Fields(b.c.relayArgs)...)
	}
	p, err := relayproc.Start(b.relayBin, args...)
	if err != nil {
		return err
	}
	err = b.waitAdopted(ctx, p, n)
	took := time.Since(start)
	cpu, cpuErr := p.CPU()
	if stopErr := p.Stop(60 * time.Second); err == nil {
		err = stopErr
	}
	if err == nil {
		err = b.checkAdopted(ctx, broker.ListenAddrs(), n)
	}
	if err != nil {
		return err
	}
	logf("adopt: %d pending rows adopted, delivered and written back in %s", n, took.Round(time.Millisecond))
	fmt.Fprintf(out, "### Adopting a switch-over backlog: %d pending rows\n\n", n)
	fmt.Fprintf(out, "| | time | rows/s | relay CPU per row |\n|---|---|---|---|\n")
	perRow := ""
	if cpuErr == nil {
		perRow = fmt.Sprintf("%.2f µs", perEvent(cpu, n))
	}
	fmt.Fprintf(out, "| adopt | %s | %.0f | %s |\n\n", took.Round(time.Millisecond), rate(n, took), perRow)
	fmt.Fprintf(out, "From starting the relay's first run (which creates the slot and adopts the NEW rows) until every row was DELIVERED in the status table and SENT in the outbox table.\n\n")
	return nil
}

// fillAdoptOutbox creates the adopt part's outbox table afresh with n NEW
// rows (~300-byte payloads, -keys keys), and empties the status table.
func (b *bench) fillAdoptOutbox(ctx context.Context, n int) error {
	start := time.Now()
	err := b.exec(ctx, `TRUNCATE outbox_delivery;
		DROP TABLE IF EXISTS adopt_outbox;
		CREATE TABLE adopt_outbox (
			id             uuid         PRIMARY KEY,
			aggregate_type varchar(255) NOT NULL,
			aggregate_id   uuid         NOT NULL,
			event_type     varchar(255) NOT NULL,
			payload        text         NOT NULL,
			status         varchar(50)  NOT NULL,
			created_at     timestamp    NOT NULL,
			sent_at        timestamp    NULL,
			error_message  text         NULL
		);
		CREATE INDEX adopt_outbox_status_created ON adopt_outbox (status, created_at)`)
	if err != nil {
		return err
	}
	err = b.exec(ctx, `INSERT INTO adopt_outbox (id, aggregate_type, aggregate_id, event_type, payload, status, created_at)
		SELECT gen_random_uuid(), 'order', md5('key-' || (g % $1))::uuid, 'OrderPlaced',
		       json_build_object('seq', g, 'order_id', 'o-' || g, 'pad', repeat('x', 240))::text,
		       'NEW', now() AT TIME ZONE 'UTC'
		FROM generate_series(1, $2) g`, b.c.keys, n)
	if err != nil {
		return err
	}
	if err := b.exec(ctx, "VACUUM ANALYZE adopt_outbox"); err != nil {
		return err
	}
	logf("inserted %d NEW rows into adopt_outbox in %s", n, time.Since(start).Round(time.Millisecond))
	return nil
}

// waitAdopted waits until no row of adopt_outbox is NEW any more: each
// is written back in the status row's own transaction, so a row no
// longer NEW has its outcome in the status table too. It looks every
// 250 ms, by the status index, so as to take little of the CPU measured.
func (b *bench) waitAdopted(ctx context.Context, p *relayproc.Proc, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		var pending bool
		if err := b.conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM adopt_outbox WHERE status = 'NEW')").Scan(&pending); err != nil {
			return err
		}
		if !pending {
			return nil
		}
		if !p.Running() {
			return fmt.Errorf("relay exited (%v) before adopting and sending %d rows:\n%s", p.Err(), n, tail(p.Log()))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rows still NEW after 30 minutes: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// checkAdopted checks that every one of the n rows is SENT, its status
// row DELIVERED, and Kafka holds n records of the topic.
func (b *bench) checkAdopted(ctx context.Context, brokers []string, n int) error {
	var sent, delivered, other int
	err := b.conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM adopt_outbox WHERE status = 'SENT'),
		(SELECT count(*) FROM outbox_delivery WHERE status = 'DELIVERED'),
		(SELECT count(*) FROM outbox_delivery WHERE status <> 'DELIVERED')`).Scan(&sent, &delivered, &other)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	acked, err := ackedRecords(ctx, cl, adoptTopic)
	if err != nil {
		return err
	}
	if sent != n || delivered != n || other != 0 || acked < int64(n) {
		return fmt.Errorf("adopt: %d rows SENT, %d status rows DELIVERED and %d not, %d records in Kafka; want %d, %d, 0, %d", sent, delivered, other, acked, n, n, n)
	}
	return nil
}
