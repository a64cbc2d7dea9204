package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readCommitted reads topic from the start as a read_committed consumer
// until its last stable offsets, found first by waiting until the relay
// has nothing open: it reads every record committed so far.
func (e *env) readCommitted(topic string, timeout time.Duration) []*kgo.Record {
	e.t.Helper()
	ends := e.endOffsets(e.client(), topic)
	cl := e.committedFromStart(topic)
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

// TestExactlyOnceSurvivesKillAndStop: in exactly-once delivery, a read_committed
// consumer sees every event once, in commit order per key, across a
// SIGKILL and a clean stop; the slot never passes the checkpoint row.
func TestExactlyOnceSurvivesKillAndStop(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	eo := []string{"--delivery", "exactly-once", "--checkpoint-topic", e.prefix + ".checkpoints"}
	relay := e.startRelay(eo...)
	topic := e.topic("order")
	w := e.startWriter(0)
	cl := e.client()
	killedAt := e.killMidStream(relay, cl, topic)
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

// TestMigrateCreatesTheCheckpointTopic: migrate --kafka-brokers creates
// no checkpoint topic for at-least-once delivery (the default), and with
// --delivery exactly-once creates it, compacted, and finds it the second
// time.
func TestMigrateCreatesTheCheckpointTopic(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	topic := e.prefix + ".checkpoints"
	args := []string{"migrate", "--postgres-url", e.url, "--slot", e.slot, "--kafka-brokers", strings.Join(e.brokers, ","), "--checkpoint-topic", topic}
	out, err := exec.Command(relayBin, args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no checkpoint topic created") {
		t.Fatalf("migrate at-least-once: %v\n%s\nwant it to say no checkpoint topic was created", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(e.client())
	if all, err := adm.ListTopics(ctx); err != nil || all.Has(topic) {
		t.Fatalf("after migrate at-least-once: topic %q exists %v (err %v), want none", topic, all.Has(topic), err)
	}
	args = append(args, "--delivery", "exactly-once")
	for _, want := range []string{"created checkpoint topic", "exists and is compacted"} {
		out, err := exec.Command(relayBin, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("migrate: %v\n%s\nwant %q", err, out, want)
		}
	}
	described, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := described.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	policy := ""
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.Value != nil {
			policy = *c.Value
		}
	}
	if policy != "compact" {
		t.Fatalf("cleanup.policy=%q, want compact", policy)
	}
}
