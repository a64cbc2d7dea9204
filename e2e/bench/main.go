// Command bench measures the relay side by side with pg_recvlogical and a
// polling relay, on a throwaway PostgreSQL cluster and an in-process Kafka
// broker (kfake), and prints a Markdown table.
//
//	go run ./e2e/bench              # everything (about 10 minutes)
//	go run ./e2e/bench -only drain  # one part: drain, memory, latency, poller
//
// Drain: a backlog of -rows outbox rows (-per-tx rows per transaction, -keys
// keys, ~300-byte payloads) is inserted with the relay stopped; the relay's
// time is from starting its process until Kafka acked every record, and
// pg_recvlogical reads the same backlog from a second pgoutput slot to a
// file. The pair runs -rounds times, alternating which goes first; medians
// are printed. The broker discards record bytes (kfake BlackholeProduce) so
// that its storage does not compete with PostgreSQL for the CPU.
//
// Latency: events at fixed offered rates, one per transaction, from several
// connections; commit-to-ack is from the client's COMMIT returning to a
// consumer reading the record.
//
// Polling baseline: a poller as seed 000 describes it (batch 50, 500 ms
// interval, FOR UPDATE SKIP LOCKED, created_at older than 1 s, a status
// UPDATE per batch).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/relay"
)

type config struct {
	rows, perTx, keys, rounds int
	rates                     []int
	duration                  time.Duration
	only                      string
	relayArgs                 string
	plot                      string
	apache                    bool
}

func main() {
	var c config
	var rates string
	flag.IntVar(&c.rows, "rows", 1000000, "drain backlog rows")
	flag.IntVar(&c.perTx, "per-tx", 1000, "rows per transaction in the backlog")
	flag.IntVar(&c.keys, "keys", 1000, "distinct keys")
	flag.IntVar(&c.rounds, "rounds", 3, "drain rounds (the pair alternates which goes first)")
	flag.StringVar(&rates, "rates", "500,2000,10000", "offered rates for the latency runs, events/s")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "length of each latency run")
	flag.StringVar(&c.only, "only", "", "run one part: drain, memory, latency or poller")
	flag.StringVar(&c.relayArgs, "relay-args", "", "extra arguments for `cdc-relay run`")
	flag.StringVar(&c.plot, "plot", "", "write the latency plot (PNG) here")
	flag.BoolVar(&c.apache, "apache", false, "also drain into a real Apache Kafka broker (Java and Maven needed; see internal/kafkatest)")
	flag.Parse()
	for _, r := range strings.Split(rates, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil {
			fatalf("-rates: %v", err)
		}
		c.rates = append(c.rates, n)
	}
	if err := run(context.Background(), c, os.Stdout); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// bench holds the shared environment.
type bench struct {
	c        config
	relayBin string
	pg       *pgtemp.Cluster
	url      string
	conn     *pgx.Conn
	tmp      string
	apache   *kafkatest.Broker
}

func run(ctx context.Context, c config, out io.Writer) error {
	b := &bench{c: c}
	var err error
	if b.tmp, err = os.MkdirTemp("", "cdc-relay-bench-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.tmp)
	b.relayBin = filepath.Join(b.tmp, "cdc-relay")
	logf("building the relay")
	build := exec.Command("go", "build", "-o", b.relayBin, "./cmd/cdc-relay")
	build.Dir = repoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build relay: %v\n%s", err, o)
	}
	logf("starting PostgreSQL")
	if b.pg, err = pgtemp.Start(ctx, pgtemp.Options{}); err != nil {
		return err
	}
	defer b.pg.Stop()
	b.url = b.pg.URL("postgres")
	if o, err := exec.Command(b.relayBin, "migrate", "--postgres-url", b.url).CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %v\n%s", err, o)
	}
	if b.conn, err = pgx.Connect(ctx, b.url); err != nil {
		return err
	}
	defer b.conn.Close(context.Background())

	fmt.Fprintf(out, "## cdc-relay benchmark\n\n%s\n\n", machine())
	fmt.Fprintf(out, "Command: `go run ./e2e/bench %s`\n\n", strings.Join(os.Args[1:], " "))
	want := func(part string) bool { return c.only == "" || c.only == part }
	if want("drain") {
		if err := b.drain(ctx, out); err != nil {
			return err
		}
	}
	if want("memory") {
		if err := b.memory(ctx, out); err != nil {
			return err
		}
	}
	var series []latencySeries
	if want("latency") {
		s, err := b.latency(ctx, out, "relay")
		if err != nil {
			return err
		}
		series = append(series, s)
	}
	if want("poller") {
		if err := b.pollerDrain(ctx, out); err != nil {
			return err
		}
		s, err := b.latency(ctx, out, "poller")
		if err != nil {
			return err
		}
		series = append(series, s)
	}
	if c.plot != "" && len(series) > 0 {
		if err := plotLatency(c.plot, series); err != nil {
			return err
		}
		logf("wrote %s", c.plot)
	}
	return nil
}

// repoRoot is the module root: two levels above this file.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		mem = strings.Join(strings.Fields(line)[1:], " ")
	}
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	pgv, _ := exec.Command("psql", "--version").Output()
	return fmt.Sprintf("Machine: %d cores (%s), %s memory, %s, %s; PostgreSQL, the broker and the relay share it.",
		runtime.NumCPU(), model, mem, runtime.Version(), strings.TrimSpace(string(pgv)))
}

// exec runs SQL on the bench connection.
func (b *bench) exec(ctx context.Context, sql string, args ...any) error {
	if _, err := b.conn.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("%s: %w", firstLine(sql), err)
	}
	return nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func (b *bench) lsn(ctx context.Context) (string, error) {
	var s string
	err := b.conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&s)
	return s, err
}

// fillBacklog inserts rows into table in transactions of perTx rows.
func (b *bench) fillBacklog(ctx context.Context, table string, rows, perTx int) error {
	start := time.Now()
	for done := 0; done < rows; done += perTx {
		n := min(perTx, rows-done)
		err := b.exec(ctx, `INSERT INTO `+table+` (aggregate_type, aggregate_id, event_type, payload)
			SELECT 'order', 'key-' || ((g + $1) % $2), 'OrderPlaced',
			       json_build_object('seq', g + $1, 'order_id', 'o-' || (g + $1), 'pad', repeat('x', 240))::jsonb
			FROM generate_series(1, $3) g`, done, b.c.keys, n)
		if err != nil {
			return err
		}
	}
	logf("inserted %d rows into %s in %s", rows, table, time.Since(start).Round(time.Millisecond))
	return nil
}

// relayProc is a running relay process.
type relayProc struct {
	cmd  *exec.Cmd
	done chan error
	log  *os.File
}

func (b *bench) startRelay(slot string, brokers []string) (*relayProc, error) {
	args := []string{"run", "--postgres-url", b.url, "--kafka-brokers", strings.Join(brokers, ","),
		"--kafka-create-topics", "--slot", slot, "--log-level", "warn"}
	if b.c.relayArgs != "" {
		args = append(args, strings.Fields(b.c.relayArgs)...)
	}
	logFile, err := os.CreateTemp(b.tmp, "relay-*.log")
	if err != nil {
		return nil, err
	}
	p := &relayProc{cmd: exec.Command(b.relayBin, args...), done: make(chan error, 1), log: logFile}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.done <- p.cmd.Wait() }()
	return p, nil
}

// cpu returns the process's user+system CPU time.
func (p *relayProc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name in parentheses: utime is 14th, stime 15th overall.
	s := string(b)
	s = s[strings.LastIndexByte(s, ')')+2:]
	f := strings.Fields(s)
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// peakRSS returns VmHWM in bytes.
func (p *relayProc) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (p *relayProc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.log.Close()
		return err
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("relay did not stop within 60s")
	}
}

func (p *relayProc) logTail() string {
	b, _ := os.ReadFile(p.log.Name())
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// ackedRecords sums the end offsets of topic.
func ackedRecords(ctx context.Context, cl *kgo.Client, topic string) (int64, error) {
	ends, err := kafkatest.EndOffsets(ctx, cl, topic)
	var total int64
	for _, o := range ends {
		total += o
	}
	return total, err
}

// waitAcked polls until topic holds n records beyond base.
func waitAcked(ctx context.Context, cl *kgo.Client, topic string, n int64, p *relayProc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := ackedRecords(ctx, cl, topic)
		if err != nil {
			return err
		}
		if got >= n {
			return nil
		}
		select {
		case err := <-p.done:
			return fmt.Errorf("relay exited (%v) with %d of %d acked:\n%s", err, got, n, p.logTail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d records acked within %s:\n%s", got, n, timeout, p.logTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newBroker(blackhole bool) (*kfake.Cluster, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(6)}
	if blackhole {
		opts = append(opts, kfake.BlackholeProduce())
	}
	return kfake.NewCluster(opts...)
}

type drainResult struct {
	wall    time.Duration
	cpu     time.Duration
	peakRSS int64
}

func (b *bench) drain(ctx context.Context, out io.Writer) error {
	if b.c.apache {
		logf("starting Apache Kafka %s", kafkatest.Version)
		var err error
		if b.apache, err = kafkatest.Start(ctx, kafkatest.Options{}); err != nil {
			return err
		}
		defer b.apache.Close()
	}
	var relay, recv, apache []drainResult
	for round := 0; round < b.c.rounds; round++ {
		relayFirst := round%2 == 0
		r, v, a, err := b.drainRound(ctx, relayFirst)
		if err != nil {
			return err
		}
		if b.apache != nil {
			logf("round %d: relay into Apache Kafka %s (%.0f/s, %.2f µs CPU/event)", round+1, a.wall.Round(time.Millisecond), rate(b.c.rows, a.wall), perEvent(a.cpu, b.c.rows))
			apache = append(apache, a)
		}
		logf("round %d: relay %s (%.0f/s, %.2f µs CPU/event), pg_recvlogical %s (%.0f/s)", round+1,
			r.wall.Round(time.Millisecond), rate(b.c.rows, r.wall), perEvent(r.cpu, b.c.rows),
			v.wall.Round(time.Millisecond), rate(b.c.rows, v.wall))
		relay, recv = append(relay, r), append(recv, v)
	}
	mr, mv := median(relay, func(d drainResult) float64 { return float64(d.wall) }), median(recv, func(d drainResult) float64 { return float64(d.wall) })
	cpu := median(relay, func(d drainResult) float64 { return float64(d.cpu) })
	rss := median(relay, func(d drainResult) float64 { return float64(d.peakRSS) })
	fmt.Fprintf(out, "### Drain: %d rows, %d per transaction, %d keys, ~300-byte payloads (median of %d rounds)\n\n", b.c.rows, b.c.perTx, b.c.keys, b.c.rounds)
	fmt.Fprintf(out, "| | time | events/s | CPU per event | peak RSS |\n|---|---|---|---|---|\n")
	fmt.Fprintf(out, "| cdc-relay | %s | %.0f | %.2f µs | %.1f MiB |\n", time.Duration(mr).Round(time.Millisecond), rate(b.c.rows, time.Duration(mr)), perEvent(time.Duration(cpu), b.c.rows), rss/(1<<20))
	if len(apache) > 0 {
		ma := median(apache, func(d drainResult) float64 { return float64(d.wall) })
		ca := median(apache, func(d drainResult) float64 { return float64(d.cpu) })
		ra := median(apache, func(d drainResult) float64 { return float64(d.peakRSS) })
		fmt.Fprintf(out, "| cdc-relay → Apache Kafka %s | %s | %.0f | %.2f µs | %.1f MiB |\n", kafkatest.Version, time.Duration(ma).Round(time.Millisecond), rate(b.c.rows, time.Duration(ma)), perEvent(time.Duration(ca), b.c.rows), ra/(1<<20))
	}
	fmt.Fprintf(out, "| pg_recvlogical | %s | %.0f | | |\n", time.Duration(mv).Round(time.Millisecond), rate(b.c.rows, time.Duration(mv)))
	fmt.Fprintf(out, "\nRelay / pg_recvlogical rate: **%.2f×**. Rounds:", mv/mr)
	for i := range relay {
		fmt.Fprintf(out, " %s/%s", relay[i].wall.Round(time.Millisecond), recv[i].wall.Round(time.Millisecond))
	}
	fmt.Fprintf(out, " (relay/pg_recvlogical).\n\n")
	return nil
}

func rate(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }

func perEvent(cpu time.Duration, n int) float64 { return float64(cpu.Microseconds()) / float64(n) }

func median[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	sort.Float64s(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func (b *bench) drainRound(ctx context.Context, relayFirst bool) (relay, recv, apache drainResult, err error) {
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
			_ = b.exec(ctx, "SELECT pg_drop_replication_slot($1)", slot)
		}
		_ = b.exec(ctx, "DELETE FROM cdc_relay_checkpoint")
	}()
	if err = b.fillBacklog(ctx, "outbox", b.c.rows, b.c.perTx); err != nil {
		return
	}
	end, err := b.lsn(ctx)
	if err != nil {
		return
	}
	_ = b.exec(ctx, "CHECKPOINT")
	runRelay := func(slot string, brokers []string, res *drainResult) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err != nil {
			return err
		}
		defer cl.Close()
		base, err := ackedRecords(ctx, cl, "outbox.event.order")
		if err != nil {
			return err
		}
		start := time.Now()
		p, err := b.startRelay(slot, brokers)
		if err != nil {
			return err
		}
		if err := waitAcked(ctx, cl, "outbox.event.order", base+int64(b.c.rows), p, 10*time.Minute); err != nil {
			p.stop()
			return err
		}
		*res = drainResult{wall: time.Since(start), cpu: p.cpu(), peakRSS: p.peakRSS()}
		return p.stop()
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
	p, err := b.startRelay("bench_memory", broker.ListenAddrs())
	if err != nil {
		return err
	}
	defer func() {
		_ = b.exec(ctx, "SELECT pg_drop_replication_slot('bench_memory')")
	}()
	if err := b.waitSlotActive(ctx, "bench_memory"); err != nil {
		p.stop()
		return err
	}
	if err := b.fillBacklog(ctx, "outbox", b.c.rows, b.c.rows); err != nil {
		p.stop()
		return err
	}
	if err := waitAcked(ctx, cl, "outbox.event.order", int64(b.c.rows), p, 10*time.Minute); err != nil {
		p.stop()
		return err
	}
	rss := p.peakRSS()
	if err := p.stop(); err != nil {
		return err
	}
	lim := relay.DefaultConfig().Limits
	fmt.Fprintf(out, "### Memory: one %d-row transaction\n\nRelay peak RSS: **%.1f MiB** (default in-flight limits: %d events, %d MiB).\n\n",
		b.c.rows, float64(rss)/(1<<20), lim.Events, lim.Bytes>>20)
	return nil
}

func (b *bench) waitSlotActive(ctx context.Context, slot string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var active bool
		if err := b.conn.QueryRow(ctx, "SELECT coalesce(bool_or(active), false) FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&active); err != nil {
			return err
		}
		if active {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("slot %s not streamed within 60s", slot)
}
