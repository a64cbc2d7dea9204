package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readCommitted reads topic from the start as a read_committed consumer
// until its last stable offsets, found first by waiting until the relay
// has nothing open: it reads every record committed so far.
func (e *env) readCommitted(topic string, timeout time.Duration) []*kgo.Record {
	e.t.Helper()
	ends := e.endOffsets(e.client(), topic)
	opts := []kgo.Opt{kgo.SeedBrokers(e.brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.FetchMaxWait(200 * time.Millisecond)}
	cl, err := kgo.NewClient(append(opts, e.kafkaOpts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	left := map[int32]int64{}
	for p, o := range ends {
		if o > 0 {
			left[p] = o - 1
		}
	}
	var recs []*kgo.Record
	for len(left) > 0 {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			e.t.Fatalf("read %s committed: %d partitions not read to their end within %s", topic, len(left), timeout)
		}
		f.EachError(func(t string, p int32, err error) {
			if !kerr.IsRetriable(err) {
				e.t.Fatalf("fetch %s[%d]: %v", t, p, err)
			}
		})
		f.EachRecord(func(r *kgo.Record) {
			if last, ok := left[r.Partition]; ok && r.Offset >= last {
				delete(left, r.Partition)
			}
			if !r.Attrs.IsControl() {
				recs = append(recs, r)
			}
		})
	}
	return recs
}

// TestExactlyOnceThroughKill: in exactly-once delivery, a read_committed
// consumer sees every event once, in commit order per key, across a
// SIGKILL and a clean stop; the slot never passes the checkpoint row.
func TestExactlyOnceThroughKill(t *testing.T) {
	e := newEnv(t)
	eo := []string{"--delivery", "exactly-once", "--checkpoint-topic", e.prefix + ".checkpoints"}
	relay := e.startRelay(eo...)
	topic := e.topic("order")
	w := e.startWriter(0)
	cl := e.client()
	start := e.lsn(slotLSN)
	e.waitFor("some events arrive and are confirmed", 30*time.Second, func() bool {
		e.checkWriteAhead()
		return e.totalRecords(cl, topic) >= 2000 && e.lsn(slotLSN) > start
	})
	relay.Kill()
	e.checkWriteAhead()
	killedAt := e.totalRecords(cl, topic)
	relay = e.startRelay(eo...)
	w.waitWritten(w.count() + 2000)
	relay.stop(30 * time.Second)
	relay = e.startRelay(eo...)
	w.waitWritten(w.count() + 1000)
	perKey := w.stop()
	end := e.lsn(insertLSN)
	e.waitFor("the slot confirms past the last commit", 60*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	checkExactlyOnce(t, e.readCommitted(topic, 60*time.Second), w.count(), perKey)
	t.Logf("killed with %d records in the topic (committed or not); %d events in all, each seen once", killedAt, w.count())
	relay.stop(30 * time.Second)
}
