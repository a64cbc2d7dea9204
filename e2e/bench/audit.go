package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// auditTable is the table the audit part audits: the outbox's layout,
// apart from it. Its records go to the topic auditTemplate makes of its
// rows' aggregate type ("order").
const (
	auditTable    = "bench_audit"
	auditTemplate = "bench.audit.{aggregate_type}"
)

// audit measures `cdc-relay audit` of a clean table of -rows rows in
// transactions of -per-tx: the rows are published as the relay would
// publish them, in commit order (publishInCommitOrder), to a kfake broker
// of this process (which keeps them), then audited with
// no rate limit on either side (--rate 0 --kafka-rate 0) and
// --order-column created_at, -repeat times: its time, and its peak
// memory (the child's maximum resident set, from getrusage). A benchmark
// reports; it asserts only that the audit found nothing.
func (b *bench) audit(ctx context.Context, out io.Writer) error {
	if err := b.exec(ctx, "DROP TABLE IF EXISTS "+auditTable); err != nil {
		return err
	}
	if err := b.exec(ctx, "CREATE TABLE "+auditTable+" (LIKE outbox INCLUDING ALL)"); err != nil {
		return err
	}
	if err := b.fillBacklog(ctx, auditTable, b.c.rows, b.c.perTx); err != nil {
		return err
	}
	if err := b.exec(ctx, "VACUUM ANALYZE "+auditTable); err != nil {
		return err
	}
	broker, err := newBroker(false)
	if err != nil {
		return err
	}
	defer broker.Close()
	brokers := strings.Join(broker.ListenAddrs(), ",")
	if err := b.publishInCommitOrder(ctx, broker.ListenAddrs()); err != nil {
		return err
	}
	fmt.Fprintf(out, "### Audit: a clean %d-row table (%d keys, transactions of %d), no rate limit\n\n", b.c.rows, b.c.keys, b.c.perTx)
	fmt.Fprintf(out, "Load average before: %s.\n\n| run | time | rows/s | peak RSS | findings |\n|---|---|---|---|---|\n", loadAverage())
	for i := range b.c.repeat {
		took, rss, findings, err := b.auditRun(ctx, brokers)
		if err != nil {
			return err
		}
		logf("audit %d: %s, peak RSS %d MiB, %s", i+1, took.Round(time.Millisecond), rss>>20, findings)
		fmt.Fprintf(out, "| %d | %s | %.0f | %d MiB | %s |\n", i+1, took.Round(time.Millisecond), rate(b.c.rows, took), rss>>20, findings)
	}
	fmt.Fprintln(out)
	return nil
}

// auditRun runs the audit once and returns its time, its peak resident
// set in bytes, and its findings in words.
func (b *bench) auditRun(ctx context.Context, brokers string) (time.Duration, int64, string, error) {
	cmd := exec.CommandContext(ctx, b.relayBin, "audit", "--postgres-url", b.url, "--kafka-brokers", brokers,
		"--table", auditTable, "--topic-template", auditTemplate, "--order-column", "created_at",
		"--rate", "0", "--kafka-rate", "0", "--json", "--log-level", "warn")
	start := time.Now()
	o, err := cmd.Output()
	took := time.Since(start)
	if err != nil {
		return 0, 0, "", fmt.Errorf("audit: %v\n%s", err, tail(string(o)))
	}
	var res struct {
		Rows            int64
		Matched         int64 `json:"records_matched"`
		MissingCount    int64 `json:"missing_count"`
		DuplicateCount  int64 `json:"duplicate_count"`
		WrongTopicCount int64 `json:"wrong_topic_count"`
		OutOfOrderCount int64 `json:"out_of_order_count"`
	}
	if err := json.Unmarshal(o, &res); err != nil {
		return 0, 0, "", fmt.Errorf("audit's JSON: %v", err)
	}
	if res.Rows != int64(b.c.rows) || res.Matched != int64(b.c.rows) {
		return 0, 0, "", fmt.Errorf("audit read %d rows and matched %d records, want %d", res.Rows, res.Matched, b.c.rows)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss << 10 // KiB on Linux
	}
	return took, rss, fmt.Sprintf("%d missing, %d duplicates, %d wrong topic, %d out of order", res.MissingCount, res.DuplicateCount, res.WrongTopicCount, res.OutOfOrderCount), nil
}

// publishInCommitOrder produces a record of each row of auditTable to
// its topic, in the order of created_at (each transaction's rows have
// one), with the row's key and "id" header, as the relay streams them: a
// backfill publishes in the primary key's order, which for a uuid is not
// commit order, and the audit would rightly say so.
func (b *bench) publishInCommitOrder(ctx context.Context, brokers []string) error {
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	rows, err := b.conn.Query(ctx, "SELECT id::text, aggregate_id, aggregate_type, created_at FROM "+auditTable+" ORDER BY created_at, id")
	if err != nil {
		return err
	}
	defer rows.Close()
	var failed error
	var once sync.Once
	for rows.Next() {
		var id, key, agg string
		var at time.Time
		if err := rows.Scan(&id, &key, &agg, &at); err != nil {
			return err
		}
		r := &kgo.Record{Topic: strings.ReplaceAll(auditTemplate, "{aggregate_type}", agg), Key: []byte(key), Value: []byte("{}"), Timestamp: at,
			Headers: []kgo.RecordHeader{{Key: "id", Value: []byte(id)}}}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				once.Do(func() { failed = err })
			}
		})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if failed != nil {
		return fmt.Errorf("produce: %w", failed)
	}
	logf("audit: %d rows published in commit order in %s", b.c.rows, time.Since(start).Round(time.Millisecond))
	return nil
}
