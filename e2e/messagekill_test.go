package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Messages through a SIGKILL of the relay: none of a committed
// transaction is lost, and a message sent again keeps its id, the WAL
// position, so that consumers deduplicate it.

// messageWriter emits transactions of 10 messages with cdc_relay.emit
// (keys key-0 … key-9, a sequence per key, no id: each message's id is
// its WAL position) from one connection until stopped.
type messageWriter struct {
	t       *testing.T
	done    chan struct{}
	result  chan messageWrites
	written atomic.Int64
}

// messageWrites is what a messageWriter committed: the count per key and
// every message's id.
type messageWrites struct {
	perKey map[string]int
	ids    []string
}

// startMessageWriter starts a messageWriter emitting to topic.
func (e *env) startMessageWriter(topic string) *messageWriter {
	w := &messageWriter{t: e.t, done: make(chan struct{}), result: make(chan messageWrites, 1)}
	conn := mustConnect(e.t, e.url)
	go func() {
		defer conn.Close(context.Background())
		out := messageWrites{perKey: map[string]int{}}
		defer func() { w.result <- out }()
		for {
			select {
			case <-w.done:
				return
			default:
			}
			ids, err := emitTen(conn, topic, out.perKey)
			if err != nil {
				e.t.Error(err)
				return
			}
			out.ids = append(out.ids, ids...)
			for j := range 10 {
				out.perKey[fmt.Sprintf("key-%d", j)]++
			}
			w.written.Add(10)
		}
	}()
	return w
}

// emitTen commits one transaction of ten messages to topic, the next of
// each key's sequence in perKey, and returns their ids.
func emitTen(conn *pgx.Conn, topic string, perKey map[string]int) ([]string, error) {
	keys, seqs := make([]string, 10), make([]int32, 10)
	for j := range 10 {
		keys[j] = fmt.Sprintf("key-%d", j)
		seqs[j] = int32(perKey[keys[j]])
	}
	var ids []string
	err := pgx.BeginFunc(context.Background(), conn, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(),
			"SELECT cdc_relay.emit($1, k, jsonb_build_object('key', k, 'seq', s))::text FROM unnest($2::text[], $3::int[]) u(k, s)",
			topic, keys, seqs)
		if err != nil {
			return err
		}
		lsns, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, s := range lsns {
			lsn, err := pglogrepl.ParseLSN(s)
			if err != nil {
				return err
			}
			ids = append(ids, lsn.String())
		}
		return nil
	})
	return ids, err
}

// count is how many messages the writer has committed.
func (w *messageWriter) count() int { return int(w.written.Load()) }

// waitWritten waits until the writer has committed n messages.
func (w *messageWriter) waitWritten(n int) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for w.count() < n {
		if time.Now().After(deadline) {
			w.t.Fatalf("the writer committed %d of %d messages within 60s", w.count(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop stops the writer and returns what it committed.
func (w *messageWriter) stop() messageWrites {
	close(w.done)
	return <-w.result
}

// requireEveryID requires every id of want among recs' id headers, and no
// other id: a message sent again carries the id it had.
func requireEveryID(t *testing.T, recs []*kgo.Record, want []string) {
	t.Helper()
	wanted := map[string]bool{}
	for _, id := range want {
		wanted[id] = true
	}
	got := map[string]bool{}
	for _, r := range recs {
		id := header(r, "id")
		if !wanted[id] {
			t.Fatalf("a record with id %q, which no committed message had (key %s, value %s)", id, r.Key, r.Value)
		}
		got[id] = true
	}
	if len(got) != len(wanted) {
		t.Fatalf("%d of the %d committed messages arrived", len(got), len(wanted))
	}
}

// TestMessagesSurviveKill9: a writer emits messages continuously; the
// relay is killed with SIGKILL mid-stream, with the checkpoint row ahead
// of the slot throughout, and started again after 1,000 more: every
// committed message arrives (at least once), each key's in commit order
// but for redelivered runs, every copy with the id the message had.
func TestMessagesSurviveKill9(t *testing.T) {
	parallel(t)
	e := newMessageEnv(t)
	relay := e.startRelay(messageArgs...)
	topic := e.prefix + ".msg"
	w := e.startMessageWriter(topic)
	killedAt := e.killMidStream(relay, e.client(), topic)
	w.waitWritten(w.count() + 1000) // more while the relay is down
	writes := w.stop()
	relay = e.startRelay(messageArgs...)
	e.waitConfirmed(60 * time.Second)
	recs := e.readAll(topic)
	dups := checkAtLeastOnce(t, recs, writes.perKey)
	requireEveryID(t, recs, writes.ids)
	t.Logf("killed after %d of %d messages; %d redelivered after the restart", killedAt, len(writes.ids), dups)
	relay.stop(30 * time.Second)
}

// TestMessagesExactlyOnce: in exactly-once delivery, a read_committed
// consumer sees every committed message once, across a SIGKILL of the
// relay mid-stream and a restart.
func TestMessagesExactlyOnce(t *testing.T) {
	parallel(t)
	e := newMessageEnv(t)
	eo := append([]string{"--delivery", "exactly-once", "--checkpoint-topic", e.prefix + ".checkpoints"}, messageArgs...)
	relay := e.startRelay(eo...)
	topic := e.prefix + ".msg"
	w := e.startMessageWriter(topic)
	killedAt := e.killMidStream(relay, e.client(), topic)
	relay = e.startRelay(eo...)
	w.waitWritten(w.count() + 1000)
	writes := w.stop()
	e.waitConfirmed(60 * time.Second)
	counts := e.countCommitted(topic, len(writes.ids), 60*time.Second)
	t.Logf("killed with %d records in the topic (committed or not); %d messages: %s", killedAt, len(writes.ids), counts.tally(writes.ids))
	requireEachOnce(t, topic, counts, writes.ids)
	relay.stop(30 * time.Second)
}
