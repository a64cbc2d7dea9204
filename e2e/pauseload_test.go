package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPausedTopicCatchesUpUnderLoad: an application writes about 400
// events a second over two topics whose keys are shared, one event per
// transaction, for six seconds; topic a is paused from the command line
// after the first 1.5 s and resumed 2 s later, while the load goes on.
// Once the load stops, every event of both topics arrives once, each
// key's in commit order, and nothing is left held: the status table has
// no FAILED, WAITING or PAUSED row, and no order was broken.
func TestPausedTopicCatchesUpUnderLoad(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	a, b := e.topic("a"), e.topic("b")
	e.createTopic1(a)
	e.createTopic1(b)
	p := e.startRelay(orderRelayArgs()...)

	conn, err := pgx.Connect(context.Background(), e.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	const (
		keys  = 20
		every = 5 * time.Millisecond // two events: one per topic
		load  = 6 * time.Second
	)
	var written atomic.Int64
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		end := time.Now().Add(load)
		for i := 0; time.Now().Before(end); i++ {
			<-tick.C
			for _, agg := range []string{"a", "b"} {
				if _, err := conn.Exec(context.Background(),
					"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ($1, $2, 'Loaded', $3)",
					agg, fmt.Sprintf("k%d", i%keys), fmt.Sprintf(`{"seq": %d}`, i)); err != nil {
					done <- err
					return
				}
			}
			written.Store(int64(i + 1))
		}
		done <- nil
	}()
	time.Sleep(1500 * time.Millisecond) // the load runs before the pause
	e.pauseCmd("pause", a)
	e.waitFor("/status lists "+a+" as paused", 10*time.Second, func() bool { return p.pausedOnStatus(a) })
	paused := written.Load()
	e.waitFor("events of "+a+" held while it is paused", 10*time.Second, func() bool { return e.statusCount("PAUSED") > 0 })
	time.Sleep(2 * time.Second) // the pause lasts while the load runs
	e.pauseCmd("resume", a)
	resumed := written.Load()
	if err := <-done; err != nil {
		t.Fatalf("the load: %v", err)
	}
	n := int(written.Load())
	stopped := time.Now()
	t.Logf("%d events per topic: %s paused after %d, resumed after %d", n, a, paused, resumed)

	e.readN(b, n, 60*time.Second)
	e.readN(a, n, 60*time.Second)
	e.waitFor("no event held", 60*time.Second, func() bool {
		return e.statusCount("FAILED")+e.statusCount("WAITING")+e.statusCount("PAUSED") == 0
	})
	t.Logf("caught up %s after the load stopped; %d events went through the status table", time.Since(stopped).Round(time.Millisecond), e.statusCount(""))
	checkPerKeyOrder(t, a, e.readAll(a), n)
	checkPerKeyOrder(t, b, e.readAll(b), n)
	checkOrderMetrics(p, nil)
	p.stop(30 * time.Second)
}

// TestHotKeyReturnsToTheStream: one key gets an event every 3 ms, one
// per transaction, and its topic is paused for a second. Once resumed,
// while the load goes on, the key returns to the stream: nothing is held
// any more and no new event goes through the status table, however fast
// its events arrive (its new events wait in memory while the poller
// delivers its held ones, rather than being parked behind them). When the
// load stops, every event arrives once, in commit order.
func TestHotKeyReturnsToTheStream(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	a := e.topic("a")
	e.createTopic1(a)
	p := e.startRelay(orderRelayArgs()...)
	conn, err := pgx.Connect(context.Background(), e.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	const (
		every = 3 * time.Millisecond
		load  = 8 * time.Second
	)
	var written atomic.Int64
	var running atomic.Bool
	running.Store(true)
	done := make(chan error, 1)
	go func() {
		defer running.Store(false)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i, end := 0, time.Now().Add(load); time.Now().Before(end); i++ {
			<-tick.C
			if _, err := conn.Exec(context.Background(),
				"INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('a', 'hot', 'Loaded', $1)", fmt.Sprintf(`{"seq": %d}`, i)); err != nil {
				done <- err
				return
			}
			written.Store(int64(i + 1))
		}
		done <- nil
	}()
	e.waitFor("the load's first events", 10*time.Second, func() bool { return written.Load() > 100 })
	e.pauseCmd("pause", a)
	e.waitFor("events of "+a+" held while it is paused", 10*time.Second, func() bool { return e.statusCount("PAUSED") > 50 })
	e.pauseCmd("resume", a)
	// Nothing held for 300 ms on end: a batch of parks still being
	// stored is not counted yet.
	var clearSince time.Time
	e.waitFor("nothing held for 300 ms while the load still runs", load, func() bool {
		if e.statusCount("FAILED")+e.statusCount("WAITING")+e.statusCount("PAUSED") > 0 {
			clearSince = time.Time{}
		} else if clearSince.IsZero() {
			clearSince = time.Now()
		}
		return !clearSince.IsZero() && time.Since(clearSince) >= 300*time.Millisecond || !running.Load()
	})
	if !running.Load() {
		t.Fatalf("the hot key was still held when the load stopped: %d WAITING, %d PAUSED; its new events kept being parked behind its held ones",
			e.statusCount("WAITING"), e.statusCount("PAUSED"))
	}
	parkedThen, writtenThen := e.statusCount(""), written.Load()
	if err := <-done; err != nil {
		t.Fatalf("the load: %v", err)
	}
	n := int(written.Load())
	if parked := e.statusCount(""); parked != parkedThen {
		t.Errorf("%d events went through the status table after the key returned to the stream (%d of %d events written then); want none", parked-parkedThen, writtenThen, n)
	}
	t.Logf("%d events; %d through the status table, none after event %d", n, parkedThen, writtenThen)
	e.readN(a, n, 60*time.Second)
	checkPerKeyOrder(t, a, e.readAll(a), n)
	checkOrderMetrics(p, nil)
	p.stop(30 * time.Second)
}
