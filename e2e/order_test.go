package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

// Per-key order across a parked event: while an event of a topic and key
// is parked, every later event of that key waits behind it in the status
// table (WAITING), other keys flow, and once the cause is gone the key's
// events arrive in commit order. Each test's topic has one partition, so
// that offsets show the order.

// The refused key's first event is this large, and the topic's
// max.message.bytes on a broker that enforces it (Apache Kafka) is below
// it until the cause is removed; every other event is small.
const (
	headPad        = 300_000
	refusedBytes   = 100_000
	restoredLimit  = "2000000"
	orderRetryBase = "200ms"
)

// orderedTopic creates topic with one partition; on a broker that enforces
// sizes its max.message.bytes refuses the refused key's first event.
func (e *env) orderedTopic(topic string) {
	e.t.Helper()
	var configs map[string]string
	if e.kfake == nil {
		configs = map[string]string{"max.message.bytes": strconv.Itoa(refusedBytes)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafkatest.CreateTopic(ctx, e.client(), topic, 1, configs); err != nil {
		e.t.Fatal(err)
	}
}

// refuseKey makes the broker refuse the key's large first event (on
// topic), a permanent refusal as a broker gives a record it will never
// take, until the returned function removes the cause; the key's small
// events are accepted, so nothing but the relay holds them back. On Apache
// Kafka the topic's max.message.bytes (orderedTopic) refuses it, and
// lifting raises the limit; kfake enforces no size, so a produce hook
// answers the partition with MESSAGE_TOO_LARGE when its batch holds a
// record of key larger than the limit.
func (e *env) refuseKey(topic, key string) (lift func()) {
	e.t.Helper()
	if e.kfake == nil {
		return func() { e.setMaxMessageBytes(topic, restoredLimit) }
	}
	var refusing atomic.Bool
	refusing.Store(true)
	e.kfake.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.kfake.KeepControl()
		if !refusing.Load() {
			return nil, nil, false
		}
		return refuseRecordsOf(req.(*kmsg.ProduceRequest), []byte(key))
	})
	return func() { refusing.Store(false) }
}

// refuseRecordsOf answers a produce request that carries a record of key
// (unique to the test; newer requests name topics by id only) larger than
// refusedBytes: that partition with MESSAGE_TOO_LARGE, the request's other
// partitions with a retriable error (the producer sends them again). A
// request without such a record is left to the broker.
func refuseRecordsOf(req *kmsg.ProduceRequest, key []byte) (kmsg.Response, error, bool) {
	hit := false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			hit = hit || batchHasKey(p.Records, key)
		}
	}
	if !hit {
		return nil, nil, false
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset = -1
			rp.ErrorCode = kerr.RequestTimedOut.Code
			if batchHasKey(p.Records, key) {
				rp.ErrorCode = kerr.MessageTooLarge.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil, true
}

// batchHasKey reports whether the record batches in b (uncompressed, as
// the relay produces them) hold a record whose key is key and whose value
// is larger than refusedBytes.
func batchHasKey(b, key []byte) bool {
	for len(b) >= 12 {
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(b); err != nil {
			return false
		}
		if recordsHaveKey(batch.Records, int(batch.NumRecords), key) {
			return true
		}
		b = b[min(len(b), 12+int(batch.Length)):]
	}
	return false
}

// recordsHaveKey reads n records from b, each a varint length and the
// record, for one of key larger than refusedBytes.
func recordsHaveKey(b []byte, n int, key []byte) bool {
	for range n {
		l, size := binary.Varint(b)
		if size <= 0 || int(l) < 0 || size+int(l) > len(b) {
			return false
		}
		var r kmsg.Record
		if err := r.ReadFrom(b[:size+int(l)]); err == nil && string(r.Key) == string(key) && len(r.Value) > refusedBytes {
			return true
		}
		b = b[size+int(l):]
	}
	return false
}

// setMaxMessageBytes sets topic's max.message.bytes.
func (e *env) setMaxMessageBytes(topic, limit string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resps, err := kadm.NewClient(e.client()).AlterTopicConfigs(ctx,
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &limit}}, topic)
	if err == nil {
		_, err = resps.On(topic, nil)
	}
	if err != nil {
		e.t.Fatalf("set %s's max.message.bytes to %s: %v", topic, limit, err)
	}
	// The broker applies the change a moment after the controller took
	// it: a relay woken at once (failed retry) that describes the topic
	// before then reads the old limit, and refuses the record again.
	e.waitFor(topic+"'s max.message.bytes described as "+limit, 30*time.Second, func() bool {
		rcs, err := kadm.NewClient(e.client()).DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return false
		}
		rc, err := rcs.On(topic, nil)
		if err != nil {
			return false
		}
		for _, c := range rc.Configs {
			if c.Key == "max.message.bytes" && c.Value != nil && *c.Value == limit {
				return true
			}
		}
		return false
	})
}

// orderRun is the events one order test commits on one topic: those of
// the refused key, numbered in commit order, and those of other keys.
type orderRun struct {
	e       *env
	cl      *kgo.Client // reads the topic's end offsets
	agg     string      // the aggregate type: the topic is e.topic(agg)
	topic   string
	key     string // the refused key
	keyN    int    // events of key committed so far (seq 0 … keyN-1)
	othersN int    // events of other keys committed so far
	// committed reads as a read_committed consumer (exactly-once
	// delivery), else every record.
	committed bool
}

// newOrderRun creates the run's one-partition topic; the refused key is
// unique to the test.
func (e *env) newOrderRun(agg string) *orderRun {
	e.t.Helper()
	o := &orderRun{e: e, cl: e.client(), agg: agg, topic: e.topic(agg), key: "refused-" + e.slot}
	e.orderedTopic(o.topic)
	return o
}

// commitKey commits the key's next event in a transaction of its own; the
// first is large.
func (o *orderRun) commitKey() {
	o.e.t.Helper()
	pad := 10
	if o.keyN == 0 {
		pad = headPad
	}
	mustExec(o.e.t, o.e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ($1, $2, 'Keyed', json_build_object('seq', $3::int, 'pad', repeat('x', $4::int))::jsonb)`, o.agg, o.key, o.keyN, pad)
	o.keyN++
}

// commitOther commits one event of another key (ten keys in turn) in a
// transaction of its own.
func (o *orderRun) commitOther() {
	o.e.t.Helper()
	insert(o.e.t, o.e.conn, o.agg, fmt.Sprintf("other-%d", o.othersN%10), "Other", fmt.Sprintf(`{"seq": %d}`, o.othersN))
	o.othersN++
}

// commitInterleaved commits the key's next events (keyed of them) among
// others of other keys, one event of the key after each tenth other.
func (o *orderRun) commitInterleaved(keyed, others int) {
	o.e.t.Helper()
	every := max(1, others/max(1, keyed))
	for i := range others {
		o.commitOther()
		if (i+1)%every == 0 && keyed > 0 {
			o.commitKey()
			keyed--
		}
	}
	for ; keyed > 0; keyed-- {
		o.commitKey()
	}
}

// split reads the topic's records and returns the key's sequence numbers
// in offset order, and the distinct other events seen.
func (o *orderRun) split() (keySeqs []int, others map[int]bool) {
	o.e.t.Helper()
	others = map[int]bool{}
	recs := o.records()
	slices.SortFunc(recs, func(a, b *kgo.Record) int { return int(a.Offset - b.Offset) })
	for _, r := range recs {
		var v struct{ Seq int }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			o.e.t.Fatalf("record at offset %d: %v", r.Offset, err)
		}
		if string(r.Key) == o.key {
			keySeqs = append(keySeqs, v.Seq)
		} else {
			others[v.Seq] = true
		}
	}
	return keySeqs, others
}

// records reads every record of the topic now, or with committed every
// committed one.
func (o *orderRun) records() []*kgo.Record {
	o.e.t.Helper()
	if o.committed {
		var recs []*kgo.Record
		if !o.e.readCommittedUntil(o.topic, 60*time.Second, func() bool { return true }, func(r *kgo.Record) { recs = append(recs, r) }) {
			o.e.t.Fatalf("read %s as a read_committed consumer: not up to its last stable offset within 60s", o.topic)
		}
		return recs
	}
	if n := sum(o.e.endOffsets(o.cl, o.topic)); n > 0 {
		return o.e.readN(o.topic, int(n), 60*time.Second)
	}
	return nil
}

// waitRecords waits until the topic holds at least the events of other
// keys committed so far and keyed events of the key, reading the records
// again only when the topic grew.
func (o *orderRun) waitRecords(what string, keyed int, timeout time.Duration) (keySeqs []int, others map[int]bool) {
	o.e.t.Helper()
	seen := int64(-1)
	o.e.waitFor(what, timeout, func() bool {
		n := sum(o.e.endOffsets(o.cl, o.topic))
		if n == seen || n < int64(o.othersN+keyed) {
			return false
		}
		seen = n
		keySeqs, others = o.split()
		return len(others) >= o.othersN && len(keySeqs) >= keyed
	})
	return keySeqs, others
}

// waitOthersWhileRefused waits until every other event committed so far
// arrived, and requires that no event of the refused key did.
func (o *orderRun) waitOthersWhileRefused() {
	o.e.t.Helper()
	keySeqs, _ := o.waitRecords(fmt.Sprintf("the %d events of other keys arrive", o.othersN), 0, 60*time.Second)
	if len(keySeqs) > 0 {
		o.e.t.Fatalf("events %v of the refused key arrived while its first event was parked: later events overtook it", keySeqs)
	}
}

// keyStates counts the status table's rows of the key by state.
func (o *orderRun) keyStates() map[string]int {
	o.e.t.Helper()
	rows, err := o.e.conn.Query(context.Background(),
		"SELECT status, count(*) FROM outbox_delivery WHERE topic = $1 AND record_key = $2 GROUP BY status", o.topic, []byte(o.key))
	if err != nil {
		o.e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			o.e.t.Fatal(err)
		}
		out[state] = n
	}
	if err := rows.Err(); err != nil {
		o.e.t.Fatal(err)
	}
	return out
}

// waitHeld waits until the key's rows are one head in state head and every
// later event of the key WAITING.
func (o *orderRun) waitHeld(head string) {
	o.e.t.Helper()
	o.e.waitFor(fmt.Sprintf("one %s row and %d WAITING rows for the refused key", head, o.keyN-1), 60*time.Second, func() bool {
		states := o.keyStates()
		return len(states) == 2 && states[head] == 1 && states["WAITING"] == o.keyN-1
	})
}

// waitHeadParked waits until the key's first event is parked (FAILED or
// DEAD). The later events are committed after: a record of the key read in
// the instant between the broker's refusal and the relay hearing of it may
// overtake the refused one (DESIGN.md's gaps; the relay counts it in
// cdc_relay_order_violations_total, which checkOrderMetrics requires 0).
func (o *orderRun) waitHeadParked() {
	o.e.t.Helper()
	o.e.waitFor("the key's first event parked", 60*time.Second, func() bool {
		states := o.keyStates()
		return states["FAILED"]+states["DEAD"] == 1
	})
}

// headID is the status table's id of the key's first event.
func (o *orderRun) headID() int64 {
	o.e.t.Helper()
	var id int64
	if err := o.e.conn.QueryRow(context.Background(),
		"SELECT min(id) FROM outbox_delivery WHERE topic = $1 AND record_key = $2", o.topic, []byte(o.key)).Scan(&id); err != nil {
		o.e.t.Fatal(err)
	}
	return id
}

// waitInOrder waits until the key's events want arrived, then requires
// each once, in commit order (ascending offsets), and every other event.
func (o *orderRun) waitInOrder(want []int) {
	o.e.t.Helper()
	keySeqs, others := o.waitRecords(fmt.Sprintf("%d events of the key arrive", len(want)), len(want), 90*time.Second)
	if !slices.Equal(keySeqs, want) {
		o.e.t.Fatalf("the key's events arrived as %v (offset order), want %v: each once, in commit order", keySeqs, want)
	}
	if len(others) != o.othersN {
		o.e.t.Fatalf("%d distinct events of other keys, want %d", len(others), o.othersN)
	}
}

// seqs is 0 … n-1 without the numbers in skip.
func seqs(n int, skip ...int) []int {
	var out []int
	for i := range n {
		if !slices.Contains(skip, i) {
			out = append(out, i)
		}
	}
	return out
}

// orderListRow is what the order tests read of `cdc-relay failed list
// --json`.
type orderListRow struct {
	ID       int64           `json:"id"`
	Status   string          `json:"status"`
	Key      *string         `json:"key"`
	WaitsFor json.RawMessage `json:"waits_for"`
}

// waitsFor reads a waits_for field: an id, as a number or a string, or a
// list of them.
func (r orderListRow) waitsFor() []int64 {
	var list []json.RawMessage
	if err := json.Unmarshal(r.WaitsFor, &list); err != nil {
		list = []json.RawMessage{r.WaitsFor}
	}
	var ids []int64
	for _, raw := range list {
		if id, err := strconv.ParseInt(strings.Trim(string(raw), `"`), 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// checkListWaits requires `failed list --json` to show every WAITING row of
// the key waiting for the key's first event.
func (o *orderRun) checkListWaits() {
	o.e.t.Helper()
	out, err := exec.Command(relayBin, "failed", "list", "--json", "--limit", "0", "--postgres-url", o.e.url).Output()
	if err != nil {
		o.e.t.Fatalf("failed list: %v\n%s", err, out)
	}
	var rows []orderListRow
	if err := json.Unmarshal(out, &rows); err != nil {
		o.e.t.Fatalf("failed list --json: %v\n%s", err, out)
	}
	head, waiting := o.headID(), 0
	for _, r := range rows {
		if r.Key == nil || *r.Key != o.key || r.Status != "WAITING" {
			continue
		}
		waiting++
		if !slices.Contains(r.waitsFor(), head) {
			o.e.t.Errorf("failed list: WAITING event %d has waits_for %s, want the key's first event %d", r.ID, r.WaitsFor, head)
		}
	}
	if waiting != o.keyN-1 {
		o.e.t.Errorf("failed list shows %d WAITING events of the key, want %d\n%s", waiting, o.keyN-1, out)
	}
}

// topicLag is one entry of /status's topics.
type topicLag struct {
	Topic             string          `json:"topic"`
	Failed            int64           `json:"failed"`
	Dead              int64           `json:"dead"`
	Waiting           int64           `json:"waiting"`
	Paused            json.RawMessage `json:"paused"`
	OldestHeldSeconds float64         `json:"oldest_held_seconds"`
}

// topicStatus reads /status's entry for topic, and whether there is one.
func (p *relayProc) topicStatus(topic string) (topicLag, bool) {
	p.t.Helper()
	code, body := p.call("GET", "/status", "")
	var st struct {
		Topics []topicLag `json:"topics"`
	}
	if code != 200 {
		p.t.Fatalf("GET /status: %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		p.t.Fatalf("GET /status: %v\n%s", err, body)
	}
	for _, tl := range st.Topics {
		if tl.Topic == topic {
			return tl, true
		}
	}
	return topicLag{}, false
}

// waitTopicHeld waits until /status (which reads the database every few
// seconds) counts failed and waiting events on the run's topic, held for
// a while.
func (o *orderRun) waitTopicHeld(p *relayProc, failed, waiting int64) {
	o.e.t.Helper()
	o.e.waitFor(fmt.Sprintf("/status counts %d failed and %d waiting on %s", failed, waiting, o.topic), 30*time.Second, func() bool {
		tl, ok := p.topicStatus(o.topic)
		return ok && tl.Failed == failed && tl.Waiting == waiting && tl.OldestHeldSeconds > 0
	})
}

// checkOrderMetrics requires the relay's counters of events the stream
// held behind a key (by reason) to be held, and of records acked while an
// earlier event of their key was parked to be 0.
func checkOrderMetrics(p *relayProc, held map[string]float64) {
	p.t.Helper()
	_, families := p.scrape()
	for reason, want := range held {
		if got := value(families, "cdc_relay_events_held_total", "reason", reason); got != want {
			p.t.Errorf("cdc_relay_events_held_total{reason=%q} is %v, want %v", reason, got, want)
		}
	}
	if got := value(families, "cdc_relay_order_violations_total"); got != 0 {
		p.t.Errorf("cdc_relay_order_violations_total is %v, want 0 (-1: not served)", got)
	}
}

// orderRelayArgs are the order tests' run flags: the poller tries soon.
func orderRelayArgs(extra ...string) []string {
	return append([]string{"--retry-base", orderRetryBase, "--retry-max", "1s", "--max-attempts", "1000"}, extra...)
}

// refusedAndBlocked commits the key's first event, ten later ones and a
// hundred of other keys, interleaved, while the broker refuses the key, and
// requires the key held: the others arrive, none of the key's does, and the
// status table has the head FAILED and the ten WAITING.
func (o *orderRun) refusedAndBlocked() {
	o.e.t.Helper()
	o.commitKey()
	o.waitHeadParked()
	o.commitInterleaved(10, 100)
	o.waitOthersWhileRefused()
	o.waitHeld("FAILED")
}

// heldAfterTakeover, once a relay streams again after the one that held
// the key died, commits two more events of the key and one of another:
// the other arrives, the two wait behind the head with the ten. Then it
// lifts the refusal and requires all thirteen in commit order.
func (o *orderRun) heldAfterTakeover(lift func()) {
	o.e.t.Helper()
	o.commitKey()
	o.commitKey()
	o.commitOther()
	o.waitOthersWhileRefused()
	o.waitHeld("FAILED")
	lift()
	o.waitInOrder(seqs(13))
}

// TestOrderHeldBehindARefusedRecord: the broker refuses the first event of
// a key for a while; the key's ten later events wait behind it in the
// status table, 100 events of other keys flow meanwhile, `failed list`,
// /status and the metrics say what waits (and no record overtook), and
// once the cause is gone the key's events arrive once each, in commit
// order. The same through a SIGKILL of the
// relay while the key is held, and through a standby's takeover (events of
// the key committed after the restart wait too), and in exactly-once
// delivery, read by a read_committed consumer.
func TestOrderHeldBehindARefusedRecord(t *testing.T) {
	parallel(t)
	t.Run("refused then accepted", func(t *testing.T) {
		e := newEnv(t)
		o := e.newOrderRun("order")
		lift := e.refuseKey(o.topic, o.key)
		p := e.startRelay(orderRelayArgs()...)
		o.refusedAndBlocked()
		o.checkListWaits()
		o.waitTopicHeld(p, 1, 10)
		lift()
		o.waitInOrder(seqs(11))
		e.waitFor("every row of the key DELIVERED", 30*time.Second, func() bool { return o.keyStates()["DELIVERED"] == 11 })
		checkOrderMetrics(p, map[string]float64{"waiting": 10})
		p.stop(30 * time.Second)
	})
	t.Run("exactly-once", func(t *testing.T) {
		e := newEnv(t)
		o := e.newOrderRun("order")
		o.committed = true
		lift := e.refuseKey(o.topic, o.key)
		p := e.startRelay(orderRelayArgs(exactlyOnce...)...)
		o.refusedAndBlocked()
		lift()
		o.waitInOrder(seqs(11))
		p.stop(30 * time.Second)
	})
	t.Run("through a SIGKILL", func(t *testing.T) {
		e := newEnv(t)
		o := e.newOrderRun("order")
		lift := e.refuseKey(o.topic, o.key)
		p := e.startRelay(orderRelayArgs()...)
		o.refusedAndBlocked()
		p.Kill()
		p = e.startRelay(orderRelayArgs()...)
		o.heldAfterTakeover(lift)
		p.stop(30 * time.Second)
	})
	t.Run("through a standby takeover", func(t *testing.T) {
		e := newEnv(t)
		o := e.newOrderRun("order")
		lift := e.refuseKey(o.topic, o.key)
		leader := e.startRelay(orderRelayArgs()...)
		standby := e.spawnRelay(orderRelayArgs()...)
		e.waitFor("the second relay stands by", 30*time.Second, func() bool { return strings.Contains(standby.Log(), "standing by") })
		o.refusedAndBlocked()
		leader.Kill()
		e.waitFor("the standby streams", 60*time.Second, func() bool { return strings.Contains(standby.Log(), "replication started") })
		o.heldAfterTakeover(lift)
		standby.stop(30 * time.Second)
	})
}

// failedCmd runs `cdc-relay failed sub args…` on the test's database and
// requires exit status 0.
func (e *env) failedCmd(sub string, args ...string) string {
	e.t.Helper()
	out, err := exec.Command(relayBin, append([]string{"failed", sub, "--postgres-url", e.url}, args...)...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("failed %s %s: %v\n%s", sub, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestOrderDeadHead: the key's first event is refused at its only attempt
// (DEAD) and its ten later events wait behind it. `failed skip` gives up on
// the head: the ten arrive in order, and a later event of the key after
// them; the head never does, though the cause is gone. `failed purge` of
// the head releases the ten in order. `failed retry` of the head, after
// the cause is gone, delivers it first, then the ten.
func TestOrderDeadHead(t *testing.T) {
	parallel(t)
	deadHead := func(t *testing.T) (*env, *orderRun, func(), *relayProc) {
		e := newEnv(t)
		o := e.newOrderRun("order")
		lift := e.refuseKey(o.topic, o.key)
		p := e.startRelay("--retry-base", orderRetryBase, "--max-attempts", "1")
		o.commitKey()
		o.waitHeadParked()
		o.commitInterleaved(10, 100)
		o.waitOthersWhileRefused()
		o.waitHeld("DEAD")
		return e, o, lift, p
	}
	t.Run("skip", func(t *testing.T) {
		e, o, lift, p := deadHead(t)
		head := o.headID()
		lift() // first: on kfake the refusal is of every record of the key
		e.failedCmd("skip", strconv.FormatInt(head, 10))
		o.waitInOrder(seqs(11, 0))
		o.commitKey()
		o.waitInOrder(seqs(12, 0))
		var state string
		var skipped bool
		if err := e.conn.QueryRow(context.Background(), "SELECT status, skipped_at IS NOT NULL FROM outbox_delivery WHERE id = $1", head).Scan(&state, &skipped); err != nil {
			t.Fatal(err)
		}
		if state != "DEAD" || !skipped {
			t.Fatalf("the skipped head is %s (skipped %v), want DEAD and skipped", state, skipped)
		}
		p.stop(30 * time.Second)
	})
	t.Run("purge", func(t *testing.T) {
		e, o, lift, p := deadHead(t)
		lift()
		e.failedCmd("purge", strconv.FormatInt(o.headID(), 10))
		o.waitInOrder(seqs(11, 0))
		p.stop(30 * time.Second)
	})
	t.Run("retry", func(t *testing.T) {
		e, o, lift, p := deadHead(t)
		lift()
		e.failedCmd("retry", strconv.FormatInt(o.headID(), 10))
		o.waitInOrder(seqs(11))
		e.waitFor("every row of the key DELIVERED", 30*time.Second, func() bool { return o.keyStates()["DELIVERED"] == 11 })
		p.stop(30 * time.Second)
	})
}
