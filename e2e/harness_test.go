package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/internal/relayproc"
	"github.com/cdc-relay/cdc-relay/replication"
)

// The package shares one PostgreSQL cluster; each test gets its own
// database, slot and topics (a test that restarts PostgreSQL, a cluster of
// its own: newEnvOwnCluster). The broker comes from the environment:
//
//	CDC_RELAY_TEST_KAFKA=kfake   (default) an in-process kfake broker per test
//	CDC_RELAY_TEST_KAFKA=apache  one real Apache Kafka broker for the package
//	CDC_RELAY_TEST_KAFKA_BROKERS=host:port,…  a broker you already run
var (
	// harnessEnv holds the test-only CDC_RELAY_TEST_ variables, taken out
	// of the environment at start so that no relay the tests run sees
	// them (it warns of a CDC_RELAY_ variable it does not read).
	// CDC_RELAY_TEST_PG stays: `cdc-relay demo` reads it too.
	harnessEnv = map[string]string{}

	relayBin string // built with -race
	plainBin string // the release build, for memory measurements
	cluster  *pgtemp.Cluster
	apache   *kafkatest.Broker
)

// parallelSettings give the package's cluster room for the tests that run
// at once (parallel): each may run two relays of a pool of 8 connections,
// a replication connection and a lock session each, and its own clients.
func parallelSettings() map[string]string {
	return map[string]string{
		"max_connections":       "300",
		"max_wal_senders":       "40",
		"max_replication_slots": "40",
	}
}

// brokerKind is "kfake", "apache" or "external".
func brokerKind() string {
	if harnessEnv["CDC_RELAY_TEST_KAFKA_BROKERS"] != "" {
		return "external"
	}
	if k := harnessEnv["CDC_RELAY_TEST_KAFKA"]; k != "" {
		return k
	}
	return "kfake"
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// takeHarnessEnv moves the harness's own variables from the environment
// to harnessEnv.
func takeHarnessEnv() {
	for _, name := range []string{"CDC_RELAY_TEST_KAFKA", "CDC_RELAY_TEST_KAFKA_BROKERS", "CDC_RELAY_TEST_KILL_EVENTS", "CDC_RELAY_TEST_DEBEZIUM"} {
		if v, ok := os.LookupEnv(name); ok {
			harnessEnv[name] = v
			os.Unsetenv(name)
		}
	}
}

func run(m *testing.M) int {
	takeHarnessEnv()
	dir, err := os.MkdirTemp("", "cdc-relay-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The tests run a relay built with the race detector, so the
	// concurrent code is checked where it really runs (a report fails the
	// test, see spawnRelay); the memory test measures the release build.
	relayBin = filepath.Join(dir, "cdc-relay-race")
	plainBin = filepath.Join(dir, "cdc-relay")
	for _, b := range []struct {
		out  string
		args []string
	}{{relayBin, []string{"-race"}}, {plainBin, nil}} {
		args := append(append([]string{"build"}, b.args...), "-o", b.out, "../cmd/cdc-relay")
		build := exec.Command("go", args...)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "go %s: %v\n", strings.Join(args, " "), err)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cluster, err = pgtemp.Start(ctx, pgtemp.Options{Settings: parallelSettings()})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start PostgreSQL:", err)
		return 1
	}
	defer cluster.Stop()
	switch kind := brokerKind(); kind {
	case "kfake", "external":
	case "apache":
		tlsListener, err := brokerTLS()
		if err != nil {
			fmt.Fprintln(os.Stderr, "make the broker's certificate:", err)
			return 1
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		apache, err = kafkatest.Start(ctx, kafkatest.Options{TLS: tlsListener})
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "start Apache Kafka:", err)
			return 1
		}
		defer apache.Close()
		fmt.Fprintf(os.Stderr, "e2e: Apache Kafka %s at %s\n", kafkatest.Version, apache.Addr())
	default:
		fmt.Fprintf(os.Stderr, "CDC_RELAY_TEST_KAFKA=%q: want kfake or apache\n", kind)
		return 2
	}
	return m.Run()
}

// parallel lets t run beside the suite's other parallel tests, as many
// at once as go test's -parallel says (the Makefile's E2E_PARALLEL). Go
// runs every test that does not call it first, one at a time, and the
// parallel ones only after them, so those never share the machine. A test
// calls it first thing when it mostly waits, and when it restarts or stops
// nothing shared (the package's PostgreSQL cluster), sets no environment
// variable (t.Setenv forbids it), and asserts no duration, rate or memory
// that other tests' load could push past its bound.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// parallelOwnBroker is parallel for a test that would otherwise qualify
// but stops its broker, or writes topics whose names are not its own: it
// runs in parallel on kfake, where every test has a broker of its own,
// and alone on a broker the tests share (Apache Kafka, an external one).
func parallelOwnBroker(t *testing.T) {
	t.Helper()
	if brokerKind() == "kfake" {
		t.Parallel()
	}
}

// env is one test's world: a database, a broker and a topic prefix.
type env struct {
	t         *testing.T
	url       string
	slot      string
	prefix    string // topic prefix, unique per test
	brokers   []string
	kfake     *kfake.Cluster // nil unless CDC_RELAY_TEST_KAFKA=kfake
	kfakeDir  string
	kfakePort int
	kafkaOpts []kgo.Opt // more options for the test's own Kafka clients (TLS, SASL)
	conn      *pgx.Conn
	// relayEnv are variables of the relays the test runs (and commands it
	// runs with e.command), over the process's own: a test never sets its
	// own environment (t.Setenv), so that it can run beside the others.
	// An empty value removes the variable.
	relayEnv map[string]string
	// relays are the relay processes the test started, in order, for the
	// summary a failed test ends with (summarizeRelays).
	relays []*relayproc.Proc
}

// childEnv is the environment of a process the test runs: this process's,
// with e.relayEnv over it.
func (e *env) childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := e.relayEnv[k]; !over {
			out = append(out, kv)
		}
	}
	for k, v := range e.relayEnv {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// setRelayEnv sets the variable k to v (empty: removes it) for the
// processes the test runs from now on.
func (e *env) setRelayEnv(k, v string) {
	if e.relayEnv == nil {
		e.relayEnv = map[string]string{}
	}
	e.relayEnv[k] = v
}

// envSeq numbers the tests' databases; parallel tests draw from it at once.
var envSeq atomic.Int64

// newEnv creates a database on the package's cluster, migrates it, and
// starts a broker.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := newEnvUnprepared(t)
	e.prepare()
	return e
}

// newEnvUnprepared is newEnv before prepare: the test's database exists,
// empty, and its name, slot and topic prefix are set, so that a test can
// write what its own migrate reads (e.prepare(args…)).
func newEnvUnprepared(t *testing.T) *env {
	t.Helper()
	e := newEnvOn(t, cluster)
	t.Cleanup(func() {
		a := mustConnect(t, cluster.URL("postgres"))
		defer a.Close(context.Background())
		_, _ = a.Exec(context.Background(), "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", e.slot)
		_, _ = a.Exec(context.Background(), "DROP DATABASE IF EXISTS "+e.slot+" WITH (FORCE)")
	})
	return e
}

// newEnvOwnCluster is newEnv on a PostgreSQL cluster of the test's own,
// which it returns: the test may restart or stop it, and so run beside the
// others (parallel). The cluster is removed when the test ends.
func newEnvOwnCluster(t *testing.T) (*env, *pgtemp.Cluster) {
	t.Helper()
	c := pgtemptest.StartT(t, pgtemp.Options{})
	e := newEnvOn(t, c)
	e.prepare()
	return e, c
}

// newEnvOn creates the test's database on c, named as its slot.
func newEnvOn(t *testing.T, c *pgtemp.Cluster) *env {
	t.Helper()
	name := fmt.Sprintf("e2e_%d_%d", os.Getpid(), envSeq.Add(1))
	e := &env{t: t, slot: name, prefix: "e2e." + name}
	t.Cleanup(e.summarizeRelays) // first registered: runs after every relay's own cleanup
	admin := mustConnect(t, c.URL("postgres"))
	defer admin.Close(context.Background())
	mustExec(t, admin, "CREATE DATABASE "+name)
	e.url = c.URL(name)
	return e
}

// prepare starts the test's broker, runs `cdc-relay migrate` on e.url with
// the test's slot and migrateArgs, and connects e.conn to it.
func (e *env) prepare(migrateArgs ...string) {
	t := e.t
	t.Helper()
	switch brokerKind() {
	case "external":
		e.brokers = strings.Split(harnessEnv["CDC_RELAY_TEST_KAFKA_BROKERS"], ",")
	case "apache":
		e.brokers = []string{apache.Addr()}
	default:
		e.startKfake()
		t.Cleanup(func() { e.kfake.Close() })
	}

	args := append([]string{"migrate", "--postgres-url", e.url, "--slot", e.slot}, migrateArgs...)
	out, err := exec.Command(relayBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	e.conn = mustConnect(t, e.url)
	t.Cleanup(func() { e.conn.Close(context.Background()) })
}

// startKfake starts the test's kfake broker, on the same port and data
// directory as before when it is restarted.
func (e *env) startKfake() {
	e.t.Helper()
	if e.kfakeDir == "" {
		e.kfakeDir = e.t.TempDir()
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(4),
		kfake.DataDir(e.kfakeDir), kfake.Ports(e.kfakePort)}
	kc, err := kfake.NewCluster(opts...)
	if err != nil {
		e.t.Fatalf("start kfake: %v", err)
	}
	e.kfake = kc
	e.brokers = kc.ListenAddrs()
	if e.kfakePort == 0 {
		_, port, _ := strings.Cut(e.brokers[0], ":")
		e.kfakePort, _ = strconv.Atoi(port)
	}
}

// stopBroker stops the test's broker, keeping its data; startBroker starts
// it again on the same port. Not possible on an external broker.
func (e *env) stopBroker() {
	e.t.Helper()
	switch brokerKind() {
	case "apache":
		if err := apache.Stop(); err != nil {
			e.t.Fatal(err)
		}
	case "kfake":
		e.kfake.Close()
	default:
		e.t.Skip("cannot stop an external broker (CDC_RELAY_TEST_KAFKA_BROKERS)")
	}
}

func (e *env) startBroker() {
	e.t.Helper()
	switch brokerKind() {
	case "apache":
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := apache.Start(ctx); err != nil {
			e.t.Fatal(err)
		}
	case "kfake":
		e.startKfake()
	}
}

// blockProduce makes the kfake broker refuse every produce request (the
// connection is closed, a retriable failure) until the returned function is
// called.
func (e *env) blockProduce() (unblock func()) {
	e.needKfake()
	var mu sync.Mutex
	blocked := true
	e.kfake.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.kfake.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		if blocked {
			return nil, fmt.Errorf("broker unavailable (test)"), true
		}
		return nil, nil, false
	})
	return func() {
		mu.Lock()
		blocked = false
		mu.Unlock()
	}
}

// needKfake skips a test that uses kfake's fault hooks on another broker.
func (e *env) needKfake() {
	if e.kfake == nil {
		e.t.Skipf("needs kfake's fault-injection hooks; this run uses the %s broker", brokerKind())
	}
}

// relaySideOnly skips a long test whose subject is the relay's own side
// (its memory, its queues), not the broker's, on a real broker: CI runs
// it once, on kfake (KFAKE_TESTS).
func (e *env) relaySideOnly() {
	if e.kfake == nil {
		e.t.Skipf("tests the relay's side only, run on kfake; this run uses the %s broker", brokerKind())
	}
}

// topic is the topic the default template gives aggregate type agg.
func (e *env) topic(agg string) string { return e.prefix + "." + agg }

func mustConnect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	return c
}

func mustExec(t *testing.T, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// relayProc is a running relay binary; its methods fail the test.
type relayProc struct {
	*relayproc.Proc
	t *testing.T
}

// startRelay runs `cdc-relay run` and waits until it streams the slot.
func (e *env) startRelay(extra ...string) *relayProc {
	e.t.Helper()
	return e.startRelayBin(relayBin, extra...)
}

// startRelayBin is startRelay with the binary bin.
func (e *env) startRelayBin(bin string, extra ...string) *relayProc {
	e.t.Helper()
	return e.startRelayArgs(bin, e.relayArgs(extra...)...)
}

// slotActive reports whether a walsender streams the test's slot.
func (e *env) slotActive() bool {
	e.t.Helper()
	active, err := replication.SlotActive(context.Background(), e.conn, e.slot)
	if err != nil {
		e.t.Fatal(err)
	}
	return active
}

// slotExists reports whether the test's slot exists.
func (e *env) slotExists() bool {
	e.t.Helper()
	_, err := replication.LookupSlot(context.Background(), e.conn, e.slot)
	if err != nil && !errors.Is(err, replication.ErrSlotNotFound) {
		e.t.Fatal(err)
	}
	return err == nil
}

// spawnRelay runs `cdc-relay run` without waiting for it to stream.
func (e *env) spawnRelay(extra ...string) *relayProc {
	e.t.Helper()
	return e.spawnRelayBin(relayBin, extra...)
}

// spawnRelayBin runs `cdc-relay run` from the binary bin without waiting
// for it to stream.
func (e *env) spawnRelayBin(bin string, extra ...string) *relayProc {
	e.t.Helper()
	return e.spawnRelayArgs(bin, e.relayArgs(extra...)...)
}

// relayArgs are the arguments of `cdc-relay run` for the test's database,
// broker, slot and topic prefix, with quicker status updates and
// checkpoints than the defaults and endpoints on a port of their own
// (relayProc.endpoint), then extra.
func (e *env) relayArgs(extra ...string) []string {
	return append([]string{"run",
		"--postgres-url", e.url,
		"--kafka-brokers", strings.Join(e.brokers, ","),
		"--slot", e.slot,
		"--topic-template", e.prefix + ".{aggregate_type}",
		"--status-interval", "200ms",
		"--metrics-addr", "127.0.0.1:0", // relays run side by side
	}, extra...)
}

// startRelayArgs runs the binary bin with exactly args and waits until it
// streams the test's slot (args must name it). The slot is active while it
// is being created, too: the log says when streaming began.
func (e *env) startRelayArgs(bin string, args ...string) *relayProc {
	e.t.Helper()
	p := e.spawnRelayArgs(bin, args...)
	e.waitFor("the relay streams the slot", 60*time.Second, func() bool {
		if !p.Running() {
			e.t.Fatalf("relay exited early: %v\n%s", p.Err(), p.Log())
		}
		return strings.Contains(p.Log(), "replication started") && e.slotActive()
	})
	return p
}

// spawnRelayArgs runs the binary bin with exactly args, in the
// environment e.childEnv says. When the test ends
// the process is killed, and a data race in its log fails the test.
func (e *env) spawnRelayArgs(bin string, args ...string) *relayProc {
	e.t.Helper()
	proc, err := relayproc.StartEnv(bin, e.childEnv(), args...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.relays = append(e.relays, proc)
	e.t.Cleanup(func() {
		if e.t.Failed() && proc.Running() {
			proc.Note("running when the test ended: killed")
		}
		proc.Kill()
		if strings.Contains(proc.Log(), "WARNING: DATA RACE") {
			e.t.Errorf("the race detector reported a data race in the relay")
		}
		if e.t.Failed() {
			e.t.Logf("relay log:\n%s", proc.Log())
		}
	})
	return &relayProc{Proc: proc, t: e.t}
}

// summarizeRelays, when the test failed, ends its output with a line per
// relay it started: how the relay ended and the last line it logged at
// ERROR or WARN. The relays' whole logs come before it, and a CI report
// that shows a failed test's last lines alone then still says which relay
// stopped, and why.
func (e *env) summarizeRelays() {
	if !e.t.Failed() || len(e.relays) == 0 {
		return
	}
	var b strings.Builder
	for i, p := range e.relays {
		fmt.Fprintf(&b, "\n  relay %d (pid %d): %s", i+1, p.Pid(), p.Ending())
		last := lastLineWith(p.Log(), "")
		if line := lastLineWith(p.Log(), "level=ERROR", "level=WARN"); line != "" && line != last {
			fmt.Fprintf(&b, "\n    its last error or warning: %s", line)
		}
		fmt.Fprintf(&b, "\n    its last line: %s", last)
	}
	e.t.Logf("the test's relays, in the order it started them:%s", b.String())
}

// lastLineWith returns the last line of log that contains one of subs
// ("": the last line that is not empty), or "".
func lastLineWith(log string, subs ...string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		for _, s := range subs {
			if strings.Contains(lines[i], s) {
				return lines[i]
			}
		}
	}
	return ""
}

// stop sends SIGTERM and requires a clean exit within timeout.
func (p *relayProc) stop(timeout time.Duration) {
	p.t.Helper()
	if err := p.Stop(timeout); err != nil {
		p.t.Fatalf("%v\n%s", err, p.Log())
	}
}

// peakRSS reads the relay's peak resident set (VmHWM) in bytes.
func (p *relayProc) peakRSS() int64 {
	p.t.Helper()
	rss, err := p.PeakRSS()
	if err != nil {
		p.t.Fatal(err)
	}
	return rss
}

// waitFor polls cond until it holds, failing the test after timeout.
func (e *env) waitFor(what string, timeout time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %s waiting until %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitDrained waits until left reports nothing left, as long as it keeps
// falling: it fails once left has not fallen for stall (a drain that
// stopped), or after ten minutes in all. A drain's pace depends on the
// machine's load; that it stops does not.
func (e *env) waitDrained(what string, stall time.Duration, left func() int) {
	e.t.Helper()
	began := time.Now()
	least, since := left(), time.Now()
	for least > 0 {
		switch {
		case time.Since(since) > stall:
			e.t.Fatalf("%s stopped draining: %d left, none fewer for %s (%s in all)", what, least, stall, time.Since(began).Round(time.Second))
		case time.Since(began) > 10*time.Minute:
			e.t.Fatalf("%s: %d left after %s", what, least, time.Since(began).Round(time.Second))
		}
		time.Sleep(50 * time.Millisecond)
		if n := left(); n < least {
			least, since = n, time.Now()
		}
	}
}

// insert inserts one event in its own statement on conn (or tx).
func insert(t *testing.T, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, agg, key, eventType, payload string) {
	t.Helper()
	if _, err := q.Exec(context.Background(),
		"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ($1, $2, $3, $4)",
		agg, key, eventType, payload); err != nil {
		t.Fatalf("insert: %v", err)
	}
}

// Positions e.lsn reads, each a query of one pg_lsn (@slot is the test's
// slot).
const (
	// slotLSN is the slot's confirmed_flush_lsn.
	slotLSN = "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = @slot"
	// currentLSN is pg_current_wal_lsn(): the end of the WAL written out.
	currentLSN = "SELECT pg_current_wal_lsn()"
	// insertLSN is pg_current_wal_insert_lsn(): after a COMMIT returns, at
	// or past the end of its commit record (pg_current_wal_lsn() may still
	// be short of it).
	insertLSN = "SELECT pg_current_wal_insert_lsn()"
	// checkpointLSN is the relay's checkpoint row for the slot.
	checkpointLSN = "SELECT lsn FROM cdc_relay_checkpoint WHERE slot_name = @slot"
)

// lsn reads one of the positions above on the test's connection.
func (e *env) lsn(query string) pglogrepl.LSN {
	e.t.Helper()
	var s *string
	if err := e.conn.QueryRow(context.Background(), "SELECT ("+query+")::text",
		pgx.NamedArgs{"slot": e.slot}).Scan(&s); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	if s == nil {
		e.t.Fatalf("%s: no position (slot %s)", query, e.slot)
	}
	lsn, err := pglogrepl.ParseLSN(*s)
	if err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return lsn
}

// checkWriteAhead requires the slot's confirmed position to be at or
// behind the relay's checkpoint row: the row is saved before a position is
// confirmed. The slot is read first; the row only grows.
func (e *env) checkWriteAhead() {
	e.t.Helper()
	if slot, row := e.lsn(slotLSN), e.lsn(checkpointLSN); slot > row {
		e.t.Fatalf("the slot confirmed %s, past the checkpoint row's %s", slot, row)
	}
}

// client returns a Kafka client for reading back.
func (e *env) client() *kgo.Client {
	e.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.brokers...)}, e.kafkaOpts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return cl
}

// endOffsets returns each partition's high watermark; an unknown topic has
// none.
func (e *env) endOffsets(cl *kgo.Client, topic string) map[int32]int64 {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := kafkatest.EndOffsets(ctx, cl, topic)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// readAll reads every record of topic up to the high watermarks at the time
// of the call.
func (e *env) readAll(topic string) []*kgo.Record {
	e.t.Helper()
	ends := e.endOffsets(e.client(), topic)
	total := int64(0)
	for _, o := range ends {
		total += o
	}
	if total == 0 {
		return nil
	}
	return e.readN(topic, int(total), 60*time.Second)
}

// fromStart returns a client that consumes topic from its start, with
// extra options, reaching the broker as e.kafkaOpts say; the caller closes
// it.
func (e *env) fromStart(topic string, extra ...kgo.Opt) *kgo.Client {
	e.t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(e.brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond)}
	cl, err := kgo.NewClient(append(append(opts, extra...), e.kafkaOpts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	return cl
}

// readN reads topic from the start until n records arrived; it fails the
// test after timeout.
func (e *env) readN(topic string, n int, timeout time.Duration) []*kgo.Record {
	e.t.Helper()
	cl := e.fromStart(topic)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			e.t.Fatalf("read %s: got %d of %d records within %s", topic, len(recs), n, timeout)
		}
		f.EachError(func(t string, p int32, err error) {
			if !kerr.IsRetriable(err) {
				e.t.Fatalf("fetch %s[%d]: %v", t, p, err)
			}
		})
		recs = append(recs, f.Records()...)
	}
	return recs
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
