package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/freeport"
)

// latencyRun is one run at one offered rate.
type latencyRun struct {
	achieved       float64 // events/s the clients committed
	p50, p99, max  time.Duration
	sent, received int
	bounded        bool
	cpu            cpuUse // while the load ran
	// relayP50 and relayP99 are read from the relay's own commit-to-ack
	// histogram over the load (latencySetup.relayHistogram), relayCount
	// the events it counted; zero without it.
	relayP50, relayP99 time.Duration
	relayCount         float64
}

// latencyPoint is the runs at one offered rate.
type latencyPoint struct {
	rate int
	runs []latencyRun
}

// p50s and p99s are the runs' percentiles.
func (p latencyPoint) p50s() []time.Duration {
	return collect(p.runs, func(r latencyRun) time.Duration { return r.p50 })
}
func (p latencyPoint) p99s() []time.Duration {
	return collect(p.runs, func(r latencyRun) time.Duration { return r.p99 })
}

func collect[T, V any](xs []T, f func(T) V) []V {
	out := make([]V, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// latencySeries is the relay's or the poller's points.
type latencySeries struct {
	name   string
	points []latencyPoint
}

// latency runs each offered rate -repeat times against the relay or the
// poller, the rates in turn within each repetition, and prints the
// medians and ranges.
func (b *bench) latency(ctx context.Context, out io.Writer, who string) (latencySeries, error) {
	title := map[string]string{
		"relay":  "cdc-relay",
		"poller": "polling baseline (a 500 ms polling outbox like the ones teams run today: batch 50, rows older than 1 s)",
	}[who]
	series := latencySeries{name: map[string]string{"relay": "cdc-relay", "poller": "500 ms poller"}[who]}
	for _, r := range b.c.rates {
		series.points = append(series.points, latencyPoint{rate: r})
	}
	load := loadAverage()
	for rep := 1; rep <= b.c.repeat; rep++ {
		for i := range series.points {
			pt := &series.points[i]
			r, err := b.latencyRun(ctx, who, pt.rate, latencySetup{})
			if err != nil {
				return series, fmt.Errorf("%s at %d/s: %w", who, pt.rate, err)
			}
			logf("%s at %d/s, run %d: p50 %s p99 %s max %s, %d/%d received, bounded %v; CPU %s", who, pt.rate, rep,
				ms(r.p50), ms(r.p99), ms(r.max), r.received, r.sent, r.bounded, r.cpu)
			pt.runs = append(pt.runs, r)
		}
	}

	fmt.Fprintf(out, "### Latency, %s: one event per transaction, %s per run, %d runs per rate\n\n", title, b.c.duration, b.c.repeat)
	fmt.Fprintf(out, "Load average before: %s. p50 and p99 are the median of the runs, the range in brackets.\n\n", load)
	fmt.Fprintf(out, "| offered/s | committed/s | p50 | p99 | max | delivered | lag bounded |\n|---|---|---|---|---|---|---|\n")
	for _, p := range series.points {
		var sent, received, bounded int
		var worst time.Duration
		for _, r := range p.runs {
			sent, received, worst = sent+r.sent, received+r.received, max(worst, r.max)
			if r.bounded {
				bounded++
			}
		}
		committed := median(p.runs, func(r latencyRun) float64 { return r.achieved })
		fmt.Fprintf(out, "| %d | %.0f | %s | %s | %s | %d / %d | %d of %d runs |\n", p.rate, committed,
			spread(p.p50s()), spread(p.p99s()), ms(worst), received, sent, bounded, len(p.runs))
	}
	fmt.Fprintf(out, "\nEvery run, p50 / p99 in ms:\n\n")
	for _, p := range series.points {
		var runs []string
		for _, r := range p.runs {
			runs = append(runs, num(r.p50)+" / "+num(r.p99))
		}
		fmt.Fprintf(out, "- %d/s: %s\n", p.rate, strings.Join(runs, ", "))
	}
	fmt.Fprintln(out)
	if who == "relay" {
		b.printCPU(out, series)
	}
	return series, nil
}

// printCPU prints where the CPU went while the load ran: the median over
// the runs of each group's use, in percent of one core.
func (b *bench) printCPU(out io.Writer, series latencySeries) {
	fmt.Fprintf(out, "CPU while the load ran, %% of one core (the machine has %d; median of the runs). "+
		"Other PG backends are the load's connections and the relay's queries; the bench process is the load generator's client side, "+
		"the consumer and the in-process broker; the rest of the machine is every other process, "+
		"interrupt handling (the loopback network's softirq) and time the hypervisor took (steal).\n\n", runtime.NumCPU())
	heads := []string{"offered/s"}
	for _, g := range cpuGroups {
		heads = append(heads, g.heading)
	}
	heads = append(heads, "rest of the machine", "idle")
	fmt.Fprintf(out, "| %s |\n|%s\n", strings.Join(heads, " | "), strings.Repeat("---|", len(heads)))
	for _, p := range series.points {
		cells := []string{strconv.Itoa(p.rate)}
		for _, g := range cpuGroups {
			cells = append(cells, pct(median(p.runs, func(r latencyRun) float64 { return r.cpu.group[g.key] })))
		}
		cells = append(cells, pct(median(p.runs, func(r latencyRun) float64 { return r.cpu.rest })),
			pct(median(p.runs, func(r latencyRun) float64 { return r.cpu.idle })))
		fmt.Fprintf(out, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(out)
}

func pct(cores float64) string { return fmt.Sprintf("%.0f%%", cores*100) }

// String is the CPU use in percent of one core, for the log.
func (u cpuUse) String() string {
	var parts []string
	for _, g := range cpuGroups {
		parts = append(parts, g.key+" "+pct(u.group[g.key]))
	}
	return strings.Join(append(parts, "rest "+pct(u.rest), "idle "+pct(u.idle)), ", ")
}

func ms(d time.Duration) string { return num(d) + " ms" }

// num is d in milliseconds, without the unit.
func num(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

// spread is the median of ds with their range: "7.4 ms (6.3–9.0)".
func spread(ds []time.Duration) string {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	med := time.Duration(median(ds, func(d time.Duration) float64 { return float64(d) }))
	if len(ds) == 1 {
		return ms(med)
	}
	return fmt.Sprintf("%s (%s–%s)", ms(med), num(ds[0]), num(ds[len(ds)-1]))
}

// latencySetup says where a latency run's events go and how they are read
// back; the zero value is the relay (or the poller) into a fresh kfake,
// read by a read_uncommitted consumer.
type latencySetup struct {
	// brokers is a broker that outlives the run (Apache Kafka); nil starts
	// a fresh kfake for the run. The consumer starts at the topic's end
	// offsets either way, so earlier runs' records are not read.
	brokers []string
	// relayArgs are extra arguments for `cdc-relay run`.
	relayArgs []string
	// readCommitted makes the consumer read with isolation level
	// read_committed: a record counts when it is visible to such a
	// consumer, not when Kafka acked it.
	readCommitted bool
	// relayHistogram serves the relay's metrics on a free port and reads
	// its cdc_relay_commit_to_ack_seconds over the load.
	relayHistogram bool
	// beside, if set, starts something as the load starts (a backfill);
	// the function it returns is called as the load ends, and waits for
	// it.
	beside func(ctx context.Context, brokers []string) (wait func())
}

// latencyRun offers events at offered per second for -duration, one per
// transaction, to the relay or the poller, and measures commit-to-ack:
// from the client's COMMIT returning to the consumer reading the record.
func (b *bench) latencyRun(ctx context.Context, who string, offered int, setup latencySetup) (latencyRun, error) {
	var res latencyRun
	brokers := setup.brokers
	if brokers == nil {
		broker, err := newBroker(false)
		if err != nil {
			return res, err
		}
		defer broker.Close()
		brokers = broker.ListenAddrs()
	}
	table, topic := "outbox", benchTopic
	if who == "poller" {
		table, topic = "poll_outbox", "poll.order"
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return res, err
	}
	defer admin.Close()
	if err := createTopic(ctx, admin, topic); err != nil {
		return res, err
	}
	ends, err := topicEnds(ctx, admin, topic, benchPartitions)
	if err != nil {
		return res, err
	}
	from := map[int32]kgo.Offset{}
	for p, o := range ends {
		from[p] = kgo.NewOffset().At(o)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchMaxWait(100 * time.Millisecond), kgo.MetadataMinAge(100 * time.Millisecond)}
	if setup.readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	consumer, err := kgo.NewClient(opts...)
	if err != nil {
		return res, err
	}
	defer consumer.Close()
	if err := b.exec(ctx, "TRUNCATE outbox"); err != nil {
		return res, err
	}

	var stopSource func() error
	relayPid := 0
	metricsURL := ""
	switch who {
	case "relay":
		b.runs++
		slot := fmt.Sprintf("bench_latency_%d", b.runs)
		defer b.dropSlot(ctx, slot)
		args := slices.Clone(setup.relayArgs)
		if setup.relayHistogram {
			port, err := freeport.Get()
			if err != nil {
				return res, err
			}
			args = append(args, "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port))
			metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
		}
		p, err := b.startRelay(slot, brokers, args...)
		if err != nil {
			return res, err
		}
		defer p.Kill() // before the slot is dropped; a no-op after Stop
		if err := b.waitSlotActive(ctx, slot, p); err != nil {
			return res, err
		}
		relayPid = p.Pid()
		stopSource = func() error { return p.Stop(60 * time.Second) }
	case "poller":
		if err := b.createPollTable(ctx); err != nil {
			return res, err
		}
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- b.poll(pctx, brokers, topic, nil) }()
		stopSource = func() error { cancel(); return <-done }
	}

	n := offered * int(b.c.duration/time.Second)
	commitAt := make([]int64, n) // written by the load's workers, read after wg.Wait
	recvAt := make([]int64, n)   // written by the consumer, read after it has exited
	var received atomic.Int64
	warm, allIn, consumed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go func() {
		defer close(consumed)
		var warmOnce, allOnce sync.Once
		for cctx.Err() == nil {
			f := consumer.PollFetches(cctx)
			now := time.Now().UnixNano()
			f.EachRecord(func(r *kgo.Record) {
				warmOnce.Do(func() { close(warm) })
				if seq, ok := seqOf(r.Value); ok && seq < n && recvAt[seq] == 0 {
					recvAt[seq] = now
					if received.Add(1) == int64(n) {
						allOnce.Do(func() { close(allIn) })
					}
				}
			})
		}
	}()
	// Create the topic and warm the pipeline before the clock starts.
	if err := b.warmup(ctx, table, warm); err != nil {
		return res, err
	}

	workers := max(2, min(16, offered/500))
	conns := make([]*pgx.Conn, workers)
	for w := range conns {
		if conns[w], err = pgx.Connect(ctx, b.url); err != nil {
			return res, fmt.Errorf("load connection: %w", err)
		}
		defer conns[w].Close(context.Background())
	}
	watch, err := b.watchCPU(ctx, relayPid)
	if err != nil {
		return res, err
	}
	before, err := watch.sample()
	if err != nil {
		return res, err
	}
	var histBefore histogram
	if metricsURL != "" {
		if histBefore, err = scrapeHistogram(ctx, metricsURL, commitToAckMetric); err != nil {
			return res, err
		}
	}
	wait := func() {}
	if setup.beside != nil {
		wait = setup.beside(ctx, brokers)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	wait()
	after, err := watch.sample()
	if err != nil {
		return res, err
	}
	res.cpu = watch.use(before, after)
	close(errs)
	for err := range errs {
		return res, fmt.Errorf("load: %w", err)
	}
	res.sent = n
	res.achieved = float64(n) / elapsed.Seconds()
	// Bounded lag: everything arrives within 10 s of the load's end.
	select {
	case <-allIn:
	case <-time.After(10 * time.Second):
	}
	ccancel()
	<-consumed
	res.received = int(received.Load())
	res.bounded = res.received == n
	if metricsURL != "" {
		after, err := scrapeHistogram(ctx, metricsURL, commitToAckMetric)
		if err != nil {
			return res, err
		}
		h := after.sub(histBefore)
		res.relayP50, res.relayP99, res.relayCount = h.quantile(0.50), h.quantile(0.99), h.count()
	}
	if err := stopSource(); err != nil {
		return res, fmt.Errorf("stop the %s: %w", who, err)
	}
	var lat []time.Duration
	for i := 0; i < n; i++ {
		if recvAt[i] != 0 && commitAt[i] != 0 {
			lat = append(lat, time.Duration(max(0, recvAt[i]-commitAt[i])))
		}
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		res.p50 = lat[len(lat)/2]
		res.p99 = lat[len(lat)*99/100]
		res.max = lat[len(lat)-1]
	}
	return res, nil
}

// warmup inserts one event outside the measurement (its seq -1 is not
// counted) and waits until the consumer reads a record: the pipeline is
// warm before the clock starts.
func (b *bench) warmup(ctx context.Context, table string, warm <-chan struct{}) error {
	if err := b.exec(ctx, "INSERT INTO "+table+` (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('order', 'warmup', 'Warmup', '{"seq": -1}')`); err != nil {
		return err
	}
	select {
	case <-warm:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("warm-up event not read back within 30s")
	case <-ctx.Done():
		return ctx.Err()
	}
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
