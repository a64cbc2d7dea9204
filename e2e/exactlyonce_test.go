package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The exactly-once mode (`run --delivery exactly-once`, issue 18): every
// record in a Kafka transaction with the position it reaches, so that a
// read_committed consumer sees each event once, whatever happens to the
// relay, PostgreSQL or the broker. Each test counts the events by their id
// header, as a read_committed consumer sees them, against the outbox
// table's rows.

// exactlyOnce are the run flags of the mode.
var exactlyOnce = []string{"--delivery", "exactly-once"}

// checkpointTopic is the mode's default checkpoint topic.
const checkpointTopic = "cdc-relay.checkpoints"

// idCounts is how many records carried each event id (the record's id
// header; "" for a record without one).
type idCounts map[string]int

// countCommitted reads topic from its start as a read_committed consumer
// until it has seen n distinct ids and reached the topic's last stable
// offsets, or until timeout has passed; it returns what it counted by then
// and does not fail the test on a timeout: the caller compares the counts
// with what it wrote (idCounts.tally), which names what is missing.
func (e *env) countCommitted(topic string, n int, timeout time.Duration) idCounts {
	e.t.Helper()
	counts := idCounts{}
	e.readCommittedUntil(topic, timeout, func() bool { return len(counts) >= n }, func(r *kgo.Record) {
		counts[header(r, "id")]++
	})
	return counts
}

// committedFromStart is fromStart as a read_committed consumer that keeps
// the control records (the commit and abort markers), so that its position
// is known: it is past the last record returned, markers included, and
// aborted records are followed by their marker.
func (e *env) committedFromStart(topic string) *kgo.Client {
	e.t.Helper()
	return e.fromStart(topic, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
}

// readCommittedUntil reads topic from its start as a read_committed
// consumer, handing each committed record (never a control record, never
// one of an aborted or open transaction) to each, until enough reports true
// and the consumer has reached every partition's last stable offset, or
// until timeout has passed. It reports whether it got there.
func (e *env) readCommittedUntil(topic string, timeout time.Duration, enough func() bool, each func(*kgo.Record)) bool {
	e.t.Helper()
	cl := e.committedFromStart(topic)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pos := map[int32]int64{}
	for {
		if enough() && e.reachedStable(ctx, cl, topic, pos) {
			return true
		}
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return false
		}
		f.EachError(func(t string, p int32, err error) {
			if !kerr.IsRetriable(err) && !errors.Is(err, context.DeadlineExceeded) {
				e.t.Fatalf("fetch %s[%d]: %v", t, p, err)
			}
		})
		f.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				each(r)
			}
		})
	}
}

// reachedStable reports whether pos, the consumer's position in each
// partition of topic, is at or past the partition's last stable offset:
// what a read_committed consumer can read of it now. A topic that does not
// exist is reached.
func (e *env) reachedStable(ctx context.Context, cl *kgo.Client, topic string, pos map[int32]int64) bool {
	listed, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return false // asked again after the next poll
	}
	for p, o := range listed[topic] {
		switch {
		case errors.Is(o.Err, kerr.UnknownTopicOrPartition) && p < 0:
			return true
		case o.Err != nil:
			return false
		case pos[p] < o.Offset:
			return false
		}
	}
	return true
}

// tally is how a read compares with the events written.
type tally struct {
	lost       []string // written, never read
	duplicated []string // read more than once
	extra      int      // copies beyond the first, over all duplicated ids
	unexpected []string // read, never written (or without an id)
}

// tally compares the counts with want, the ids of the events written.
func (c idCounts) tally(want []string) tally {
	var t tally
	wanted := make(map[string]bool, len(want))
	for _, id := range want {
		wanted[id] = true
		if c[id] == 0 {
			t.lost = append(t.lost, id)
		}
	}
	for id, n := range c {
		if !wanted[id] {
			t.unexpected = append(t.unexpected, id)
		}
		if n > 1 {
			t.duplicated = append(t.duplicated, id)
			t.extra += n - 1
		}
	}
	return t
}

// String says the numbers.
func (t tally) String() string {
	return fmt.Sprintf("%d lost, %d duplicated (%d extra copies), %d unexpected",
		len(t.lost), len(t.duplicated), t.extra, len(t.unexpected))
}

// examples says the numbers with a few of the ids behind each.
func (t tally) examples() string {
	few := func(ids []string) string {
		slices.Sort(ids)
		if len(ids) > 5 {
			return strings.Join(ids[:5], ", ") + ", …"
		}
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%d lost [%s], %d duplicated (%d extra copies) [%s], %d unexpected [%s]",
		len(t.lost), few(t.lost), len(t.duplicated), t.extra, few(t.duplicated), len(t.unexpected), few(t.unexpected))
}

// requireEachOnce fails the test unless every event of want was read
// exactly once from topic and nothing else was.
func requireEachOnce(t *testing.T, topic string, c idCounts, want []string) {
	t.Helper()
	if got := c.tally(want); len(got.lost) > 0 || len(got.duplicated) > 0 || len(got.unexpected) > 0 {
		t.Fatalf("%s, read_committed, %d events written: %s", topic, len(want), got.examples())
	}
}

// outboxIDs returns the ids of the outbox rows for which where holds (a
// condition on the outbox table; "true" for all): the events the relay
// must deliver. The table is the truth, not a writer's count: a writer
// cut off by a restart does not know whether its last commit landed.
func (e *env) outboxIDs(where string) []string {
	e.t.Helper()
	rows, err := e.conn.Query(context.Background(), "SELECT id::text FROM outbox WHERE "+where)
	if err != nil {
		e.t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}

// waitConfirmed waits until the slot confirms past every commit so far:
// the relay has delivered (or parked) every event, and, in exactly-once
// mode, committed the Kafka transactions that hold them.
func (e *env) waitConfirmed(timeout time.Duration) {
	e.t.Helper()
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last commit", timeout, func() bool { return e.lsn(slotLSN) >= end })
}

// markLast commits one more event, in a transaction of its own, after
// everything written so far, and returns a position before its commit: a
// checkpoint that holds the event is past it.
func (e *env) markLast() pglogrepl.LSN {
	e.t.Helper()
	before := e.lsn(insertLSN)
	insert(e.t, e.conn, "order", "last", "Last", `{"last": true}`)
	return before
}

// requireCheckpointPast requires the checkpoint topic to be compacted and
// its newest committed record for the test's slot to name the slot and a
// position past lsn: the Kafka transaction that held the last event (see
// markLast) committed that position with it.
func (e *env) requireCheckpointPast(lsn pglogrepl.LSN) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	configs, err := kadm.NewClient(e.client()).DescribeTopicConfigs(ctx, checkpointTopic)
	if err != nil {
		e.t.Fatalf("describe %s: %v", checkpointTopic, err)
	}
	policy, err := configs.On(checkpointTopic, nil)
	if err != nil || policy.Err != nil {
		e.t.Fatalf("describe %s: %v %v", checkpointTopic, err, policy.Err)
	}
	for _, c := range policy.Configs {
		if c.Key == "cleanup.policy" && c.MaybeValue() != "compact" {
			e.t.Errorf("%s has cleanup.policy=%s, want compact", checkpointTopic, c.MaybeValue())
		}
	}
	// Kafka answers a commit once it is decided, and writes its markers
	// to each partition after: the checkpoint's may land a moment after
	// the events', so the topic is read again until it shows the
	// position, for up to 30 s.
	e.waitFor(fmt.Sprintf("the newest committed checkpoint of slot %s is past %s, before the last event's commit", e.slot, lsn), 30*time.Second,
		func() bool { return e.newestCheckpoint() > lsn })
}

// newestCheckpoint reads the checkpoint topic to its last stable offset
// and returns the position of the newest committed record of the test's
// slot, which must name the slot; 0 when there is none yet.
func (e *env) newestCheckpoint() pglogrepl.LSN {
	e.t.Helper()
	var last []byte
	reached := e.readCommittedUntil(checkpointTopic, 30*time.Second, func() bool { return true }, func(r *kgo.Record) {
		if string(r.Key) == e.slot {
			last = r.Value
		}
	})
	if !reached {
		e.t.Fatalf("could not read %s to its end within 30s", checkpointTopic)
	}
	if last == nil {
		return 0
	}
	var cp struct {
		Slot string `json:"slot"`
		LSN  string `json:"lsn"`
	}
	if err := json.Unmarshal(last, &cp); err != nil {
		e.t.Fatalf("checkpoint record %s: %v", last, err)
	}
	got, err := pglogrepl.ParseLSN(cp.LSN)
	if err != nil || cp.Slot != e.slot {
		e.t.Fatalf("checkpoint record %s: slot %q, lsn %v", last, cp.Slot, err)
	}
	return got
}

// load commits events from a goroutine of its own as an application
// does: transactions of 1–5 rows (each one INSERT … SELECT), keys key-0 …
// key-9, at about a given rate. It reconnects when PostgreSQL restarts or
// ends its session.
type load struct {
	t       *testing.T
	written atomic.Int64 // events committed, as far as the writer knows
	stopc   chan struct{}
	done    chan struct{}
	err     error // set before done is closed
	once    sync.Once
}

// startLoad starts a load that commits total events (0: until stopped) at
// about rate events a second.
func (e *env) startLoad(total int, rate float64) *load {
	l := &load{t: e.t, stopc: make(chan struct{}), done: make(chan struct{})}
	url := e.url
	go func() {
		defer close(l.done)
		l.err = l.run(url, total, rate)
	}()
	e.t.Cleanup(func() {
		l.stop()
	})
	return l
}

// run is the writer's loop.
func (l *load) run(url string, total int, rate float64) error {
	const insert = `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT 'order', 'key-' || (g % 10), 'OrderChanged', json_build_object('n', g)::jsonb
		FROM generate_series($1::int, $2::int - 1) g`
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 1))
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(ctx)
		}
	}()
	start := time.Now()
	var failingSince time.Time
	for n := 0; total == 0 || n < total; {
		select {
		case <-l.stopc:
			return nil
		default:
		}
		if conn == nil {
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				if failingSince.IsZero() {
					failingSince = time.Now()
				} else if time.Since(failingSince) > 2*time.Minute {
					return fmt.Errorf("the writer cannot reconnect: %w", err)
				}
				time.Sleep(100 * time.Millisecond) // a reconnect's backoff
				continue
			}
			conn = c
		}
		rows := 1 + rng.IntN(5)
		if total > 0 {
			rows = min(rows, total-n)
		}
		if _, err := conn.Exec(ctx, insert, n, n+rows); err != nil {
			// PostgreSQL restarted or ended the session; whether this
			// commit landed is the table's to say.
			conn.Close(ctx)
			conn = nil
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else if time.Since(failingSince) > 2*time.Minute {
				return fmt.Errorf("the writer fails: %w", err)
			}
			continue
		}
		failingSince = time.Time{}
		n += rows
		l.written.Store(int64(n))
		if wait := time.Until(start.Add(time.Duration(float64(n) / rate * float64(time.Second)))); wait > 0 {
			time.Sleep(wait) // the application's pace, not a synchronisation
		}
	}
	return nil
}

// count is how many events the writer has committed.
func (l *load) count() int { return int(l.written.Load()) }

// waitWritten waits until the writer has committed n events.
func (l *load) waitWritten(n int, timeout time.Duration) {
	l.t.Helper()
	deadline := time.Now().Add(timeout)
	for l.count() < n {
		select {
		case <-l.done:
			if l.err != nil {
				l.t.Fatal(l.err)
			}
			if l.count() < n {
				l.t.Fatalf("the writer finished after %d events, want %d", l.count(), n)
			}
		default:
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("the writer committed %d of %d events within %s", l.count(), n, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop stops the writer and waits for it; the first call fails the test
// if the writer failed.
func (l *load) stop() {
	l.t.Helper()
	l.once.Do(func() {
		close(l.stopc)
		<-l.done
		if l.err != nil {
			l.t.Error(l.err)
		}
	})
}

// killEvents is the load of TestExactlyOnceThroughKills: issue 18 asks for
// 100,000 events; CDC_RELAY_TEST_KILL_EVENTS sets another number.
func killEvents(t *testing.T) int {
	n := 100_000
	if s := harnessEnv["CDC_RELAY_TEST_KILL_EVENTS"]; s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1000 {
			t.Fatalf("CDC_RELAY_TEST_KILL_EVENTS=%q: want a number of at least 1000", s)
		}
	}
	return n
}

// TestExactlyOnceThroughKills: events in small transactions, written at an
// application's pace while the relay is killed with SIGKILL ten times and
// started again each time. In exactly-once mode a read_committed consumer
// reads every event once; in at-least-once mode, the same run loses
// nothing and shows its duplicates for comparison.
func TestExactlyOnceThroughKills(t *testing.T) {
	parallel(t)
	const kills = 10
	total := killEvents(t)
	for _, tc := range []struct {
		name   string
		flags  []string
		exact  bool
		events int           // written at an even pace over
		over   time.Duration // this long
	}{
		{"exactly-once", exactlyOnce, true, total, 20 * time.Second},
		// The comparison needs fewer events to show its duplicates,
		// and the suite's time.
		{"at-least-once", nil, false, total / 4, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total := tc.events
			e := newEnv(t)
			began := time.Now()
			topic := e.topic("order")
			e.createTopic(topic, nil) // no wait for auto-creation in the first transaction
			relay := e.startRelay(tc.flags...)
			cl := e.client()
			l := e.startLoad(total, float64(total)/tc.over.Seconds())
			for i := 1; i <= kills; i++ {
				// Spread over the writing, each while the relay produces.
				l.waitWritten(i*total/(kills+1), 2*time.Minute)
				from := e.totalRecords(cl, topic)
				e.waitFor("the relay produces", 60*time.Second, func() bool { return e.totalRecords(cl, topic) > from })
				relay.Kill()
				relay = e.startRelay(tc.flags...)
			}
			l.waitWritten(total, 2*time.Minute)
			written := time.Since(began)
			lastAt := e.markLast()
			e.waitConfirmed(2 * time.Minute)
			drained := time.Since(began)
			ids := e.outboxIDs("true")
			if len(ids) != total+1 {
				t.Fatalf("the outbox holds %d events, want %d", len(ids), total+1)
			}
			counts := e.countCommitted(topic, len(ids), 2*time.Minute)
			got := counts.tally(ids)
			t.Logf("%s: %d events, %d SIGKILLs: %s; %d offsets in the topic (aborted records and transaction markers too); "+
				"written in %s, delivered %s after the start, read in %s",
				tc.name, len(ids), kills, got, e.totalRecords(cl, topic), written.Round(time.Second), drained.Round(time.Second),
				(time.Since(began) - drained).Round(time.Second))
			if tc.exact {
				requireEachOnce(t, topic, counts, ids)
				e.requireCheckpointPast(lastAt)
			} else if len(got.lost) > 0 || len(got.unexpected) > 0 {
				t.Fatalf("at-least-once: %s", got.examples())
			}
			relay.stop(30 * time.Second)
		})
	}
}

// TestExactlyOnceThroughRestartsAndOutage: in exactly-once mode under a
// steady load, PostgreSQL restarts twice (fast shutdown) and the broker is
// down for outageLength (10 s: past the relay's outage grace, within the
// transaction timeout); a read_committed consumer reads every event once.
func TestExactlyOnceThroughRestartsAndOutage(t *testing.T) {
	parallelOwnBroker(t) // it stops the broker
	if testing.Short() {
		t.Skip("10 s broker outage")
	}
	e, pg := newEnvOwnCluster(t)
	began := time.Now()
	topic := e.topic("order")
	e.createTopic(topic, nil)
	relay := e.startRelay(exactlyOnce...)
	cl := e.client()
	l := e.startLoad(0, 1000)
	flowing := func(what string) {
		e.t.Helper()
		from := e.totalRecords(cl, topic)
		e.waitFor(what, 90*time.Second, func() bool {
			if !relay.Running() {
				t.Fatalf("the relay exited: %v", relay.Err())
			}
			return e.totalRecords(cl, topic) >= from+500
		})
	}
	flowing("events flow")
	for i := 1; i <= 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := pg.Restart(ctx, "fast")
		cancel()
		if err != nil {
			t.Fatalf("restart PostgreSQL: %v", err)
		}
		t.Logf("PostgreSQL restarted (fast), %d events written", l.count())
		e.conn = mustConnect(t, e.url)
		t.Cleanup(func() { e.conn.Close(context.Background()) })
		flowing(fmt.Sprintf("events flow after restart %d", i))
	}
	e.stopBroker()
	t.Logf("broker stopped, %d events written", l.count())
	time.Sleep(outageLength) // the outage itself, not a synchronisation
	e.startBroker()
	cl = e.client()
	flowing("events flow after the outage")
	l.waitWritten(l.count()+2000, time.Minute)
	l.stop()
	lastAt := e.markLast()
	e.waitConfirmed(2 * time.Minute)
	ids := e.outboxIDs("true")
	counts := e.countCommitted(topic, len(ids), 2*time.Minute)
	t.Logf("%d events, two fast PostgreSQL restarts and a %s broker outage: %s; %s in all",
		len(ids), outageLength, counts.tally(ids), time.Since(began).Round(time.Second))
	requireEachOnce(t, topic, counts, ids)
	e.requireCheckpointPast(lastAt)
	relay.stop(30 * time.Second)
}

// transactionalID is the relay's default transactional id on the test's
// slot.
func (e *env) transactionalID() string { return "cdc-relay." + e.slot }

// producerEpoch returns the producer id and epoch the broker holds for the
// test's transactional id, once its transaction is in no prepared state
// (a commit or abort is not half done): ok is false until then.
func (e *env) producerEpoch(cl *kgo.Client) (id int64, epoch int16, ok bool) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	described, err := kadm.NewClient(cl).DescribeTransactions(ctx, e.transactionalID())
	if err != nil {
		return 0, 0, false
	}
	d, found := described[e.transactionalID()]
	if !found || d.Err != nil || strings.HasPrefix(d.State, "Prepare") {
		return 0, 0, false
	}
	return d.ProducerID, d.ProducerEpoch, true
}

// TestExactlyOnceFencesAZombie: relay A leads in exactly-once mode under
// load and stops dead (SIGSTOP) while its leadership lock's session is
// ended, so relay B takes the lead and initialises its transactional
// producer, which fences A at the broker. When A runs again, its next
// Kafka commit is refused: A exits with status 1 and says "fenced". B
// takes the slot once A's walsender is gone, and a read_committed consumer
// reads every event once.
//
// A zombie whose lock check comes due while it is stopped notices the lost
// lock when it runs again, as soon as its next commit does: whichever is
// first decides whether it stands by or stops fenced (with checks every
// 200 ms, one run in five stood by). The case under test is the commit:
// A checks its lock every 30 s, and stays stopped between two checks.
func TestExactlyOnceFencesAZombie(t *testing.T) {
	// Alone: A must stay stopped between two of its lock checks, 30 s apart, timed.
	const lockCheck = 30 * time.Second
	e := newEnv(t)
	began := time.Now()
	topic := e.topic("order")
	a := e.startRelay(append(slices.Clone(exactlyOnce), "--status-interval", lockCheck.String())...)
	streams := time.Now() // A's lock checks come every lockCheck from a moment before
	cl := e.client()
	l := e.startLoad(0, 1000)
	e.waitFor("events flow", 60*time.Second, func() bool { return e.totalRecords(cl, topic) >= 2000 })
	if time.Since(streams) > lockCheck/2 {
		t.Fatalf("events took %s to flow: too close to A's lock check", time.Since(streams).Round(time.Millisecond))
	}
	lockPID := e.leaderLockPID()
	if lockPID == 0 {
		t.Fatal("no session holds the leadership lock")
	}

	if err := syscall.Kill(a.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	t.Cleanup(func() { _ = syscall.Kill(a.Pid(), syscall.SIGCONT) })
	// What the broker holds for A once anything A had sent has settled;
	// from here on only B's initialisation changes it.
	var pidA int64
	var epochA int16
	e.waitFor("A's transaction settles", 30*time.Second, func() bool {
		var ok bool
		pidA, epochA, ok = e.producerEpoch(cl)
		return ok
	})
	mustExec(t, e.conn, "SELECT pg_terminate_backend($1)", lockPID)
	b := e.spawnRelay(exactlyOnce...)
	e.waitFor("B leads and fences A at the broker", 60*time.Second, func() bool {
		if !b.Running() {
			t.Fatalf("B exited: %v\n%s", b.Err(), b.Log())
		}
		pid, epoch, ok := e.producerEpoch(cl)
		return ok && (pid != pidA || epoch != epochA) && strings.Contains(b.Log(), "leadership acquired")
	})
	fenced := time.Now()
	pidB, epochB, _ := e.producerEpoch(cl)
	t.Logf("B initialised its producer %s after A stopped: producer %d epoch %d → %d epoch %d",
		fenced.Sub(stopped).Round(time.Millisecond), pidA, epochA, pidB, epochB)

	if time.Since(streams) > lockCheck-time.Second {
		t.Fatalf("A was stopped past its lock check, %s after it streamed: the test cannot say which comes first", time.Since(streams).Round(time.Millisecond))
	}
	if err := syscall.Kill(a.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	e.waitFor("A stops, fenced", 60*time.Second, func() bool {
		// A lock lost with its connection is said at debug; standing by
		// after it, at info.
		if (strings.Contains(a.Log(), "lost the leadership lock") || strings.Contains(a.Log(), "standing by")) && a.Running() {
			t.Fatalf("A noticed its lost lock and stepped down instead of being fenced:\n%s", a.Log())
		}
		return !a.Running()
	})
	t.Logf("A exited %s after SIGCONT: %v", time.Since(resumed).Round(time.Millisecond), a.Err())
	var exit *exec.ExitError
	if !errors.As(a.Err(), &exit) || exit.ExitCode() != 1 {
		t.Fatalf("A exited with %v, want exit status 1\n%s", a.Err(), a.Log())
	}
	said := lineWith(a.Log(), "fenced")
	if said == "" {
		t.Fatalf("A's log does not say it was fenced:\n%s", a.Log())
	}
	t.Logf("A said: %s", said)

	e.waitFor("B streams the slot", 2*time.Minute, func() bool {
		if !b.Running() {
			t.Fatalf("B exited: %v\n%s", b.Err(), b.Log())
		}
		return strings.Contains(b.Log(), "replication started") && e.slotActive()
	})
	t.Logf("B streams %s after SIGCONT", time.Since(resumed).Round(time.Millisecond))
	l.waitWritten(l.count()+2000, time.Minute)
	l.stop()
	e.waitConfirmed(2 * time.Minute)
	ids := e.outboxIDs("true")
	counts := e.countCommitted(topic, len(ids), 2*time.Minute)
	t.Logf("%d events across the fencing: %s; %s in all", len(ids), counts.tally(ids), time.Since(began).Round(time.Second))
	requireEachOnce(t, topic, counts, ids)
	b.stop(30 * time.Second)
}

// lineWith returns the first line of log that contains s, or "".
func lineWith(log, s string) string {
	for line := range strings.Lines(log) {
		if strings.Contains(line, s) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// failedListRow is what the test reads of `cdc-relay failed list --json`.
type failedListRow struct {
	Status    string  `json:"status"`
	Topic     string  `json:"topic"`
	EventID   *string `json:"event_id"`
	LastError string  `json:"last_error"`
}

// failedList runs `cdc-relay failed list --json --limit 0` on the test's
// database.
func (e *env) failedList() []failedListRow {
	e.t.Helper()
	out, err := exec.Command(relayBin, "failed", "list", "--json", "--limit", "0", "--postgres-url", e.url).Output()
	if err != nil {
		e.t.Fatalf("failed list: %v\n%s", err, out)
	}
	var rows []failedListRow
	if err := json.Unmarshal(out, &rows); err != nil {
		e.t.Fatalf("failed list --json: %v\n%s", err, out)
	}
	return rows
}

// TestExactlyOncePoison: one event that can never be delivered among 1,000
// good ones, in the same PostgreSQL transaction as ten of them, in
// exactly-once mode: its Kafka transaction is aborted and produced again
// without it; it is parked (and `failed list` shows it), nothing else is,
// and a read_committed consumer reads each good event once and never the
// poison.
func TestExactlyOncePoison(t *testing.T) {
	parallel(t)
	tests := []struct {
		name   string
		topic  func(e *env) string // where the poison goes; it is created with maxMessageBytes if set
		limit  string              // the poison topic's max.message.bytes, "" for the broker's default
		size   int                 // the poison's payload, in bytes
		reason string              // in the parked row's last error
	}{
		// The broker refuses it: a topic's max.message.bytes, which the
		// producer does not know.
		{"larger than the topic's max.message.bytes", func(e *env) string { return e.prefix + ".small" }, "100000", 500_000, "MESSAGE_TOO_LARGE"},
		// The producer refuses it: over its 1,000,012-byte record batch
		// limit, on the good events' topic.
		{"larger than the producer's batch limit", func(e *env) string { return e.topic("order") }, "", 2_000_000, "MESSAGE_TOO_LARGE"},
		// The relay refuses it: not a valid topic name.
		{"an invalid topic", func(e *env) string { return "bad topic!*" }, "", 100, "illegal character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			began := time.Now()
			good, poisonTopic := e.topic("order"), tt.topic(e)
			e.createTopic(good, nil)
			if tt.limit != "" {
				e.createTopic(poisonTopic, map[string]string{"max.message.bytes": tt.limit})
			}
			p := e.startRelay(exactlyOnce...)
			ctx := context.Background()
			var poisonID string
			for i := 0; i < 100; i++ {
				tx, err := e.conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
					SELECT 'order', 'key-' || (g % 10), 'Good', json_build_object('n', g)::jsonb
					FROM generate_series($1::int, $1::int + 9) g`, i*10); err != nil {
					t.Fatal(err)
				}
				if i == 50 {
					if err := tx.QueryRow(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload)
						VALUES ('order', 'poison', 'Poison', $1, json_build_object('pad', repeat('x', $2))::jsonb)
						RETURNING id::text`, poisonTopic, tt.size).Scan(&poisonID); err != nil {
						t.Fatal(err)
					}
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			e.waitConfirmed(time.Minute)
			ids := e.outboxIDs("event_type = 'Good'")
			counts := e.countCommitted(good, len(ids), time.Minute)
			// An aborted transaction leaves its records in the log, hidden.
			t.Logf("%d good events and a poison (%s): %s; %d records in the topic, committed or not; %s in all",
				len(ids), tt.name, counts.tally(ids), e.totalRecords(e.client(), good), time.Since(began).Round(time.Millisecond))
			requireEachOnce(t, good, counts, ids)
			if poisonTopic != good && tt.limit != "" {
				if n := len(e.countCommitted(poisonTopic, 0, 30*time.Second)); n != 0 {
					t.Errorf("%s holds %d committed records, want none: the poison was committed", poisonTopic, n)
				}
			}
			rows := e.failedList()
			if len(rows) != 1 || rows[0].EventID == nil || *rows[0].EventID != poisonID ||
				rows[0].Status != "FAILED" && rows[0].Status != "DEAD" || !strings.Contains(rows[0].LastError, tt.reason) {
				t.Fatalf("failed list shows %+v; want only the poison %s, FAILED or DEAD, for %q", rows, poisonID, tt.reason)
			}
			p.stop(30 * time.Second)
		})
	}
}
