package e2e

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestEventStoreProgressAfterSIGKILL: the event store's progress table
// never says more than Kafka holds, and never goes back. A relay writing
// outbox_topic_progress while the application appends is killed with
// SIGKILL: every event routed to a topic up to the last_position its row
// says at that moment is already in the topic. A new relay takes over
// while the application goes on; each row's last_position never
// decreased, at any reading, and the team's lag query reads 0 within
// seconds of the application stopping, with every event in its topics.
func TestEventStoreProgressAfterSIGKILL(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	path, wallet, payment := e.eventStoreConfig("progress: {table: outbox_topic_progress, publisher: KafkaPublisher}")
	e.createTopic1(wallet)
	e.createTopic1(payment)
	e.migrateConfig(path)
	p := e.startRelayArgs(relayBin, e.configArgs(path)...)
	app := e.appendEvents()
	stopWatch := e.watchProgressNeverBack(wallet, payment)
	e.waitFor("the application appended, and the relay wrote both topics' progress", 30*time.Second, func() bool {
		return app.appended.Load() >= 600 && e.progressPosition(wallet) > 0 && e.progressPosition(payment) > 0
	})
	p.Kill()
	said := map[string]int64{wallet: e.progressPosition(wallet), payment: e.progressPosition(payment)}
	before := e.routedCopies(wallet, payment, 0, 0)
	for _, topic := range []string{wallet, payment} {
		var ids []string
		for _, id := range before[topic] {
			if n, _ := strconv.ParseInt(id, 10, 64); n <= said[topic] {
				ids = append(ids, id)
			}
		}
		e.readIDs(topic, ids, 30*time.Second)
		t.Logf("%s: at the kill, last_position %d, and its %d events up to it in Kafka", topic, said[topic], len(ids))
	}

	p = e.startRelayArgs(relayBin, e.configArgs(path)...)
	at := app.appended.Load()
	e.waitFor("the application appended after the restart", 30*time.Second, func() bool { return app.appended.Load() >= at+600 })
	if err := app.stop(); err != nil {
		t.Fatal(err)
	}
	e.waitTeamLagZero()
	want := e.routedCopies(wallet, payment, 0, int(app.appended.Load()))
	for _, topic := range []string{wallet, payment} {
		e.readIDs(topic, want[topic], 60*time.Second)
	}
	stopWatch()
	p.stop(30 * time.Second)
}

// watchProgressNeverBack reads the relay's last_position of each topic
// every 20 ms, on a connection of its own, until the returned stop is
// called, which fails the test if one reading was before an earlier one.
func (e *env) watchProgressNeverBack(topics ...string) (stop func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		back []string
		n    int
	)
	wg.Go(func() {
		last := map[string]int64{}
		for ctx.Err() == nil {
			for _, topic := range topics {
				var pos int64
				err := conn.QueryRow(ctx, "SELECT coalesce(max(last_position), 0) FROM outbox_topic_progress WHERE topic = $1 AND publisher = 'KafkaPublisher'", topic).Scan(&pos)
				if err != nil {
					continue // cancelled as the test ends
				}
				if pos < last[topic] {
					back = append(back, topic+": "+strconv.FormatInt(last[topic], 10)+" then "+strconv.FormatInt(pos, 10))
				}
				last[topic] = max(last[topic], pos)
			}
			n++
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
		_ = conn.Close(context.Background())
		if len(back) > 0 {
			e.t.Errorf("a last_position went back, in %d of %d readings: %v", len(back), n, back)
		}
		e.t.Logf("last_position read %d times, never back", n)
	}
}
