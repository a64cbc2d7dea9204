package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cdc-relay/cdc-relay/backfill"
)

// backfillLatencyRound is one round of the backfill-latency part: the
// live stream's commit-to-ack p99 alone, then beside a backfill at the
// default rate.
type backfillLatencyRound struct {
	alone, beside latencyRun
	backfillTook  time.Duration
}

// ratio is the round's p99 beside the backfill over its p99 alone.
func (r backfillLatencyRound) ratio() float64 { return float64(r.beside.p99) / float64(r.alone.p99) }

// backfillLatency measures the claim that a backfill at its default rate
// (backfill.DefaultRate rows a second) keeps the live stream's latency:
// -repeat rounds, each a latency run of backfillRate events a second
// alone for -duration, then the same beside a backfill at the default
// rate of -duration's worth of rows. Alternating the runs spreads a stall
// of a shared machine over both sides. It prints each round's p99s and
// their ratio, and the medians; the claim is a ratio of at most 2.
func (b *bench) backfillLatency(ctx context.Context, out io.Writer) error {
	rows := int(b.c.duration.Seconds() * backfill.DefaultRate)
	if err := b.fillBackfillTable(ctx, rows); err != nil {
		return err
	}
	fmt.Fprintf(out, "### Backfill latency: the live stream's p99 alone and beside a backfill at the default rate (%d rows/s)\n\n", backfill.DefaultRate)
	fmt.Fprintf(out, "The live load: %d events/s, one per transaction, for %s a run, through the relay; beside it a backfill of %d rows at the default rate; %d rounds, alternating. Load average before: %s.\n\n",
		backfillRate, b.c.duration, rows, b.c.repeat, loadAverage())
	var rounds []backfillLatencyRound
	for i := range b.c.repeat {
		r, err := b.backfillLatencyRound(ctx)
		if err != nil {
			return fmt.Errorf("round %d: %w", i+1, err)
		}
		logf("round %d: live p99 %s alone, %s beside the backfill (%.2fx)", i+1, ms(r.alone.p99), ms(r.beside.p99), r.ratio())
		rounds = append(rounds, r)
	}
	fmt.Fprintf(out, "| round | live p99 alone | live p99 beside the backfill | ratio | backfill time | live delivered alone / beside |\n|---|---|---|---|---|---|\n")
	for i, r := range rounds {
		fmt.Fprintf(out, "| %d | %s | %s | %.2fx | %s | %d / %d, %d / %d |\n", i+1, ms(r.alone.p99), ms(r.beside.p99), r.ratio(),
			r.backfillTook.Round(time.Millisecond), r.alone.received, r.alone.sent, r.beside.received, r.beside.sent)
	}
	alone := medianP99(rounds, func(r backfillLatencyRound) latencyRun { return r.alone })
	beside := medianP99(rounds, func(r backfillLatencyRound) latencyRun { return r.beside })
	fmt.Fprintf(out, "\nMedian live p99: %s alone, %s beside the backfill: %.2fx (the claim: at most 2x).\n\n", ms(alone), ms(beside), float64(beside)/float64(alone))
	return nil
}

// backfillLatencyRound runs one latency run alone, then one beside a
// backfill of the whole backfill table at the default rate.
func (b *bench) backfillLatencyRound(ctx context.Context) (backfillLatencyRound, error) {
	var r backfillLatencyRound
	var err error
	if r.alone, err = b.latencyRun(ctx, "relay", backfillRate, latencySetup{}); err != nil {
		return r, fmt.Errorf("the live load alone: %w", err)
	}
	paced := backfillUnderLoad{args: []string{"--where", "true"}}
	if r.beside, err = b.latencyRun(ctx, "relay", backfillRate, latencySetup{beside: paced.start(b)}); err != nil {
		return r, fmt.Errorf("the live load beside the backfill: %w", err)
	}
	if paced.err != nil {
		return r, paced.err
	}
	r.backfillTook = paced.took
	return r, nil
}

// medianP99 is the median of the p99s of the runs side picks of rounds.
func medianP99(rounds []backfillLatencyRound, side func(backfillLatencyRound) latencyRun) time.Duration {
	var p99s []time.Duration
	for _, r := range rounds {
		p99s = append(p99s, side(r).p99)
	}
	slices.Sort(p99s)
	return time.Duration(median(p99s, func(d time.Duration) float64 { return float64(d) }))
}
