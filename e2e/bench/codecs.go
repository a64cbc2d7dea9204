package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

// codecs are the values of --kafka-compression the codecs part compares,
// none first: the others are measured against it.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// codecResult is one codec's drain of the batched backlog.
type codecResult struct {
	drainResult
	stored int64 // bytes the broker stored for the topic: its log segments
}

// codecDrain drains the batched backlog (-rows rows, -per-tx per
// transaction) into Apache Kafka once with each codec, each from its own
// slot into its own topic, -rounds times in an order that rotates, and
// prints the medians: time, events/s, the relay's CPU per event, and the
// bytes the broker stored (its log directories' sizes for the topic)
// against none. A real broker is needed: kfake keeps no segments to
// measure.
func (b *bench) codecDrain(ctx context.Context, out io.Writer) error {
	broker := b.apache
	if broker == nil {
		logf("starting Apache Kafka %s", kafkatest.Version)
		var err error
		if broker, err = kafkatest.Start(ctx, kafkatest.Options{}); err != nil {
			return err
		}
		defer broker.Close()
	}
	load := loadAverage()
	results := map[string][]codecResult{}
	for round := 0; round < b.c.rounds; round++ {
		order := append(slices.Clone(codecs[round%len(codecs):]), codecs[:round%len(codecs)]...)
		if err := b.codecRound(ctx, broker, round, order, results); err != nil {
			return err
		}
	}
	printCodecs(out, b.c, load, results)
	return nil
}

// codecRound fills one backlog behind a slot per codec and drains it with
// each codec in order, into the topic codecTopic(round, codec).
func (b *bench) codecRound(ctx context.Context, broker *kafkatest.Broker, round int, order []string, results map[string][]codecResult) error {
	if err := b.exec(ctx, "TRUNCATE outbox"); err != nil {
		return err
	}
	for _, codec := range order {
		if err := b.exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", "bench_codec_"+codec); err != nil {
			return err
		}
	}
	defer func() {
		for _, codec := range order {
			b.dropSlot(ctx, "bench_codec_"+codec)
		}
		_ = b.exec(ctx, "DELETE FROM cdc_relay_checkpoint")
	}()
	if err := b.fillBacklog(ctx, "outbox", b.c.rows, b.c.perTx); err != nil {
		return err
	}
	_ = b.exec(ctx, "CHECKPOINT")
	for _, codec := range order {
		r, err := b.codecRun(ctx, broker, codecTopic(round, codec), codec)
		if err != nil {
			return fmt.Errorf("codec %s: %w", codec, err)
		}
		logf("round %d: %s %s (%.0f/s, %.2f µs CPU/event), %.1f MiB stored", round+1, codec, r.wall.Round(time.Millisecond),
			rate(b.c.rows, r.wall), perEvent(r.cpu, b.c.rows), float64(r.stored)/(1<<20))
		results[codec] = append(results[codec], r)
	}
	return nil
}

// codecTopic is the topic of one codec's drain in one round.
func codecTopic(round int, codec string) string {
	return fmt.Sprintf("bench.codec.%d.%s", round, codec)
}

// codecRun drains the backlog from codec's slot into topic with
// --kafka-compression codec, and measures it.
func (b *bench) codecRun(ctx context.Context, broker *kafkatest.Broker, topic, codec string) (codecResult, error) {
	var res codecResult
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.Addr()))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, topic); err != nil {
		return res, err
	}
	start := time.Now()
	p, err := b.startRelay("bench_codec_"+codec, []string{broker.Addr()}, "--topic-template", topic, "--kafka-compression", codec)
	if err != nil {
		return res, err
	}
	defer p.Kill() // a no-op after Stop
	if err := waitAcked(ctx, cl, topic, int64(b.c.rows), p, 10*time.Minute); err != nil {
		return res, err
	}
	res.wall = time.Since(start)
	if res.cpu, err = p.CPU(); err != nil {
		return res, err
	}
	if res.peakRSS, err = p.PeakRSS(); err != nil {
		return res, err
	}
	if err := p.Stop(60 * time.Second); err != nil {
		return res, err
	}
	res.stored, err = storedBytes(ctx, cl, topic)
	return res, err
}

// storedBytes sums the sizes of topic's partitions in the brokers' log
// directories.
func storedBytes(ctx context.Context, cl *kgo.Client, topic string) (int64, error) {
	dirs, err := kadm.NewClient(cl).DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("describe the log directories: %w", err)
	}
	var n int64
	dirs.Each(func(d kadm.DescribedLogDir) {
		for _, part := range d.Topics[topic] {
			n += part.Size
		}
	})
	if n == 0 {
		return 0, fmt.Errorf("the brokers' log directories hold nothing of %s", topic)
	}
	return n, nil
}

// printCodecs prints the codecs' table: medians over the rounds.
func printCodecs(out io.Writer, c config, load string, results map[string][]codecResult) {
	wall := func(r codecResult) float64 { return float64(r.wall) }
	cpu := func(r codecResult) float64 { return float64(r.cpu) }
	stored := func(r codecResult) float64 { return float64(r.stored) }
	none := median(results["none"], stored)
	fmt.Fprintf(out, "### Codecs: %d rows, %d per transaction, %d keys, ~300-byte payloads, into Apache Kafka %s (median of %d rounds)\n\n",
		c.rows, c.perTx, c.keys, kafkatest.Version, c.rounds)
	fmt.Fprintf(out, "Load average before: %s.\n\n", load)
	fmt.Fprintf(out, "| --kafka-compression | time | events/s | relay CPU per event | bytes stored | against none |\n|---|---|---|---|---|---|\n")
	for _, codec := range codecs {
		rs := results[codec]
		w := time.Duration(median(rs, wall))
		s := median(rs, stored)
		fmt.Fprintf(out, "| %s | %s | %.0f | %.2f µs | %.1f MiB | %.0f%% |\n", codec, w.Round(time.Millisecond), rate(c.rows, w),
			perEvent(time.Duration(median(rs, cpu)), c.rows), s/(1<<20), 100*s/none)
	}
	fmt.Fprintln(out)
}
