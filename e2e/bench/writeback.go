package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// writeBack measures what status write-back costs the drain: the batched
// backlog drained into kfake with a config file whose table writes each
// event's outcome back to its row (status DELIVERED, processed_at now()),
// and with the same file without write_back, alternating, on an outbox
// table with those two columns and an index on (status, created_at), as
// the order-service layout has, in both runs. The drain is timed to the
// last ack, as the plain drain; "rows written back" is when the last row
// says DELIVERED.
func (b *bench) writeBack(ctx context.Context, out io.Writer) error {
	// The order-service layout's status columns and its poller's index.
	if err := b.exec(ctx, `ALTER TABLE outbox ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'PENDING',
		ADD COLUMN IF NOT EXISTS processed_at timestamptz`); err != nil {
		return err
	}
	if err := b.exec(ctx, `CREATE INDEX IF NOT EXISTS outbox_status_created ON outbox (status, created_at)`); err != nil {
		return err
	}
	defer func() { _ = b.exec(ctx, "ALTER TABLE outbox DROP COLUMN status, DROP COLUMN processed_at") }()
	const table = `tables:
  - table: public.outbox
    id: id
    key: aggregate_id
    value: payload
    topic: "` + benchTopic + `"
    headers: {event_type: event_type, aggregate_type: aggregate_type, aggregate_id: aggregate_id}
    timestamp: created_at
`
	files := map[bool]string{}
	for wb, body := range map[bool]string{false: table,
		true: table + "    write_back: {status_column: status, delivered: DELIVERED, failed: FAILED, delivered_at_column: processed_at}\n"} {
		path := filepath.Join(b.tmp, fmt.Sprintf("writeback-%v.yaml", wb))
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			return err
		}
		files[wb] = path
	}
	load := loadAverage()
	results := map[bool][]drainResult{}
	var written []time.Duration
	for round := 0; round < b.c.rounds; round++ {
		for _, wb := range []bool{round%2 == 0, round%2 != 0} {
			res, done, err := b.writeBackRound(ctx, files[wb], wb)
			if err != nil {
				return err
			}
			logf("round %d, write-back %v: %s (%.0f/s, %.2f µs CPU/event), all rows written back after %s", round+1, wb,
				res.wall.Round(time.Millisecond), rate(b.c.rows, res.wall), perEvent(res.cpu, b.c.rows), done.Round(time.Millisecond))
			results[wb] = append(results[wb], res)
			if wb {
				written = append(written, done)
			}
		}
	}
	wall := func(d drainResult) float64 { return float64(d.wall) }
	cpu := func(d drainResult) float64 { return float64(d.cpu) }
	rss := func(d drainResult) float64 { return float64(d.peakRSS) }
	fmt.Fprintf(out, "### Write-back: %d rows, %d per transaction, kfake (median of %d rounds)\n\n", b.c.rows, b.c.perTx, b.c.rounds)
	fmt.Fprintf(out, "Load average before: %s.\n\n", load)
	fmt.Fprintf(out, "| | drained (last ack) | events/s | CPU per event | peak RSS |\n|---|---|---|---|---|\n")
	for _, wb := range []bool{false, true} {
		w := time.Duration(median(results[wb], wall))
		name := map[bool]string{false: "without write-back", true: "with write-back"}[wb]
		fmt.Fprintf(out, "| %s | %s | %.0f | %.2f µs | %.1f MiB |\n", name, w.Round(time.Millisecond), rate(b.c.rows, w),
			perEvent(time.Duration(median(results[wb], cpu)), b.c.rows), median(results[wb], rss)/(1<<20))
	}
	all := time.Duration(median(written, func(d time.Duration) float64 { return float64(d) }))
	fmt.Fprintf(out, "\nEvery row said DELIVERED %s after the start, %.2f times the drain without write-back (median; rounds:",
		all.Round(time.Millisecond), float64(all)/median(results[false], wall))
	for _, d := range written {
		fmt.Fprintf(out, " %s", d.Round(time.Millisecond))
	}
	fmt.Fprintf(out, ").\n\n")
	return nil
}

// writeBackRound fills the backlog behind a fresh slot and drains it with
// `run --config path`; with write-back it then waits until every row says
// DELIVERED, and returns that time too.
func (b *bench) writeBackRound(ctx context.Context, path string, wb bool) (drainResult, time.Duration, error) {
	var res drainResult
	if err := b.exec(ctx, "TRUNCATE outbox"); err != nil {
		return res, 0, err
	}
	const slot = "bench_writeback"
	if err := b.exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot); err != nil {
		return res, 0, err
	}
	defer func() {
		b.dropSlot(ctx, slot)
		_ = b.exec(ctx, "DELETE FROM cdc_relay_checkpoint")
	}()
	if err := b.fillBacklog(ctx, "outbox", b.c.rows, b.c.perTx); err != nil {
		return res, 0, err
	}
	_ = b.exec(ctx, "CHECKPOINT")
	broker, err := newBroker(true)
	if err != nil {
		return res, 0, err
	}
	defer broker.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.ListenAddrs()...))
	if err != nil {
		return res, 0, err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, benchTopic); err != nil {
		return res, 0, err
	}
	saved := b.c.relayArgs
	b.c.relayArgs = strings.TrimSpace(saved + " --config " + path)
	start := time.Now()
	p, err := b.startRelay(slot, broker.ListenAddrs())
	b.c.relayArgs = saved
	if err != nil {
		return res, 0, err
	}
	if err := waitAcked(ctx, cl, benchTopic, int64(b.c.rows), p, 10*time.Minute); err != nil {
		p.Kill()
		return res, 0, err
	}
	res.wall = time.Since(start)
	var done time.Duration
	if wb {
		err := poll(ctx, 5*time.Minute, func() (bool, error) {
			var pending int
			err := b.conn.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE status <> 'DELIVERED' OR processed_at IS NULL").Scan(&pending)
			return pending == 0, err
		})
		if err != nil {
			p.Kill()
			return res, 0, fmt.Errorf("wait for the write-back: %w", err)
		}
		done = time.Since(start)
	}
	if res.cpu, err = p.CPU(); err != nil {
		p.Kill()
		return res, 0, err
	}
	if res.peakRSS, err = p.PeakRSS(); err != nil {
		p.Kill()
		return res, 0, err
	}
	return res, done, p.Stop(60 * time.Second)
}
