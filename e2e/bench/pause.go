package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

// The pause part: one of two topics paused under load, then resumed.
const pauseSlot = "bench_pause"

// pauseResult is what one run of the pause part saw.
type pauseResult struct {
	written         int64         // events the load committed
	heldAtResume    int           // status rows held when the topic was resumed
	peakHeld        int           // the most held at once
	caughtUp        time.Duration // from the resume until nothing held was older than 1 s (0: never, within the load)
	drainedAfter    time.Duration // from the load's end until nothing was held
	peakRSS         int64
	cpu             time.Duration
	behindAtLoadEnd int // held rows when the load stopped
}

// pauseLoad runs the pause part: an application commits -pause-rate
// events a second, one per transaction, alternating two topics whose
// record keys are shared; after -pause-warm topic a is paused with
// `cdc-relay pause --topic`, and resumed -pause-for later while the load
// goes on; the load runs until twice -pause-for after the resume. It
// reports the events held at the resume and at most, the time from the
// resume until no held event is more than a second old (the relay caught
// up while the load runs), the time from the load's end until nothing is
// held, and the relay's peak RSS and CPU. On kfake, or Apache Kafka with
// -apache.
func (b *bench) pauseLoad(ctx context.Context, out io.Writer) error {
	brokers := []string(nil)
	name := "kfake"
	if b.c.apache {
		logf("starting Apache Kafka %s", kafkatest.Version)
		broker, err := kafkatest.Start(ctx, kafkatest.Options{})
		if err != nil {
			return err
		}
		defer broker.Close()
		brokers, name = []string{broker.Addr()}, "Apache Kafka "+kafkatest.Version
	} else {
		broker, err := newBroker(false)
		if err != nil {
			return err
		}
		defer broker.Close()
		brokers = broker.ListenAddrs()
	}
	if err := b.exec(ctx, "TRUNCATE outbox, outbox_delivery"); err != nil {
		return err
	}
	_ = b.exec(ctx, "DELETE FROM cdc_relay_paused_topics")
	load := loadAverage()
	r, err := b.pauseRun(ctx, brokers)
	b.dropSlot(ctx, pauseSlot)
	_ = b.exec(ctx, "DELETE FROM cdc_relay_checkpoint")
	if err != nil {
		return err
	}
	caught := "not while the load ran"
	if r.caughtUp > 0 {
		caught = r.caughtUp.Round(100 * time.Millisecond).String()
	}
	fmt.Fprintf(out, "### A topic paused under load (%s)\n\n", name)
	fmt.Fprintf(out, "%d events/s, one per transaction, over two topics with %d shared keys; one topic paused after %s for %s, then the load ran %s more. Load average before: %s.\n\n",
		b.c.pauseRate, b.c.pauseKeys, b.c.pauseWarm, b.c.pauseFor, 2*b.c.pauseFor, load)
	fmt.Fprintf(out, "| events written | held at the resume | held at most | caught up (nothing held > 1 s old) after the resume | held when the load stopped | nothing held after the load stopped | relay peak RSS | relay CPU per event |\n|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(out, "| %d | %d | %d | %s | %d | %s | %.1f MiB | %.2f µs |\n\n", r.written, r.heldAtResume, r.peakHeld, caught,
		r.behindAtLoadEnd, r.drainedAfter.Round(100*time.Millisecond), float64(r.peakRSS)/(1<<20), perEvent(r.cpu, int(r.written)))
	return nil
}

// pauseRun starts the relay and the load, pauses and resumes topic a, and
// watches the status table.
func (b *bench) pauseRun(ctx context.Context, brokers []string) (pauseResult, error) {
	var r pauseResult
	p, err := b.startRelay(pauseSlot, brokers, "--retry-base", "100ms", "--retry-max", "1s")
	if err != nil {
		return r, err
	}
	defer p.Kill()
	if err := b.waitSlotActive(ctx, pauseSlot, p); err != nil {
		return r, err
	}
	total := b.c.pauseWarm + b.c.pauseFor + 2*b.c.pauseFor
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var written atomic.Int64
	loadDone := make(chan error, 1)
	go func() { loadDone <- b.pauseWrite(lctx, total, &written) }()

	held := func() (n int, oldest time.Duration, err error) {
		var age float64
		err = b.conn.QueryRow(ctx, "SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM outbox_delivery WHERE status IN ('PAUSED', 'WAITING', 'FAILED')").Scan(&n, &age)
		return n, time.Duration(age * float64(time.Second)), err
	}
	watch := func(until time.Time, stop func(n int, oldest time.Duration) bool) error {
		for time.Now().Before(until) {
			n, oldest, err := held()
			if err != nil {
				return err
			}
			r.peakHeld = max(r.peakHeld, n)
			if stop != nil && stop(n, oldest) {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return nil
	}
	start := time.Now()
	if err := watch(start.Add(b.c.pauseWarm), nil); err != nil {
		return r, err
	}
	if err := b.pauseCmd(ctx, "pause"); err != nil {
		return r, err
	}
	logf("pause: topic a paused after %s", time.Since(start).Round(time.Second))
	if err := watch(time.Now().Add(b.c.pauseFor), nil); err != nil {
		return r, err
	}
	if r.heldAtResume, _, err = held(); err != nil {
		return r, err
	}
	if err := b.pauseCmd(ctx, "resume"); err != nil {
		return r, err
	}
	resumed := time.Now()
	logf("pause: topic a resumed with %d events held", r.heldAtResume)
	if err := watch(start.Add(total), func(n int, oldest time.Duration) bool {
		if r.caughtUp == 0 && oldest <= time.Second {
			r.caughtUp = time.Since(resumed)
			logf("pause: caught up %s after the resume (%d held, none older than 1 s)", r.caughtUp.Round(100*time.Millisecond), n)
		}
		return false
	}); err != nil {
		return r, err
	}
	stopLoad()
	if err := <-loadDone; err != nil {
		return r, err
	}
	r.written = written.Load()
	ended := time.Now()
	if r.behindAtLoadEnd, _, err = held(); err != nil {
		return r, err
	}
	if err := watch(ended.Add(30*time.Minute), func(n int, _ time.Duration) bool { return n == 0 }); err != nil {
		return r, err
	}
	r.drainedAfter = time.Since(ended)
	if r.cpu, err = p.CPU(); err != nil {
		return r, err
	}
	if r.peakRSS, err = p.PeakRSS(); err != nil {
		return r, err
	}
	return r, p.Stop(60 * time.Second)
}

// pauseCmd runs `cdc-relay pause|resume --topic` for topic a.
func (b *bench) pauseCmd(ctx context.Context, verb string) error {
	cmd := exec.CommandContext(ctx, b.relayBin, verb, "--topic", "outbox.event.bench_pause_a", "--postgres-url", b.url, "--slot", pauseSlot)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cdc-relay %s: %v\n%s", verb, err, out)
	}
	return nil
}

// pauseWrite commits -pause-rate events a second for d (or until ctx
// ends), one per transaction, from several connections, alternating the
// two topics, counting them in written.
func (b *bench) pauseWrite(ctx context.Context, d time.Duration, written *atomic.Int64) error {
	const workers = 4
	conns := make([]*pgx.Conn, workers)
	for w := range conns {
		c, err := pgx.Connect(ctx, b.url)
		if err != nil {
			return fmt.Errorf("load connection: %w", err)
		}
		defer c.Close(context.Background())
		conns[w] = c
	}
	every := time.Second * workers / time.Duration(b.c.pauseRate)
	end := time.Now().Add(d)
	errs := make(chan error, workers)
	var seq atomic.Int64
	for w := range conns {
		go func() {
			tick := time.NewTicker(every)
			defer tick.Stop()
			for time.Now().Before(end) {
				select {
				case <-ctx.Done():
					errs <- nil
					return
				case <-tick.C:
				}
				i := seq.Add(1) - 1
				agg := []string{"bench_pause_a", "bench_pause_b"}[i%2]
				if _, err := conns[w].Exec(ctx, "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ($1, $2, 'Loaded', $3)",
					agg, fmt.Sprintf("key-%d", (i/2)%int64(b.c.pauseKeys)), fmt.Sprintf(`{"seq": %d, "pad": "%0200d"}`, i, 0)); err != nil {
					if ctx.Err() != nil {
						errs <- nil
						return
					}
					errs <- err
					return
				}
				written.Add(1)
			}
			errs <- nil
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
