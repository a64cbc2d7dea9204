package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// backfillTable is the table the backfill part publishes: the outbox's
// layout, apart from it, so that the latency runs (which empty the
// outbox) leave it alone. Its records go to backfillTopic.
const (
	backfillTable = "bench_backfill"
	backfillTopic = "bench.backfill"
	backfillRate  = 2000 // events/s of the live load beside it
)

// backfill measures `cdc-relay backfill` publishing -rows rows with no
// rate limit (--rate 0): alone, then while the relay streams a live load
// of backfillRate events a second for -duration, as the latency part
// offers it; then, beside the same load, a backfill at the default rate
// of as many rows as that rate publishes in -duration. Beside each it
// reports the live stream's commit-to-ack p50 and p99 (the consumer's, and
// the relay's own histogram), against the same load with no backfill. The
// backfill's rows a second under load are counted over the load's window,
// from its row in the table of backfills, when it outlasts the load.
func (b *bench) backfill(ctx context.Context, out io.Writer) error {
	if err := b.fillBackfillTable(ctx, b.c.rows); err != nil {
		return err
	}
	fmt.Fprintf(out, "### Backfill: %d rows with no rate limit (--rate 0), alone and beside a live load; beside it, one at the default rate\n\n", b.c.rows)
	fmt.Fprintf(out, "The live load: %d events/s, one per transaction, for %s, through the relay. Load average before: %s.\n\n",
		backfillRate, b.c.duration, loadAverage())
	alone, err := b.backfillRun(ctx, nil, "--where", "true", "--rate", "0")
	if err != nil {
		return err
	}
	logf("backfill alone: %d rows in %s", b.c.rows, alone.Round(time.Millisecond))
	control, err := b.latencyRun(ctx, "relay", backfillRate, latencySetup{relayHistogram: true})
	if err != nil {
		return fmt.Errorf("the live load alone: %w", err)
	}
	underLoad := backfillUnderLoad{args: []string{"--where", "true", "--rate", "0"}}
	beside, err := b.latencyRun(ctx, "relay", backfillRate, latencySetup{relayHistogram: true, beside: underLoad.start(b)})
	if err != nil {
		return fmt.Errorf("the live load beside the backfill: %w", err)
	}
	if underLoad.err != nil {
		return underLoad.err
	}
	logf("backfill beside the load: %d rows in %s, %d during the load's %s", b.c.rows, underLoad.took.Round(time.Millisecond), underLoad.rows, underLoad.window.Round(time.Millisecond))
	paced := int(min(int64(b.c.rows), int64(b.c.duration.Seconds())*2000))
	var upTo string // the paced run's rows: the first in key order
	if err := b.conn.QueryRow(ctx, "SELECT id::text FROM "+backfillTable+" ORDER BY id OFFSET $1 LIMIT 1", paced-1).Scan(&upTo); err != nil {
		return err
	}
	atDefault := backfillUnderLoad{args: []string{"--where", "id <= '" + upTo + "'"}}
	besideDefault, err := b.latencyRun(ctx, "relay", backfillRate, latencySetup{relayHistogram: true, beside: atDefault.start(b)})
	if err != nil {
		return fmt.Errorf("the live load beside the backfill at the default rate: %w", err)
	}
	if atDefault.err != nil {
		return atDefault.err
	}
	logf("backfill at the default rate beside the load: %d rows in %s", paced, atDefault.took.Round(time.Millisecond))
	fmt.Fprintf(out, "| run | backfill time | backfill rows/s | live p50 | live p99 | live p99 (relay's histogram) | live delivered |\n|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(out, "| backfill alone | %s | %.0f | | | | |\n", alone.Round(time.Millisecond), rate(b.c.rows, alone))
	fmt.Fprintf(out, "| live load alone | | | %s | %s | %s | %d / %d |\n", ms(control.p50), ms(control.p99), ms(control.relayP99), control.received, control.sent)
	fmt.Fprintf(out, "| backfill beside the live load | %s | %s | %s | %s | %s | %d / %d |\n",
		underLoad.took.Round(time.Millisecond), underLoad.rate(b.c.rows), ms(beside.p50), ms(beside.p99), ms(beside.relayP99), beside.received, beside.sent)
	fmt.Fprintf(out, "| %d rows at the default rate (2,000/s) beside the live load | %s | %s | %s | %s | %s | %d / %d |\n\n",
		paced, atDefault.took.Round(time.Millisecond), atDefault.rate(paced), ms(besideDefault.p50), ms(besideDefault.p99), ms(besideDefault.relayP99),
		besideDefault.received, besideDefault.sent)
	return nil
}

// fillBackfillTable creates backfillTable with rows rows, in transactions
// of -per-tx.
func (b *bench) fillBackfillTable(ctx context.Context, rows int) error {
	if err := b.exec(ctx, "DROP TABLE IF EXISTS "+backfillTable); err != nil {
		return err
	}
	if err := b.exec(ctx, "CREATE TABLE "+backfillTable+" (LIKE outbox INCLUDING ALL)"); err != nil {
		return err
	}
	if err := b.fillBacklog(ctx, backfillTable, rows, b.c.perTx); err != nil {
		return err
	}
	return b.exec(ctx, "VACUUM ANALYZE "+backfillTable)
}

// backfillRun runs `cdc-relay backfill` of backfillTable with args to a
// fresh broker (brokers nil) or to brokers, and returns its time.
func (b *bench) backfillRun(ctx context.Context, brokers []string, args ...string) (time.Duration, error) {
	if brokers == nil {
		broker, err := newBroker(true)
		if err != nil {
			return 0, err
		}
		defer broker.Close()
		brokers = broker.ListenAddrs()
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, b.relayBin, append([]string{"backfill", "--postgres-url", b.url, "--kafka-brokers", strings.Join(brokers, ","),
		"--table", backfillTable, "--topic-override", backfillTopic, "--log-level", "warn"}, args...)...)
	if o, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("backfill: %v\n%s", err, tail(string(o)))
	}
	return time.Since(start), nil
}

// backfillUnderLoad is a backfill run beside a latency run's load.
type backfillUnderLoad struct {
	args         []string // the backfill's --where and --rate
	took, window time.Duration
	rows         int64 // published while the load ran
	err          error
}

// rate is the backfill's rows a second under the load: over its whole
// run when it ended before the load, else over the load's window.
func (u *backfillUnderLoad) rate(rows int) string {
	if u.took <= u.window {
		return fmt.Sprintf("%.0f", rate(rows, u.took))
	}
	return fmt.Sprintf("%.0f while the load ran (%d rows in %s)", rate(int(u.rows), u.window), u.rows, u.window.Round(time.Millisecond))
}

// start returns the latencySetup.beside that runs the backfill: it starts
// it as the load starts, and its wait, called as the load ends, reads how
// far it got, then waits for it to finish.
func (u *backfillUnderLoad) start(b *bench) func(ctx context.Context, brokers []string) func() {
	return func(ctx context.Context, brokers []string) func() {
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			var err error
			if u.took, err = b.backfillRun(ctx, brokers, u.args...); err != nil && u.err == nil {
				u.err = err
			}
		}()
		return func() {
			u.window = time.Since(start)
			err := b.conn.QueryRow(ctx, "SELECT rows_published FROM cdc_relay_backfills WHERE table_name = $1", "public."+backfillTable).Scan(&u.rows)
			<-done
			if err != nil && u.err == nil {
				u.err = fmt.Errorf("read the backfill's row: %w", err)
			}
		}
	}
}
