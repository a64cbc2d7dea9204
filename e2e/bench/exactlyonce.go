package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/freeport"
	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

// The relay's delivery modes (`run --delivery`).
const (
	atLeastOnce = "at-least-once"
	exactlyOnce = "exactly-once"
)

// deliveryArgs are the `cdc-relay run` arguments that select mode: none
// for at-least-once, the default, so that it runs as every relay without
// the flag does.
func deliveryArgs(mode string) []string {
	if mode == atLeastOnce {
		return nil
	}
	return []string{"--delivery", mode}
}

// The exactlyonce part's backlogs end with one event of this aggregate
// type, in a transaction of its own, which the relay sends to
// sentinelTopic.
const (
	sentinelType  = "bench_sentinel"
	sentinelTopic = "outbox.event." + sentinelType
)

// eoBroker is a broker the exactlyonce part measures on.
type eoBroker struct {
	name string
	// addrs is a broker that serves every run (Apache Kafka); nil starts a
	// fresh kfake for each run.
	addrs []string
}

// eoKey names one series of the exactlyonce part: a broker and a delivery
// mode.
type eoKey struct{ broker, mode string }

// exactlyOnce compares the delivery modes (-delivery) on kfake and, with
// -apache, on Apache Kafka: the drain of each backlog shape, and the
// latency from commit to visible to a read_committed consumer at each of
// -eo-rates.
func (b *bench) exactlyOnce(ctx context.Context, out io.Writer) error {
	brokers := []eoBroker{{name: "kfake"}}
	if b.c.apache {
		if b.apache == nil {
			logf("starting Apache Kafka %s", kafkatest.Version)
			var err error
			if b.apache, err = kafkatest.Start(ctx, kafkatest.Options{}); err != nil {
				return err
			}
			defer func() { b.apache.Close(); b.apache = nil }()
		}
		brokers = append(brokers, eoBroker{name: "Apache Kafka " + kafkatest.Version, addrs: []string{b.apache.Addr()}})
	}
	fmt.Fprintf(out, "### Exactly-once against at-least-once\n\n")
	fmt.Fprintf(out, "Each mode drains the same backlog from its own slot, and runs the same offered load; "+
		"an event counts when a read_committed consumer can read it.\n\n")
	shapes := []backlog{{b.c.rows, b.c.perTx}}
	if b.c.singleRows > 0 {
		shapes = append(shapes, backlog{b.c.singleRows, 1})
	}
	for _, s := range shapes {
		if err := b.eoDrain(ctx, out, s, brokers); err != nil {
			return err
		}
	}
	if len(b.c.eoRates) == 0 {
		return nil
	}
	return b.eoLatency(ctx, out, brokers)
}

// modesInTurn is -delivery, reversed on odd rounds, so that neither mode
// always goes first.
func (b *bench) modesInTurn(round int) []string {
	modes := slices.Clone(b.c.deliveries)
	if round%2 == 1 {
		slices.Reverse(modes)
	}
	return modes
}

// eoDrain drains backlogs of shape s -rounds times with each mode on each
// broker and prints the medians.
func (b *bench) eoDrain(ctx context.Context, out io.Writer, s backlog, brokers []eoBroker) error {
	load := loadAverage()
	results := map[eoKey][]drainResult{}
	for round := 0; round < b.c.rounds; round++ {
		var keys []eoKey
		for _, br := range brokers {
			for _, mode := range b.modesInTurn(round) {
				keys = append(keys, eoKey{br.name, mode})
			}
		}
		res, err := b.eoDrainRound(ctx, s, brokers, keys)
		if err != nil {
			return err
		}
		for _, k := range keys {
			r := res[k]
			logf("round %d: %s, %s: %s (%.0f/s, %.2f µs CPU/event)", round+1, k.broker, k.mode,
				r.wall.Round(time.Millisecond), rate(s.rows, r.wall), perEvent(r.cpu, s.rows))
			results[k] = append(results[k], r)
		}
	}
	wall := func(d drainResult) float64 { return float64(d.wall) }
	cpu := func(d drainResult) float64 { return float64(d.cpu) }
	rss := func(d drainResult) float64 { return float64(d.peakRSS) }
	fmt.Fprintf(out, "#### Drain: %d rows, %d per transaction, %d keys, ~300-byte payloads (median of %d rounds)\n\n",
		s.rows, s.perTx, b.c.keys, b.c.rounds)
	fmt.Fprintf(out, "Load average before: %s.\n\n", load)
	fmt.Fprintf(out, "| broker | delivery | time | events/s | relay CPU per event | peak RSS |\n|---|---|---|---|---|---|\n")
	for _, br := range brokers {
		for _, mode := range b.c.deliveries {
			rs := results[eoKey{br.name, mode}]
			w := time.Duration(median(rs, wall))
			fmt.Fprintf(out, "| %s | %s | %s | %.0f | %.2f µs | %.1f MiB |\n", br.name, mode, w.Round(time.Millisecond),
				rate(s.rows, w), perEvent(time.Duration(median(rs, cpu)), s.rows), median(rs, rss)/(1<<20))
		}
	}
	fmt.Fprintln(out)
	if !slices.Contains(b.c.deliveries, atLeastOnce) || !slices.Contains(b.c.deliveries, exactlyOnce) {
		return nil
	}
	for _, br := range brokers {
		alo, eo := results[eoKey{br.name, atLeastOnce}], results[eoKey{br.name, exactlyOnce}]
		var rounds []string
		var ratios []float64
		for i := range alo {
			ratios = append(ratios, float64(alo[i].wall)/float64(eo[i].wall))
			rounds = append(rounds, fmt.Sprintf("%.2f×", ratios[i]))
		}
		fmt.Fprintf(out, "- %s: exactly-once drains at **%.2f×** the at-least-once rate (of the medians); in each round, "+
			"where both drained the same backlog one after the other: %s (median %.2f×).\n",
			br.name, median(alo, wall)/median(eo, wall), strings.Join(rounds, ", "), median(ratios, func(r float64) float64 { return r }))
	}
	fmt.Fprintln(out)
	return nil
}

// eoDrainRound fills one backlog of shape s, and its sentinel, behind a
// fresh slot for each of keys, then drains it with each in turn.
func (b *bench) eoDrainRound(ctx context.Context, s backlog, brokers []eoBroker, keys []eoKey) (map[eoKey]drainResult, error) {
	if err := b.exec(ctx, "TRUNCATE outbox"); err != nil {
		return nil, err
	}
	slots := map[eoKey]string{}
	defer func() {
		for _, slot := range slots {
			b.dropSlot(ctx, slot)
		}
		_ = b.exec(ctx, "DELETE FROM cdc_relay_checkpoint")
	}()
	for _, k := range keys {
		b.runs++
		slot := fmt.Sprintf("bench_eo_%d", b.runs)
		if err := b.exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot); err != nil {
			return nil, err
		}
		slots[k] = slot
	}
	if err := b.fillBacklog(ctx, "outbox", s.rows, s.perTx); err != nil {
		return nil, err
	}
	if err := b.exec(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ($1, 'sentinel', 'Sentinel', '{}')`, sentinelType); err != nil {
		return nil, err
	}
	_ = b.exec(ctx, "CHECKPOINT")
	res := map[eoKey]drainResult{}
	for _, k := range keys {
		i := slices.IndexFunc(brokers, func(br eoBroker) bool { return br.name == k.broker })
		r, err := b.eoDrainOne(ctx, slots[k], brokers[i].addrs, k.mode, int64(s.rows))
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", k.broker, k.mode, err)
		}
		res[k] = r
	}
	return res, nil
}

// eoDrainOne drains the backlog of n events and its sentinel from slot
// with the relay in mode, into addrs (nil: a fresh kfake that discards
// record bytes), timed from starting the relay until every event is
// visible to a read_committed consumer (see readVisible).
func (b *bench) eoDrainOne(ctx context.Context, slot string, addrs []string, mode string, n int64) (drainResult, error) {
	var res drainResult
	if addrs == nil {
		broker, err := newBroker(true)
		if err != nil {
			return res, err
		}
		defer broker.Close()
		addrs = broker.ListenAddrs()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	// Created here, so the relay's own topic creation is not timed and
	// every broker has the same partitions.
	if err := createTopic(ctx, cl, benchTopic); err != nil {
		return res, err
	}
	if err := kafkatest.CreateTopic(ctx, cl, sentinelTopic, 1, nil); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return res, err
	}
	if _, err := topicEnds(ctx, cl, benchTopic, benchPartitions); err != nil {
		return res, err
	}
	if _, err := topicEnds(ctx, cl, sentinelTopic, 1); err != nil {
		return res, err
	}
	base, err := readVisible(ctx, cl)
	if err != nil {
		return res, err
	}
	port, err := freeport.Get()
	if err != nil {
		return res, err
	}
	start := time.Now()
	p, err := b.startRelay(slot, addrs, append(deliveryArgs(mode), "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port))...)
	if err != nil {
		return res, err
	}
	defer p.Kill() // before the slot is dropped; a no-op after Stop
	var last visible
	err = poll(ctx, 10*time.Minute, func() (bool, error) {
		var err error
		if last, err = readVisible(ctx, cl); err != nil {
			return false, err
		}
		if last.done(base, n) {
			return true, nil
		}
		if !p.Running() {
			return false, fmt.Errorf("relay exited (%v)", p.Err())
		}
		return false, nil
	})
	if err != nil {
		return res, fmt.Errorf("%d of %d events visible, sentinel visible %v: %w\n%s",
			last.bench-base.bench, n, last.sentinel > base.sentinel, err, tail(p.Log()))
	}
	res.wall = time.Since(start)
	if res.cpu, err = p.CPU(); err != nil {
		return res, err
	}
	if res.peakRSS, err = p.PeakRSS(); err != nil {
		return res, err
	}
	return res, p.Stop(60 * time.Second)
}

// visible is what a read_committed consumer can read of the bench's
// topics: the sums of the last stable offsets of benchTopic's partitions
// and of sentinelTopic's, and whether every partition of benchTopic has
// its last stable offset at its end (no transaction open on it).
type visible struct {
	bench, sentinel int64
	settled         bool
}

// done reports whether the backlog of n events that ends with the
// sentinel is visible, counted from base. The sentinel's transaction is
// the last one in PostgreSQL, so in exactly-once mode it commits in the
// last Kafka transaction, after every earlier one completed; the count and
// settled are what decides in at-least-once mode, where the sentinel may
// be acked before events on other partitions. (In exactly-once mode the
// count includes the commit markers, so it is only a necessary
// condition there.)
func (v visible) done(base visible, n int64) bool {
	return v.sentinel > base.sentinel && v.bench >= base.bench+n && v.settled
}

// readVisible lists the last stable offsets (what read_committed reads)
// of benchTopic and sentinelTopic, and the end offsets of benchTopic.
func readVisible(ctx context.Context, cl *kgo.Client) (visible, error) {
	adm := kadm.NewClient(cl)
	stable, err := adm.ListCommittedOffsets(ctx, benchTopic, sentinelTopic)
	if err == nil {
		err = stable.Error()
	}
	if err != nil {
		return visible{}, fmt.Errorf("list last stable offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, benchTopic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return visible{}, fmt.Errorf("list end offsets: %w", err)
	}
	v := visible{settled: true}
	stable.Each(func(o kadm.ListedOffset) {
		switch o.Topic {
		case benchTopic:
			v.bench += o.Offset
			if end, ok := ends.Lookup(o.Topic, o.Partition); !ok || end.Offset != o.Offset {
				v.settled = false
			}
		case sentinelTopic:
			v.sentinel += o.Offset
		}
	})
	return v, nil
}

// eoLatency runs each of -eo-rates -repeat times with each mode on each
// broker, read by a read_committed consumer, and prints the medians and
// the relay's own commit-to-ack histogram.
func (b *bench) eoLatency(ctx context.Context, out io.Writer, brokers []eoBroker) error {
	type key struct {
		eoKey
		rate int
	}
	runs := map[key][]latencyRun{}
	load := loadAverage()
	for rep := 1; rep <= b.c.repeat; rep++ {
		for _, br := range brokers {
			for _, mode := range b.modesInTurn(rep - 1) {
				for _, offered := range b.c.eoRates {
					r, err := b.latencyRun(ctx, "relay", offered, latencySetup{
						brokers: br.addrs, relayArgs: deliveryArgs(mode), readCommitted: true, relayHistogram: true})
					if err != nil {
						return fmt.Errorf("%s, %s at %d/s: %w", br.name, mode, offered, err)
					}
					logf("%s, %s at %d/s, run %d: p50 %s p99 %s max %s, %d/%d received, bounded %v; relay's p50 %s p99 %s over %.0f events; CPU %s",
						br.name, mode, offered, rep, ms(r.p50), ms(r.p99), ms(r.max), r.received, r.sent, r.bounded,
						ms(r.relayP50), ms(r.relayP99), r.relayCount, r.cpu)
					k := key{eoKey{br.name, mode}, offered}
					runs[k] = append(runs[k], r)
				}
			}
		}
	}
	fmt.Fprintf(out, "#### Latency: commit to visible to a read_committed consumer, one event per transaction, %s per run, %d runs per rate\n\n",
		b.c.duration, b.c.repeat)
	fmt.Fprintf(out, "Load average before: %s. p50 and p99 are the median of the runs, the range in brackets. "+
		"The relay's own commit-to-ack (`%s`, the median of the runs, interpolated within its buckets) is beside it. "+
		"CPU is in %% of one core (the machine has 2), the median of the runs.\n\n", load, commitToAckMetric)
	fmt.Fprintf(out, "| broker | delivery | offered/s | committed/s | p50 | p99 | max | delivered | lag bounded | relay's commit-to-ack p50 / p99 | relay CPU | idle |\n")
	fmt.Fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, br := range brokers {
		for _, mode := range b.c.deliveries {
			for _, offered := range b.c.eoRates {
				rs := runs[key{eoKey{br.name, mode}, offered}]
				var sent, received, bounded int
				var worst time.Duration
				for _, r := range rs {
					sent, received, worst = sent+r.sent, received+r.received, max(worst, r.max)
					if r.bounded {
						bounded++
					}
				}
				p := latencyPoint{rate: offered, runs: rs}
				relay := func(f func(latencyRun) time.Duration) string {
					return num(time.Duration(median(rs, func(r latencyRun) float64 { return float64(f(r)) })))
				}
				fmt.Fprintf(out, "| %s | %s | %d | %.0f | %s | %s | %s | %d / %d | %d of %d runs | %s / %s ms | %s | %s |\n",
					br.name, mode, offered, median(rs, func(r latencyRun) float64 { return r.achieved }),
					spread(p.p50s()), spread(p.p99s()), ms(worst), received, sent, bounded, len(rs),
					relay(func(r latencyRun) time.Duration { return r.relayP50 }),
					relay(func(r latencyRun) time.Duration { return r.relayP99 }),
					pct(median(rs, func(r latencyRun) float64 { return r.cpu.group["relay"] })),
					pct(median(rs, func(r latencyRun) float64 { return r.cpu.idle })))
			}
		}
	}
	fmt.Fprintf(out, "\nEvery run, p50 / p99 in ms, then the relay's p50 / p99:\n\n")
	for _, br := range brokers {
		for _, mode := range b.c.deliveries {
			for _, offered := range b.c.eoRates {
				var cells []string
				for _, r := range runs[key{eoKey{br.name, mode}, offered}] {
					cells = append(cells, fmt.Sprintf("%s / %s (%s / %s)", num(r.p50), num(r.p99), num(r.relayP50), num(r.relayP99)))
				}
				fmt.Fprintf(out, "- %s, %s, %d/s: %s\n", br.name, mode, offered, strings.Join(cells, ", "))
			}
		}
	}
	fmt.Fprintln(out)
	return nil
}
