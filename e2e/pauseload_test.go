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
