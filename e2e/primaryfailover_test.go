package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// primaryFailover is a test's own PostgreSQL primary and streaming standby
// (not the package's shared cluster), one database on them, the relay's
// connection string listing both hosts (target_session_attrs=read-write),
// and a writer that keeps committing events through the failover.
//
// A test runs the relay (startRelay, with the variant's flags), starts the
// writer, calls failOver, does what its variant does after it, and ends
// with finish, which requires every acknowledged commit in Kafka. A relay
// that repairs the gap itself (--on-slot-loss recover) would be checked
// with firstAfterPromotion(30*time.Second) right after failOver, and that
// it is still running; with failover slots (PostgreSQL 17 and later:
// StandbyOptions.SlotSync, and a slot made with failover), the same, and
// that it reported no gap.
type primaryFailover struct {
	*env
	primary, standby *pgtemp.Cluster
	topic            string
	w                *ackWriter
	promoted         time.Time // when the standby accepted writes
}

// newPrimaryFailover starts a primary and a synchronous standby of it
// (standby says more, such as slot synchronisation, which it leaves out
// before PostgreSQL 17), creates the test's
// database before the standby copies the primary, and migrates it with
// the multi-host connection string.
func newPrimaryFailover(t *testing.T, standby pgtemp.StandbyOptions) *primaryFailover {
	t.Helper()
	f := &primaryFailover{primary: pgtemptest.StartT(t, pgtemp.Options{})}
	name := fmt.Sprintf("e2e_%d_%d", os.Getpid(), envSeq.Add(1))
	admin := mustConnect(t, f.primary.URL("postgres"))
	mustExec(t, admin, "CREATE DATABASE "+name)
	var version int
	if err := admin.QueryRow(context.Background(), "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	admin.Close(context.Background())
	if version < 170000 {
		standby.SlotSync = false // no failover slots before 17
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	standby.Synchronous = true // every acknowledged commit is on the standby
	s, err := f.primary.StartStandby(ctx, standby)
	if err != nil {
		t.Fatal(err)
	}
	f.standby = s
	t.Cleanup(func() { _ = s.Stop() })
	f.env = &env{t: t, slot: name, prefix: "e2e." + name, url: multiHostURL(name, f.primary, s)}
	f.topic = f.env.topic("order")
	f.prepare()
	return f
}

// multiHostURL is a connection string to database db that lists the
// hosts of clusters in order and connects to the first that takes writes.
func multiHostURL(db string, clusters ...*pgtemp.Cluster) string {
	hosts := make([]string, len(clusters))
	for i, c := range clusters {
		hosts[i] = c.Addr()
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&target_session_attrs=read-write", strings.Join(hosts, ","), db)
}

// checkCommands requires `migrate`, `status` (reading the database) and
// `failed list` to work with the connection string url.
func (f *primaryFailover) checkCommands(url string) {
	f.t.Helper()
	for _, args := range [][]string{
		{"migrate", "--postgres-url", url, "--slot", f.slot},
		{"status", "--metrics-addr", "127.0.0.1:1", "--postgres-url", url, "--slot", f.slot, "--json"},
		{"failed", "list", "--json", "--limit", "0", "--postgres-url", url},
	} {
		out, err := exec.Command(relayBin, args...).CombinedOutput()
		var exit *exec.ExitError
		if args[0] == "status" && errors.As(err, &exit) && exit.ExitCode() == 3 {
			err = nil // no relay answers, as asked: the status is the database's
		}
		if err != nil {
			f.t.Fatalf("cdc-relay %s with %s: %v\n%s", args[0], url, err, out)
		}
	}
}

// startWriter starts committing one-event transactions, a few hundred a
// second, and waits until the relay has delivered n of them.
func (f *primaryFailover) startWriter(n int) {
	f.t.Helper()
	f.w = startAckWriter(f.t, f.url, 3*time.Millisecond)
	cl := f.client()
	f.waitFor(fmt.Sprintf("%d events reach Kafka", n), 60*time.Second, func() bool { return f.totalRecords(cl, f.topic) >= n })
}

// failOver crashes the primary (pg_ctl stop -m immediate) while the
// writer commits, and promotes the standby, as Patroni or an operator
// would; e.conn then points at the new primary. The standby being
// synchronous, it has every commit the writer saw succeed.
func (f *primaryFailover) failOver() {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := f.primary.Halt(ctx, "immediate"); err != nil {
		f.t.Fatal(err)
	}
	if err := f.standby.Promote(ctx); err != nil {
		f.t.Fatal(err)
	}
	f.promoted = time.Now()
	f.conn.Close(context.Background())
	f.conn = mustConnect(f.t, f.url)
	f.t.Logf("primary crashed and standby promoted after %d acknowledged commits", f.w.acked())
}

// firstAfterPromotion waits until the first event committed after the
// promotion is in Kafka, and returns how long after the promotion it was
// read; it fails the test after timeout.
func (f *primaryFailover) firstAfterPromotion(timeout time.Duration) time.Duration {
	f.t.Helper()
	deadline := f.promoted.Add(timeout)
	var first ack
	f.waitFor("a commit succeeds on the new primary", time.Until(deadline), func() bool {
		var ok bool
		first, ok = f.w.firstAckedAfter(f.promoted)
		return ok
	})
	cl := f.fromStart(f.topic)
	defer cl.Close()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			f.t.Fatalf("the first event committed after the promotion (n=%d) is not in Kafka %s after the promotion", first.n, timeout)
		}
		for _, r := range fetches.Records() {
			if payloadN(f.t, r.Value) == first.n {
				return time.Since(f.promoted)
			}
		}
	}
}

// payloadN is the N of an ackWriter's event.
func payloadN(t *testing.T, value []byte) int {
	t.Helper()
	var p struct{ N int }
	if err := json.Unmarshal(value, &p); err != nil {
		t.Fatalf("record %s: %v", value, err)
	}
	return p.N
}

// recoverArgs are the arguments of `cdc-relay recover` matching run's.
func (f *primaryFailover) recoverArgs() []string {
	return append([]string{"recover"}, withoutFlag(f.relayArgs()[1:], "--metrics-addr")...)
}

// finish lets the writer commit more events on the new primary,
// stops it, waits until the slot confirms past the last commit, and
// requires every acknowledged commit in Kafka. It returns how many
// acknowledged events arrived more than once, and how many events whose
// commit failed (the crash cut the answer off) arrived anyway.
func (f *primaryFailover) finish(more int) (dups, unacked int) {
	f.t.Helper()
	f.w.waitAckedAfter(f.promoted, more)
	acked := f.w.stop()
	end := f.lsn(insertLSN)
	f.waitFor("the slot confirms past the last commit", 60*time.Second, func() bool { return f.lsn(slotLSN) >= end })
	seen := map[int]int{}
	for _, r := range f.readAll(f.topic) {
		seen[payloadN(f.t, r.Value)]++
	}
	var lost []int
	for n := range acked {
		switch {
		case seen[n] == 0:
			lost = append(lost, n)
		case seen[n] > 1:
			dups += seen[n] - 1
		}
	}
	if len(lost) > 0 {
		f.t.Fatalf("%d of %d acknowledged events are not in Kafka (e.g. n=%d)", len(lost), len(acked), lost[0])
	}
	for n := range seen {
		if !acked[n] {
			unacked++
		}
	}
	f.t.Logf("%d acknowledged events, all in Kafka; %d arrived more than once; %d whose commit failed arrived anyway", len(acked), dups, unacked)
	return dups, unacked
}

// TestPrimaryFailoverRefuse: the primary crashes under a steady write
// load and its synchronous standby is promoted. The promoted server has no
// logical slot (no failover slots), so the relay, on a connection string
// naming both servers, reaches the new primary and refuses to go on: it
// says the slot is gone and how to go on. `cdc-relay recover` with the
// same connection string publishes the gap again, `run` goes on, and
// every commit the writer saw succeed is in Kafka.
func TestPrimaryFailoverRefuse(t *testing.T) {
	parallel(t)
	f := newPrimaryFailover(t, pgtemp.StandbyOptions{})
	// Until the failover, the first host listed is the standby; after it,
	// the first host is down.
	standbyFirst := multiHostURL(f.slot, f.standby, f.primary)
	relay := f.startRelayArgs(relayBin, withFlag(f.relayArgs(), "--postgres-url", standbyFirst)...)
	f.startWriter(1000)
	if want := "postgres=postgres://postgres@" + f.standby.Addr() + "," + f.primary.Addr() + "/"; !strings.Contains(relay.Log(), want) {
		t.Errorf("the start-up line does not name both servers (%s)", want)
	}
	f.checkCommands(standbyFirst)
	f.failOver()
	f.waitFor("the relay stops at the gap", 60*time.Second, func() bool { return !relay.Running() })
	for _, want := range []string{"does not exist", "cdc-relay recover", "--accept-slot-loss"} {
		if !strings.Contains(relay.Log(), want) {
			t.Fatalf("the relay's refusal does not mention %q:\n%s", want, relay.Log())
		}
	}
	t.Logf("the relay refused %s after the promotion:\n%s", time.Since(f.promoted).Round(time.Millisecond), lastLines(relay.Log(), 2))
	f.w.waitAckedAfter(f.promoted, 500)
	out, err := exec.Command(relayBin, f.recoverArgs()...).CombinedOutput()
	if err != nil {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	t.Logf("recover said:\n%s", out)
	relay = f.startRelay()
	t.Logf("the first event committed after the promotion arrived %s after it (recover run by hand)",
		f.firstAfterPromotion(2*time.Minute).Round(time.Millisecond))
	f.checkCommands(f.url) // the first host down
	f.finish(500)
	relay.stop(30 * time.Second)
}

// ackWriter commits one-event transactions on a connection string until
// stopped, each with payload {"n": N} (N counts the attempts), and
// records the N of each commit that returned success. A failed commit (the
// server went away) is not recorded; the writer reconnects, through the
// connection string's hosts, until a server takes writes again.
type ackWriter struct {
	t    *testing.T
	url  string
	done chan struct{}
	end  chan struct{}

	mu      sync.Mutex
	ok      map[int]bool
	acks    []ack // each acknowledged commit, in order
	attempt int
}

// ack is an acknowledged commit: its N and when it returned.
type ack struct {
	n  int
	at time.Time
}

func startAckWriter(t *testing.T, url string, every time.Duration) *ackWriter {
	w := &ackWriter{t: t, url: url, done: make(chan struct{}), end: make(chan struct{}), ok: map[int]bool{}}
	go w.run(every)
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			w.stop()
		}
	})
	return w
}

// run writes until stopped: one commit per tick, reconnecting after a
// failure.
func (w *ackWriter) run(every time.Duration) {
	defer close(w.end)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	tick := time.NewTicker(every) // pacing, not synchronisation
	defer tick.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-tick.C:
		}
		if conn == nil || conn.IsClosed() {
			conn = w.connect()
			continue
		}
		w.commitOne(conn)
	}
}

// connect connects to the server that takes writes, or returns nil.
func (w *ackWriter) connect() *pgx.Conn {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, w.url)
	if err != nil {
		return nil
	}
	return conn
}

// commitOne commits one event and records it if the commit returned
// success.
func (w *ackWriter) commitOne(conn *pgx.Conn) {
	w.mu.Lock()
	n := w.attempt
	w.attempt++
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := conn.Exec(ctx, "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('order', $1, 'OrderChanged', $2)",
		fmt.Sprintf("key-%d", n%10), fmt.Sprintf(`{"n": %d}`, n))
	if err != nil {
		conn.Close(context.Background())
		return
	}
	w.mu.Lock()
	w.ok[n] = true
	w.acks = append(w.acks, ack{n, time.Now()})
	w.mu.Unlock()
}

// acked is how many commits returned success.
func (w *ackWriter) acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ok)
}

// ackedAfter is how many commits returned success after t.
func (w *ackWriter) ackedAfter(t time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for i := len(w.acks) - 1; i >= 0 && w.acks[i].at.After(t); i-- {
		n++
	}
	return n
}

// firstAckedAfter is the first commit that returned success after t.
func (w *ackWriter) firstAckedAfter(t time.Time) (ack, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.acks {
		if a.at.After(t) {
			return a, true
		}
	}
	return ack{}, false
}

// waitAckedAfter waits until n commits returned success after t.
func (w *ackWriter) waitAckedAfter(t time.Time, n int) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for w.ackedAfter(t) < n {
		if time.Now().After(deadline) {
			w.t.Fatalf("the writer committed %d of %d events after %s within 60s", w.ackedAfter(t), n, t.Format(time.TimeOnly))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop stops the writer; it returns the N of each acknowledged commit.
func (w *ackWriter) stop() map[int]bool {
	close(w.done)
	<-w.end
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ok
}

// lastLines is the last n lines of log.
func lastLines(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// withFlag returns args with the value of flag name replaced by value.
func withFlag(args []string, name, value string) []string {
	out := append([]string(nil), args...)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == name {
			out[i+1] = value
		}
	}
	return out
}

// TestPrimaryFailoverRecover: the same failover with the relay left to
// itself (--on-slot-loss recover). It never exits, and the first event
// committed after the promotion reaches Kafka within 30 s. Before
// PostgreSQL 17 the promoted server has no slot: the relay repairs the gap
// (it logs the window and the count) and streams on. On 17 and later the
// slot is a failover slot that the standby synchronises: the promoted
// server has it, and there is no gap to repair at all.
func TestPrimaryFailoverRecover(t *testing.T) {
	parallel(t)
	f := newPrimaryFailover(t, pgtemp.StandbyOptions{SlotSync: true})
	failoverSlots := f.serverVersion() >= 170000
	relay := f.startRelay("--on-slot-loss", "recover")
	f.startWriter(1000)
	if failoverSlots {
		f.waitSlotSynced()
	}
	f.failOver()
	took := f.firstAfterPromotion(30 * time.Second)
	t.Logf("the first event committed after the promotion arrived %s after it", took.Round(time.Millisecond))
	if !relay.Running() {
		t.Fatalf("the relay exited after the failover:\n%s", lastLines(relay.Log(), 20))
	}
	const repaired = "repaired the gap in the WAL"
	if failoverSlots {
		f.finish(500)
		if strings.Contains(relay.Log(), repaired) || strings.Contains(relay.Log(), "does not exist") {
			t.Fatalf("PostgreSQL 17+ with a failover slot: the promoted server should have the slot, but the relay found a gap:\n%s", lastLines(relay.Log(), 20))
		}
		t.Logf("failover slot: no gap to repair; the relay said:\n%s", grepLines(relay.Log(), "replication slot found", "resuming from"))
	} else {
		f.waitFor("the relay says it repaired the gap", 60*time.Second, func() bool { return strings.Contains(relay.Log(), repaired) })
		t.Logf("the relay repaired the gap by itself:\n%s", grepLines(relay.Log(), repaired))
		f.finish(500)
	}
	if !relay.Running() {
		t.Fatalf("the relay exited:\n%s", lastLines(relay.Log(), 20))
	}
	relay.stop(30 * time.Second)
}

// serverVersion is the server's server_version_num.
func (f *primaryFailover) serverVersion() int {
	f.t.Helper()
	var v string
	if err := f.conn.QueryRow(context.Background(), "SHOW server_version_num").Scan(&v); err != nil {
		f.t.Fatal(err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// waitSlotSynced waits until the standby holds a synchronised copy of the
// relay's slot that it keeps at its promotion: not temporary (the standby
// keeps a copy temporary until the primary's slot passes what the standby
// needs, and drops such a copy when promoted).
func (f *primaryFailover) waitSlotSynced() {
	f.t.Helper()
	sc := mustConnect(f.t, f.standby.URL(f.slot))
	defer sc.Close(context.Background())
	// The slot sync worker naps up to 30 s between rounds while nothing
	// changes, and keeps the copy temporary while the standby's replay
	// is behind the slot: on a busy machine that takes more than a round.
	began := time.Now()
	f.waitFor("the standby holds a persistent synchronised copy of the slot", 3*time.Minute, func() bool {
		var ok bool
		err := sc.QueryRow(context.Background(), "SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name = $1 AND synced AND NOT temporary", f.slot).Scan(&ok)
		return err == nil && ok
	})
	f.t.Logf("the standby's copy of the slot was persistent %s after the wait began", time.Since(began).Round(time.Millisecond))
}

// grepLines is the lines of log that contain any of subs.
func grepLines(log string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
