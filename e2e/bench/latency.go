package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

type latencyPoint struct {
	rate           int
	achieved       float64 // events/s the clients committed
	p50, p99, max  time.Duration
	sent, received int
	bounded        bool
}

type latencySeries struct {
	name   string
	points []latencyPoint
}

// latency runs each offered rate against the relay or the poller.
func (b *bench) latency(ctx context.Context, out io.Writer, who string) (latencySeries, error) {
	series := latencySeries{name: who}
	for _, r := range b.c.rates {
		p, err := b.latencyRun(ctx, who, r)
		if err != nil {
			return series, err
		}
		logf("%s at %d/s: p50 %s p99 %s max %s, %d/%d received, bounded %v", who, r, p.p50, p.p99, p.max, p.received, p.sent, p.bounded)
		series.points = append(series.points, p)
	}
	title := map[string]string{"relay": "cdc-relay", "poller": "polling baseline (seed 000: batch 50, every 500 ms, rows older than 1 s)"}[who]
	fmt.Fprintf(out, "### Latency, %s: one event per transaction, %s per rate\n\n", title, b.c.duration)
	fmt.Fprintf(out, "| offered/s | committed/s | p50 | p99 | max | delivered | lag bounded |\n|---|---|---|---|---|---|---|\n")
	for _, p := range series.points {
		fmt.Fprintf(out, "| %d | %.0f | %s | %s | %s | %d / %d | %v |\n", p.rate, p.achieved, ms(p.p50), ms(p.p99), ms(p.max), p.received, p.sent, yesNo(p.bounded))
	}
	fmt.Fprintln(out)
	return series, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (b *bench) latencyRun(ctx context.Context, who string, offered int) (latencyPoint, error) {
	pt := latencyPoint{rate: offered}
	broker, err := newBroker(false)
	if err != nil {
		return pt, err
	}
	defer broker.Close()
	table, topic := "outbox", "outbox.event.order"
	if err := b.exec(ctx, "TRUNCATE outbox"); err != nil {
		return pt, err
	}
	var stopSource func() error
	switch who {
	case "relay":
		slot := fmt.Sprintf("bench_lat_%d", offered)
		p, err := b.startRelay(slot, broker.ListenAddrs())
		if err != nil {
			return pt, err
		}
		defer func() { _ = b.exec(ctx, "SELECT pg_drop_replication_slot($1)", slot) }()
		if err := b.waitSlotActive(ctx, slot); err != nil {
			p.stop()
			return pt, err
		}
		stopSource = p.stop
	case "poller":
		table, topic = "poll_outbox", "poll.order"
		if err := b.createPollTable(ctx); err != nil {
			return pt, err
		}
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- b.poll(pctx, broker.ListenAddrs(), topic, nil) }()
		stopSource = func() error { cancel(); return <-done }
	}

	n := offered * int(b.c.duration/time.Second)
	commitAt := make([]int64, n)
	recvAt := make([]int64, n)
	var received atomic.Int64
	var warm atomic.Bool

	consumer, err := kgo.NewClient(kgo.SeedBrokers(broker.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.AllowAutoTopicCreation())
	if err != nil {
		return pt, err
	}
	defer consumer.Close()
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go func() {
		for cctx.Err() == nil {
			f := consumer.PollFetches(cctx)
			now := time.Now().UnixNano()
			f.EachRecord(func(r *kgo.Record) {
				warm.Store(true)
				if seq, ok := seqOf(r.Value); ok && seq < n && recvAt[seq] == 0 {
					recvAt[seq] = now
					received.Add(1)
				}
			})
		}
	}()
	// Create the topic before the clock starts.
	if err := b.warmup(ctx, table, &warm); err != nil {
		return pt, err
	}

	workers := max(2, min(16, offered/500))
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			conn, err := pgx.Connect(ctx, b.url)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(context.Background())
			for i := w; i < n; i += workers {
				due := start.Add(time.Duration(int64(i) * int64(time.Second) / int64(offered)))
				if d := time.Until(due); d > 0 {
					time.Sleep(d) // the offered schedule (open loop), not a synchronisation
				}
				if _, err := conn.Exec(ctx, "INSERT INTO "+table+` (aggregate_type, aggregate_id, event_type, payload)
					VALUES ('order', $1, 'OrderPlaced', jsonb_build_object('seq', $2::int, 'pad', repeat('x', 240)))`,
					"key-"+strconv.Itoa(i%b.c.keys), i); err != nil {
					errs <- err
					return
				}
				commitAt[i] = time.Now().UnixNano()
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		return pt, fmt.Errorf("load: %w", err)
	}
	pt.sent = n
	pt.achieved = float64(n) / elapsed.Seconds()
	// Bounded lag: everything arrives within 10 s of the load's end.
	deadline := time.Now().Add(10 * time.Second)
	for received.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	ccancel()
	pt.received = int(received.Load())
	pt.bounded = pt.received == n
	if err := stopSource(); err != nil && who == "relay" {
		return pt, fmt.Errorf("stop relay: %w", err)
	}
	var lat []time.Duration
	for i := 0; i < n; i++ {
		if recvAt[i] != 0 && commitAt[i] != 0 {
			lat = append(lat, time.Duration(max(0, recvAt[i]-commitAt[i])))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		pt.p50 = lat[len(lat)/2]
		pt.p99 = lat[len(lat)*99/100]
		pt.max = lat[len(lat)-1]
	}
	return pt, nil
}

// warmup inserts one event outside the measurement (its seq -1 is not
// counted) and waits until the consumer reads it: the topic exists and the
// pipeline is warm before the clock starts.
func (b *bench) warmup(ctx context.Context, table string, warm *atomic.Bool) error {
	if err := b.exec(ctx, "INSERT INTO "+table+` (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('order', 'warmup', 'Warmup', '{"seq": -1}')`); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for !warm.Load() {
		if time.Now().After(deadline) {
			return fmt.Errorf("warm-up event not read back within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// seqOf finds "seq": N in a JSON payload.
func seqOf(v []byte) (int, bool) {
	i := bytes.Index(v, []byte(`"seq": `))
	if i < 0 {
		return 0, false
	}
	v = v[i+7:]
	j := 0
	for j < len(v) && (v[j] >= '0' && v[j] <= '9' || v[j] == '-') {
		j++
	}
	n, err := strconv.Atoi(string(v[:j]))
	return n, err == nil && n >= 0
}
