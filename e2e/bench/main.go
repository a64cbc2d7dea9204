// Command bench measures the relay side by side with pg_recvlogical and a
// polling relay, on a throwaway PostgreSQL cluster and an in-process Kafka
// broker (kfake), and prints Markdown tables. It is its own module, so that
// its plotting library stays out of the relay's go.mod; it builds the relay
// from the repository it sits in.
//
//	cd e2e/bench
//	go run .                       # everything (about 35 minutes: the exactlyonce part takes 10, 20 with -apache)
//	go run . -only latency,poller  # some parts: drain, writeback, memory, retention, parked, latency, poller, exactlyonce, order, codecs, backfill, backfill-latency, emit, pause, adopt, webhook, audit
//
// Drain: backlogs of outbox rows (~300-byte payloads, -keys keys) inserted
// with the relay stopped: -rows rows in transactions of -per-tx rows, then
// -single-rows one-row transactions (the shape an outbox usually has). The
// relay's time is from starting its process until Kafka acked every record;
// pg_recvlogical reads the same backlog from a second pgoutput slot to a
// file. The pair runs -rounds times, alternating which goes first; medians
// are printed. The broker discards record bytes (kfake BlackholeProduce) so
// that its storage does not compete with PostgreSQL for the CPU.
//
// Latency: events at fixed offered rates, one per transaction, from several
// connections; commit-to-ack is from the client's COMMIT returning to a
// consumer reading the record. Each rate runs -repeat times; the median and
// the range of p50 and p99 are printed, with where the CPU went.
//
// Retention: the relay's throughput while its cleanup deletes -rows old
// outbox rows.
//
// Parked: the relay's poller delivering -parked events parked in the
// status table.
//
// Exactly-once: the relay with `--delivery exactly-once` beside the default
// at-least-once (-delivery), on kfake and, with -apache, Apache Kafka. The
// drain's backlogs (as above, each ending with one sentinel event in a
// transaction of its own) are drained by each mode from its own slot, timed
// until a read_committed consumer could read every event; the latency runs
// (-eo-rates, as the latency part) read with a read_committed consumer, and
// read the relay's own cdc_relay_commit_to_ack_seconds beside it.
//
// Order: the drain's batched backlog with `--ordering key` and with
// `--ordering none`, nothing parked (skipped when the relay has no
// --ordering); then with 1% of the keys refused by the broker (a kfake
// produce hook), each key's events held behind its first: the stream's
// time until every event is acked or held, and, the refusal lifted, the
// poller's time until none is held.
//
// Codecs: the drain's batched backlog into Apache Kafka (Java and Maven
// needed) with each --kafka-compression (none, gzip, snappy, lz4, zstd),
// each from its own slot into its own topic: time, events/s, the relay's
// CPU per event, and the bytes the broker stored for the topic (its log
// directories, DescribeLogDirs) against none. -rows 100000 -rounds 1 tries
// it in about a minute.
//
// Backfill: `cdc-relay backfill` of -rows rows (the drain's rows, in a
// table of their own) with no rate limit, alone and beside a live load of
// 2,000 events/s through the relay for -duration: its rows/s, and the
// live stream's p50 and p99 beside it against the same load alone.
//
// Backfill latency (not in a run of everything: name it in -only): the
// claim that a backfill at its default rate keeps the live stream's
// latency. -repeat rounds of the live load of 2,000 events/s for
// -duration alone, then beside a backfill of -duration's worth of rows at
// the default rate: each round's p99s and their ratio, and the medians
// (the claim: at most 2x). `go run . -only backfill-latency -duration 4s
// -repeat 5` is the measurement the e2e suite made before.
//
// Emit (table or messages): the application commits one-event
// transactions from -emit-conns connections as fast as they go for
// -emit-duration, once with an INSERT into the default outbox table, once
// with pg_logical_emit_message(true, 'outbox', envelope) and once with the
// SQL helper cdc_relay.emit when migrate --message-prefix creates it, each
// with a slot of the relay's present: transactions/s, WAL bytes per event,
// PostgreSQL's CPU per event, and the outbox table's size and live and
// dead tuples after the load, after a delete as retention does and after
// VACUUM. Then the relay, started on that slot, drains what the load
// wrote: events/s and its CPU per event. -emit-durable turns fsync and
// full_page_writes on for it; -emit-rounds repeats it, the ways' order
// rotating, and prints medians.
//
// Pause: a topic paused under load. The application commits -pause-rate
// events/s (one per transaction) alternating two topics whose 1,000 keys
// are shared; after -pause-warm one topic is paused (`cdc-relay pause
// --topic`), resumed -pause-for later, and the load runs twice -pause-for
// more: the events held at the resume and at most, the time from the
// resume until no held event is more than a second old, the time from
// the load's end until none is held, and the relay's peak RSS and CPU.
// On kfake, or Apache Kafka with -apache.
//
// Adopt: the switch-over of an order service's outbox (uuid ids, a
// status column the relay writes back): -adopt-rows NEW rows written
// before the relay's first run, which creates the slot and adopts them;
// the time from starting the relay until every row is delivered (the
// status table) and written back (SENT), with the relay's CPU per row.
// `go run . -only adopt -adopt-rows 100000` takes about two minutes.
//
// Polling baseline: a 500 ms polling outbox like the ones teams run today
// (batch 50, FOR UPDATE SKIP LOCKED, created_at older than 1 s, a status
// UPDATE per batch).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/relayproc"
	"github.com/cdc-relay/cdc-relay/replication"
)

type config struct {
	rows, perTx, singleRows, keys, rounds, repeat int
	parkedRows                                    int
	adoptRows                                     int // the adopt part's pending rows
	rates                                         []int
	eoRates                                       []int    // offered rates of the exactlyonce part's latency runs
	deliveries                                    []string // the delivery modes the exactlyonce part compares
	duration                                      time.Duration
	only                                          string
	relayArgs                                     string
	plot                                          string
	cpuProfile                                    string
	apache                                        bool
	emitConns                                     int           // the emit part's load connections
	emitDuration                                  time.Duration // the emit part's load, per way
	emitDurable                                   bool          // the emit part with fsync and full_page_writes on
	emitRounds                                    int           // the emit part's rounds
	emitHeadersParam                              bool          // the emit part's message ways with the headers as a parameter
	pauseRate                                     int           // the pause part's events/s
	pauseKeys                                     int           // the record keys the pause part's load spreads over
	pauseWarm, pauseFor                           time.Duration // the pause part's load before the pause, and the pause
}

func main() {
	var c config
	var rates, eoRates, deliveries string
	flag.IntVar(&c.rows, "rows", 1000000, "rows of the batched drain backlog and of the memory run's one transaction")
	flag.IntVar(&c.perTx, "per-tx", 1000, "rows per transaction in the batched drain backlog")
	flag.IntVar(&c.singleRows, "single-rows", 100000, "one-row transactions in the second drain backlog (0: skip it)")
	flag.IntVar(&c.keys, "keys", 1000, "distinct keys")
	flag.IntVar(&c.parkedRows, "parked", 100000, "events parked in the status table for the poller part")
	flag.IntVar(&c.adoptRows, "adopt-rows", 1000000, "pending outbox rows adopted at the switch-over in the adopt part")
	flag.IntVar(&c.rounds, "rounds", 3, "drain rounds (the pair alternates which goes first)")
	flag.StringVar(&rates, "rates", "500,2000,5000,10000", "offered rates for the latency runs, events/s")
	flag.StringVar(&eoRates, "eo-rates", "2000,10000", "offered rates for the exactlyonce part's latency runs, events/s (empty: drain only)")
	flag.StringVar(&deliveries, "delivery", atLeastOnce+","+exactlyOnce, "delivery modes the exactlyonce part compares, comma-separated")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "length of each latency run")
	flag.IntVar(&c.repeat, "repeat", 3, "latency runs per rate (median and range are printed)")
	flag.StringVar(&c.only, "only", "", "run only these parts, comma-separated: "+strings.Join(parts, ", "))
	flag.StringVar(&c.relayArgs, "relay-args", "", "extra arguments for `cdc-relay run` (e.g. --debug-addr 127.0.0.1:6060 for pprof)")
	flag.StringVar(&c.plot, "plot", "", "write the latency plot (PNG) here")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (load generator, consumer, in-process broker) here")
	flag.IntVar(&c.emitConns, "emit-conns", 8, "connections of the emit part's load (8 saturate 2 cores)")
	flag.DurationVar(&c.emitDuration, "emit-duration", 30*time.Second, "length of the emit part's load, per way")
	flag.IntVar(&c.emitRounds, "emit-rounds", 1, "rounds of the emit part (the ways' order rotates; medians are printed)")
	flag.IntVar(&c.pauseRate, "pause-rate", 1500, "events/s the pause part's load commits")
	flag.IntVar(&c.pauseKeys, "pause-keys", 1000, "record keys the pause part's load spreads over, each with events on both topics (more than the events: every key held is a new one)")
	flag.DurationVar(&c.pauseWarm, "pause-warm", 10*time.Second, "the pause part's load before the topic is paused")
	flag.DurationVar(&c.pauseFor, "pause-for", 90*time.Second, "how long the pause part pauses the topic (the load then runs twice as long again)")
	flag.BoolVar(&c.emitHeadersParam, "emit-headers-param", false, "the emit part's two message ways take the headers as a parameter (JSON text), as an application that passes them does, rather than building them in the statement")
	flag.BoolVar(&c.emitDurable, "emit-durable", false, "run the emit part with fsync and full_page_writes on, as a production server has them")
	flag.BoolVar(&c.apache, "apache", false, "also drain into a real Apache Kafka broker, and run the exactlyonce part on it (Java and Maven needed; see internal/kafkatest)")
	flag.Parse()
	var err error
	if c.rates, err = parseRates(rates); err != nil {
		fatalf("-rates: %v", err)
	}
	if eoRates != "" {
		if c.eoRates, err = parseRates(eoRates); err != nil {
			fatalf("-eo-rates: %v", err)
		}
	}
	for _, d := range strings.Split(deliveries, ",") {
		d = strings.TrimSpace(d)
		if d != atLeastOnce && d != exactlyOnce || slices.Contains(c.deliveries, d) {
			fatalf("-delivery: %q is not %s or %s, or is given twice", d, atLeastOnce, exactlyOnce)
		}
		c.deliveries = append(c.deliveries, d)
	}
	if c.only != "" {
		for _, part := range strings.Split(c.only, ",") {
			if !slices.Contains(parts, part) {
				fatalf("-only: unknown part %q (want one of %s)", part, strings.Join(parts, ", "))
			}
		}
	}
	if c.repeat < 1 || c.rounds < 1 || c.rows < 1 || c.adoptRows < 1 || c.perTx < 1 || c.keys < 1 || c.emitConns < 1 || c.emitDuration <= 0 || c.emitRounds < 1 ||
		c.pauseRate < 1 || c.pauseKeys < 1 {
		fatalf("-repeat, -rounds, -rows, -adopt-rows, -per-tx, -keys, -emit-conns, -emit-duration, -emit-rounds, -pause-rate and -pause-keys must be positive")
	}
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			fatalf("-cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatalf("-cpuprofile: %v", err)
		}
	}
	// Ctrl-C or SIGTERM ends the part running, and the cleanup (the
	// PostgreSQL cluster, the brokers, the relay) still runs.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, c, os.Stdout)
	stop()
	if c.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		fatalf("%v", err)
	}
}

// parts are the parts -only can name, in the order they run.
var parts = []string{"drain", "writeback", "memory", "retention", "parked", "latency", "poller", "exactlyonce", "order", "codecs", "backfill", "backfill-latency", "emit", "pause", "adopt", "webhook", "audit"}

// parseRates reads a comma-separated list of positive rates.
func parseRates(list string) ([]int, error) {
	var out []int
	for _, r := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", r)
		}
		out = append(out, n)
	}
	return out, nil
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
	runs     int // latency runs so far, for unique slot names
}

func run(ctx context.Context, c config, out io.Writer) error {
	b := &bench{c: c}
	stop, err := b.setUp(ctx)
	defer stop()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "## cdc-relay benchmark\n\n%s\n\n", machine())
	fmt.Fprintf(out, "Command: `cd e2e/bench && go run . %s`\n\n", strings.Join(os.Args[1:], " "))
	want := func(part string) bool { return c.only == "" || slices.Contains(strings.Split(c.only, ","), part) }
	var series []latencySeries
	for _, p := range b.partRuns(&series) {
		// backfill-latency runs only when named: it repeats the backfill
		// part's question.
		if !want(p.name) || (p.name == "backfill-latency" && c.only == "") {
			continue
		}
		if err := p.run(ctx, out); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "Load average at the end: %s.\n", loadAverage())
	if c.plot != "" && len(series) > 0 {
		if err := plotLatency(c.plot, series); err != nil {
			return err
		}
		logf("wrote %s", c.plot)
	}
	return nil
}

// setUp leaves the relay built, a PostgreSQL started and migrated, and
// b.conn connected to it; stop undoes what was done, also on an error.
func (b *bench) setUp(ctx context.Context) (stop func(), err error) {
	var undo []func()
	stop = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if b.tmp, err = os.MkdirTemp("", "cdc-relay-bench-"); err != nil {
		return stop, err
	}
	undo = append(undo, func() { os.RemoveAll(b.tmp) })
	b.relayBin = filepath.Join(b.tmp, "cdc-relay")
	logf("building the relay")
	build := exec.Command("go", "build", "-o", b.relayBin, "./cmd/cdc-relay")
	build.Dir = repoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := build.CombinedOutput(); err != nil {
		return stop, fmt.Errorf("build the relay in %s: %v\n%s", build.Dir, err, o)
	}
	logf("starting PostgreSQL")
	if b.pg, err = pgtemp.Start(ctx, pgtemp.Options{}); err != nil {
		return stop, err
	}
	undo = append(undo, func() { b.pg.Stop() })
	b.url = b.pg.URL("postgres")
	if o, err := exec.Command(b.relayBin, "migrate", "--postgres-url", b.url, "--no-slot").CombinedOutput(); err != nil {
		return stop, fmt.Errorf("migrate: %v\n%s", err, o)
	}
	if b.conn, err = pgx.Connect(ctx, b.url); err != nil {
		return stop, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	undo = append(undo, func() { b.conn.Close(context.Background()) })
	return stop, nil
}

// benchPart is one part of the benchmark, named for -only.
type benchPart struct {
	name string
	run  func(ctx context.Context, out io.Writer) error
}

// partRuns are the benchmark's parts in the order they run, as parts
// names them; the latency parts add their series to *series, for the
// plot.
func (b *bench) partRuns(series *[]latencySeries) []benchPart {
	latency := func(kind string) func(ctx context.Context, out io.Writer) error {
		return func(ctx context.Context, out io.Writer) error {
			s, err := b.latency(ctx, out, kind)
			if err == nil {
				*series = append(*series, s)
			}
			return err
		}
	}
	return []benchPart{
		{"drain", b.drain},
		{"writeback", b.writeBack},
		{"memory", b.memory},
		{"retention", b.retention},
		{"parked", b.parked},
		{"latency", latency("relay")},
		{"poller", func(ctx context.Context, out io.Writer) error {
			if err := b.pollerDrain(ctx, out); err != nil {
				return err
			}
			return latency("poller")(ctx, out)
		}},
		{"exactlyonce", b.exactlyOnce},
		{"order", b.order},
		{"codecs", b.codecDrain},
		{"backfill", b.backfill},
		{"backfill-latency", b.backfillLatency},
		{"emit", b.emit},
		{"pause", b.pauseLoad},
		{"adopt", b.adopt},
		{"webhook", b.webhook},
		{"audit", b.audit},
	}
}

// repoRoot is the relay's repository: two levels above this file.
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
	return fmt.Sprintf("Machine: %d cores (%s), %s memory, %s, %s; PostgreSQL, the broker and the relay share it. Load average at the start: %s.",
		runtime.NumCPU(), model, mem, runtime.Version(), strings.TrimSpace(string(pgv)), loadAverage())
}

// loadAverage is the 1, 5 and 15-minute load averages of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
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

// fillBacklog inserts rows into table in transactions of perTx rows, in one
// round trip (a DO block that commits between the transactions).
func (b *bench) fillBacklog(ctx context.Context, table string, rows, perTx int) error {
	start := time.Now()
	err := b.exec(ctx, fmt.Sprintf(`DO $$
		BEGIN
			FOR done IN 0..%[1]d - 1 BY %[2]d LOOP
				INSERT INTO %[3]s (aggregate_type, aggregate_id, event_type, payload)
				SELECT 'order', 'key-' || ((g + done) %% %[4]d), 'OrderPlaced',
				       json_build_object('seq', g + done, 'order_id', 'o-' || (g + done), 'pad', repeat('x', 240))::jsonb
				FROM generate_series(1, least(%[2]d, %[1]d - done)) g;
				COMMIT;
			END LOOP;
		END $$`, rows, perTx, pgx.Identifier{table}.Sanitize(), b.c.keys))
	if err != nil {
		return fmt.Errorf("fill %s: %w", table, err)
	}
	logf("inserted %d rows into %s in transactions of %d in %s", rows, table, perTx, time.Since(start).Round(time.Millisecond))
	return nil
}

// startRelay starts `cdc-relay run` on slot, producing to brokers, with
// -relay-args and then extra.
func (b *bench) startRelay(slot string, brokers []string, extra ...string) (*relayproc.Proc, error) {
	// No metrics server unless a part asks for one (extra, -relay-args,
	// which come later and win): a relay on the default address, a user's
	// or another bench's, must not stop this one.
	args := []string{"run", "--metrics-addr", "", "--postgres-url", b.url, "--kafka-brokers", strings.Join(brokers, ","),
		"--kafka-create-topics", "--slot", slot, "--log-level", "warn"}
	if b.c.relayArgs != "" {
		args = append(args, strings.Fields(b.c.relayArgs)...)
	}
	return relayproc.Start(b.relayBin, append(args, extra...)...)
}

// waitSlotActive waits until a walsender streams slot.
func (b *bench) waitSlotActive(ctx context.Context, slot string, p *relayproc.Proc) error {
	return poll(ctx, 60*time.Second, func() (bool, error) {
		if !p.Running() {
			return false, fmt.Errorf("relay exited (%v) before streaming slot %s:\n%s", p.Err(), slot, tail(p.Log()))
		}
		return replication.SlotActive(ctx, b.conn, slot)
	})
}

// dropSlot drops slot once no walsender streams it (a relay's walsender
// may outlive the relay by a moment); a slot that does not exist is fine.
func (b *bench) dropSlot(ctx context.Context, slot string) {
	err := poll(ctx, 30*time.Second, func() (bool, error) {
		active, err := replication.SlotActive(ctx, b.conn, slot)
		return !active, err
	})
	if err == nil {
		err = b.exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", slot)
	}
	if err != nil {
		logf("drop slot %s: %v", slot, err)
	}
}

// poll calls cond every 10 ms until it holds or fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s: %w", timeout, ctx.Err())
		case <-tick.C:
		}
	}
}

// tail is the end of a relay's log.
func tail(log string) string {
	if len(log) > 2000 {
		return log[len(log)-2000:]
	}
	return log
}

// benchTopic is the topic the default template gives the bench's events.
const benchTopic = "outbox.event.order"

// benchPartitions is the partition count of the bench's topics, on every
// broker.
const benchPartitions = 6

// createTopic creates topic with benchPartitions partitions unless it
// exists.
func createTopic(ctx context.Context, cl *kgo.Client, topic string) error {
	err := kafkatest.CreateTopic(ctx, cl, topic, benchPartitions, nil)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	return err
}

// topicEnds waits until every one of topic's partitions (of which it has
// partitions) answers a request for its end offset, as a broker that has
// just created it may not at once, and returns those end offsets.
func topicEnds(ctx context.Context, cl *kgo.Client, topic string, partitions int) (map[int32]int64, error) {
	var ends map[int32]int64
	var last error
	err := poll(ctx, 30*time.Second, func() (bool, error) {
		ends, last = kafkatest.EndOffsets(ctx, cl, topic)
		if errors.Is(last, kerr.UnknownTopicOrPartition) || errors.Is(last, kerr.LeaderNotAvailable) || errors.Is(last, kerr.NotLeaderForPartition) {
			return false, nil
		}
		return last == nil && len(ends) == partitions, last
	})
	if err != nil {
		return nil, fmt.Errorf("topic %s not ready (%d partitions of %d, last error %v): %w", topic, len(ends), partitions, last, err)
	}
	return ends, nil
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

// waitAcked waits until topic holds n records, or the relay exits.
func waitAcked(ctx context.Context, cl *kgo.Client, topic string, n int64, p *relayproc.Proc, timeout time.Duration) error {
	var got int64
	err := poll(ctx, timeout, func() (bool, error) {
		var err error
		if got, err = ackedRecords(ctx, cl, topic); err != nil || got >= n {
			return got >= n, err
		}
		if !p.Running() {
			return false, fmt.Errorf("relay exited (%v)", p.Err())
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d records acked: %w\n%s", got, n, err, tail(p.Log()))
	}
	return nil
}

func newBroker(blackhole bool) (*kfake.Cluster, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(benchPartitions)}
	if blackhole {
		opts = append(opts, kfake.BlackholeProduce())
	}
	return kfake.NewCluster(opts...)
}

func rate(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }

func perEvent(cpu time.Duration, n int) float64 { return float64(cpu.Microseconds()) / float64(n) }

// median is the median of f over xs.
func median[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	switch {
	case len(v) == 0:
		return 0
	case len(v)%2 == 1:
		return v[len(v)/2]
	default:
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
}
