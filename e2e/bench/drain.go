package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/relay"
)

// backlog is the shape of a drain's backlog.
type backlog struct {
	rows, perTx int
}

// drainResult is one reader's drain of one backlog.
type drainResult struct {
	wall    time.Duration
	cpu     time.Duration // the relay's user + system time
	peakRSS int64
}

// drain runs the drain rounds of each backlog shape and prints a table per
// shape.
func (b *bench) drain(ctx context.Context, out io.Writer) error {
	if b.c.apache {
		logf("starting Apache Kafka %s", kafkatest.Version)
		var err error
		if b.apache, err = kafkatest.Start(ctx, kafkatest.Options{}); err != nil {
			return err
		}
		defer func() { b.apache.Close(); b.apache = nil }()
	}
	shapes := []backlog{{b.c.rows, b.c.perTx}}
	if b.c.singleRows > 0 {
		shapes = append(shapes, backlog{b.c.singleRows, 1})
	}
	for _, s := range shapes {
		if err := b.drainShape(ctx, out, s); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) drainShape(ctx context.Context, out io.Writer, s backlog) error {
	load := loadAverage()
	var relays, recvs, apaches []drainResult
	for round := 0; round < b.c.rounds; round++ {
		r, v, a, err := b.drainRound(ctx, s, round%2 == 0)
		if err != nil {
			return err
		}
		if b.apache != nil {
			logf("round %d: relay into Apache Kafka %s (%.0f/s, %.2f µs CPU/event)", round+1, a.wall.Round(time.Millisecond), rate(s.rows, a.wall), perEvent(a.cpu, s.rows))
			apaches = append(apaches, a)
		}
		logf("round %d: relay %s (%.0f/s, %.2f µs CPU/event), pg_recvlogical %s (%.0f/s)", round+1,
			r.wall.Round(time.Millisecond), rate(s.rows, r.wall), perEvent(r.cpu, s.rows),
			v.wall.Round(time.Millisecond), rate(s.rows, v.wall))
		relays, recvs = append(relays, r), append(recvs, v)
	}
	wall := func(d drainResult) float64 { return float64(d.wall) }
	cpu := func(d drainResult) float64 { return float64(d.cpu) }
	rss := func(d drainResult) float64 { return float64(d.peakRSS) }
	row := func(name string, rs []drainResult) {
		w := time.Duration(median(rs, wall))
		fmt.Fprintf(out, "| %s | %s | %.0f | %.2f µs | %.1f MiB |\n", name, w.Round(time.Millisecond),
			rate(s.rows, w), perEvent(time.Duration(median(rs, cpu)), s.rows), median(rs, rss)/(1<<20))
	}
	fmt.Fprintf(out, "### Drain: %d rows, %d per transaction, %d keys, ~300-byte payloads (median of %d rounds)\n\n", s.rows, s.perTx, b.c.keys, b.c.rounds)
	fmt.Fprintf(out, "Load average before: %s.\n\n", load)
	fmt.Fprintf(out, "| | time | events/s | CPU per event | peak RSS |\n|---|---|---|---|---|\n")
	row("cdc-relay", relays)
	if len(apaches) > 0 {
		row("cdc-relay → Apache Kafka "+kafkatest.Version, apaches)
	}
	mv := time.Duration(median(recvs, wall))
	fmt.Fprintf(out, "| pg_recvlogical | %s | %.0f | | |\n", mv.Round(time.Millisecond), rate(s.rows, mv))
	fmt.Fprintf(out, "\nRelay / pg_recvlogical rate: **%.2f×**. Rounds:", float64(mv)/median(relays, wall))
	for i := range relays {
		fmt.Fprintf(out, " %s/%s", relays[i].wall.Round(time.Millisecond), recvs[i].wall.Round(time.Millisecond))
	}
	fmt.Fprintf(out, " (relay/pg_recvlogical).\n\n")
	return nil
}

// drainRound fills a backlog of shape s behind fresh slots, then drains it
// with the relay into kfake, with pg_recvlogical (in the order relayFirst
// says) and, with -apache, with the relay into Apache Kafka.
func (b *bench) drainRound(ctx context.Context, s backlog, relayFirst bool) (relay, recv, apache drainResult, err error) {
	if err = b.exec(ctx, "TRUNCATE outbox"); err != nil {
		return
	}
	slots := []string{"bench_relay", "bench_recv"}
	if b.apache != nil {
		slots = append(slots, "bench_apache")
	}
	for _, slot := range slots {
		if err = b.exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot); err != nil {
			return
		}
	}
	defer func() {
		for _, slot := range slots {
			b.dropSlot(ctx, slot)
		}
		_ = b.exec(ctx, "DELETE FROM cdc_relay_checkpoint")
	}()
	if err = b.fillBacklog(ctx, "outbox", s.rows, s.perTx); err != nil {
		return
	}
	var end string
	if err = b.conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&end); err != nil {
		err = fmt.Errorf("read the WAL insert position: %w", err)
		return
	}
	_ = b.exec(ctx, "CHECKPOINT")
	runRelay := func(slot string, brokers []string, res *drainResult) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err != nil {
			return err
		}
		defer cl.Close()
		// Created here, so the relay's own topic creation is not timed and
		// every broker has the same partitions.
		if err := createTopic(ctx, cl, benchTopic); err != nil {
			return err
		}
		base, err := ackedRecords(ctx, cl, benchTopic)
		if err != nil {
			return err
		}
		start := time.Now()
		p, err := b.startRelay(slot, brokers)
		if err != nil {
			return err
		}
		if err := waitAcked(ctx, cl, benchTopic, base+int64(s.rows), p, 10*time.Minute); err != nil {
			p.Kill()
			return err
		}
		*res = drainResult{wall: time.Since(start)}
		if res.cpu, err = p.CPU(); err != nil {
			p.Kill()
			return err
		}
		if res.peakRSS, err = p.PeakRSS(); err != nil {
			p.Kill()
			return err
		}
		return p.Stop(60 * time.Second)
	}
	runKfake := func() error {
		broker, err := newBroker(true)
		if err != nil {
			return err
		}
		defer broker.Close()
		return runRelay("bench_relay", broker.ListenAddrs(), &relay)
	}
	runRecv := func() error {
		bin, err := pgtemp.FindBin()
		if err != nil {
			return err
		}
		outFile := filepath.Join(b.tmp, "recv.out")
		defer os.Remove(outFile)
		start := time.Now()
		cmd := exec.Command(filepath.Join(bin, "pg_recvlogical"), "-d", b.url, "-S", "bench_recv", "--start",
			"-E", end, "-f", outFile, "--no-loop", "-o", "proto_version=1", "-o", "publication_names=cdc_relay")
		if o, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pg_recvlogical: %v\n%s", err, o)
		}
		recv = drainResult{wall: time.Since(start)}
		return nil
	}
	steps := []func() error{runKfake, runRecv}
	if !relayFirst {
		steps[0], steps[1] = steps[1], steps[0]
	}
	if b.apache != nil {
		steps = append(steps, func() error { return runRelay("bench_apache", []string{b.apache.Addr()}, &apache) })
	}
	for _, step := range steps {
		if err = step(); err != nil {
			return
		}
	}
	return
}

// memory measures the relay's peak RSS while relaying one transaction of
// -rows rows.
func (b *bench) memory(ctx context.Context, out io.Writer) error {
	if err := b.exec(ctx, "TRUNCATE outbox"); err != nil {
		return err
	}
	broker, err := newBroker(true)
	if err != nil {
		return err
	}
	defer broker.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.ListenAddrs()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, benchTopic); err != nil {
		return err
	}
	defer b.dropSlot(ctx, "bench_memory")
	p, err := b.startRelay("bench_memory", broker.ListenAddrs())
	if err != nil {
		return err
	}
	defer p.Kill() // before the slot is dropped; a no-op after Stop
	if err := b.waitSlotActive(ctx, "bench_memory", p); err != nil {
		return err
	}
	if err := b.fillBacklog(ctx, "outbox", b.c.rows, b.c.rows); err != nil {
		return err
	}
	if err := waitAcked(ctx, cl, benchTopic, int64(b.c.rows), p, 10*time.Minute); err != nil {
		return err
	}
	rss, err := p.PeakRSS()
	if err != nil {
		return err
	}
	if err := p.Stop(60 * time.Second); err != nil {
		return err
	}
	lim := relay.DefaultConfig().Limits
	fmt.Fprintf(out, "### Memory: one %d-row transaction\n\nRelay peak RSS: **%.1f MiB** (default in-flight limits: %d events, %d MiB).\n\n",
		b.c.rows, float64(rss)/(1<<20), lim.Events, lim.Bytes>>20)
	return nil
}
