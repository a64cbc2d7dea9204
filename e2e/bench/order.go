package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cdc-relay/cdc-relay/internal/relayproc"
)

// order measures ordered parking (`--ordering key`, the default): (a) the
// drain's batched backlog with `--ordering key` and with `--ordering none`,
// nothing parked, side by side; (b) the same backlog with 1% of the keys
// refused by the broker: the stream's rate while their events are held
// behind each key's refused first event, then, with the refusal lifted
// and the heads retried (`failed retry --all`), the poller releasing the
// held events in order.
func (b *bench) order(ctx context.Context, out io.Writer) error {
	fmt.Fprintf(out, "### Ordered parking: %d rows, %d per transaction, %d keys (median of %d rounds)\n\n", b.c.rows, b.c.perTx, b.c.keys, b.c.rounds)
	if b.knowsOrdering() {
		if err := b.orderCost(ctx, out); err != nil {
			return err
		}
	} else {
		logf("order: this relay has no --ordering flag; the key/none comparison is skipped")
		fmt.Fprintf(out, "The key/none comparison is skipped: this relay has no `--ordering` flag.\n\n")
	}
	return b.orderBlocked(ctx, out)
}

// knowsOrdering reports whether the relay under test has `run --ordering`.
func (b *bench) knowsOrdering() bool {
	help, _ := exec.Command(b.relayBin, "run", "--help").CombinedOutput()
	return strings.Contains(string(help), "--ordering")
}

// orderCost drains the backlog with each ordering, alternating which goes
// first, and prints the rate and CPU per event of each and the difference.
func (b *bench) orderCost(ctx context.Context, out io.Writer) error {
	modes := []string{"key", "none"}
	res := map[string][]drainResult{}
	for round := range b.c.rounds {
		if err := b.fillOrderBacklog(ctx, "bench_order_key", "bench_order_none"); err != nil {
			return err
		}
		for i := range modes {
			mode := modes[(i+round)%2]
			r, err := b.drainOnce(ctx, "bench_order_"+mode, nil, "--ordering", mode)
			b.dropSlot(ctx, "bench_order_"+mode)
			if err != nil {
				return err
			}
			logf("round %d: --ordering %s %s (%.0f/s, %.2f µs CPU/event)", round+1, mode, r.wall.Round(time.Millisecond), rate(b.c.rows, r.wall), perEvent(r.cpu, b.c.rows))
			res[mode] = append(res[mode], r)
		}
		_ = b.exec(ctx, "DELETE FROM cdc_relay_checkpoint")
	}
	wall := func(d drainResult) float64 { return float64(d.wall) }
	cpu := func(d drainResult) float64 { return float64(d.cpu) }
	fmt.Fprintf(out, "Nothing parked:\n\n| ordering | time | events/s | CPU per event |\n|---|---|---|---|\n")
	for _, mode := range modes {
		w := time.Duration(median(res[mode], wall))
		fmt.Fprintf(out, "| %s | %s | %.0f | %.2f µs |\n", mode, w.Round(time.Millisecond), rate(b.c.rows, w), perEvent(time.Duration(median(res[mode], cpu)), b.c.rows))
	}
	keyRate, noneRate := 1/median(res["key"], wall), 1/median(res["none"], wall)
	keyCPU, noneCPU := median(res["key"], cpu), median(res["none"], cpu)
	fmt.Fprintf(out, "\n`key` against `none`: rate %+.1f%%, CPU per event %+.1f%%.\n\n", 100*(keyRate/noneRate-1), 100*(keyCPU/noneCPU-1))
	return nil
}

// fillOrderBacklog empties the outbox and the status table, creates slots
// (so each drains the same backlog) and fills the batched backlog.
func (b *bench) fillOrderBacklog(ctx context.Context, slots ...string) error {
	if err := b.exec(ctx, "TRUNCATE outbox, outbox_delivery"); err != nil {
		return err
	}
	for _, slot := range slots {
		if err := b.exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot); err != nil {
			return err
		}
	}
	return b.fillBacklog(ctx, "outbox", b.c.rows, b.c.perTx)
}

// drainOnce drains the backlog from slot into a fresh kfake broker (whose
// produce hook, if refuse is set, refuses some records), until Kafka acked
// every record but held ones, and the status table holds those.
func (b *bench) drainOnce(ctx context.Context, slot string, refuse *keyRefusal, extra ...string) (drainResult, error) {
	broker, err := newBroker(true)
	if err != nil {
		return drainResult{}, err
	}
	defer broker.Close()
	held := 0
	if refuse != nil {
		refuse.install(broker)
		held = refuse.events
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.ListenAddrs()...))
	if err != nil {
		return drainResult{}, err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, benchTopic); err != nil {
		return drainResult{}, err
	}
	start := time.Now()
	p, err := b.startRelay(slot, broker.ListenAddrs(), extra...)
	if err != nil {
		return drainResult{}, err
	}
	defer p.Kill()
	if err := waitAcked(ctx, cl, benchTopic, int64(b.c.rows-held), p, 10*time.Minute); err != nil {
		return drainResult{}, err
	}
	if err := b.waitStatusRows(ctx, held); err != nil {
		return drainResult{}, err
	}
	r := drainResult{wall: time.Since(start)}
	if r.cpu, err = p.CPU(); err != nil {
		return r, err
	}
	if refuse != nil {
		return r, b.release(ctx, refuse, p)
	}
	return r, p.Stop(60 * time.Second)
}

// waitStatusRows waits until the status table holds n rows.
func (b *bench) waitStatusRows(ctx context.Context, n int) error {
	return poll(ctx, 10*time.Minute, func() (bool, error) {
		var got int
		err := b.conn.QueryRow(ctx, "SELECT count(*) FROM outbox_delivery").Scan(&got)
		return got >= n, err
	})
}

// release lifts the refusal and, as an operator who lifted a cause would,
// makes the refused heads due now with `cdc-relay failed retry --all`
// rather than leave them to their next attempt (up to --retry-max). It
// keeps in r.released the time from lifting until the status table has no
// FAILED or WAITING row, and stops the relay.
func (b *bench) release(ctx context.Context, r *keyRefusal, p *relayproc.Proc) error {
	start := time.Now()
	r.lift()
	if o, err := exec.CommandContext(ctx, b.relayBin, "failed", "retry", "--all", "--postgres-url", b.url).CombinedOutput(); err != nil {
		return fmt.Errorf("failed retry --all: %v\n%s", err, o)
	}
	err := poll(ctx, 10*time.Minute, func() (bool, error) {
		var left int
		err := b.conn.QueryRow(ctx, "SELECT count(*) FROM outbox_delivery WHERE status IN ('FAILED', 'WAITING')").Scan(&left)
		return left == 0, err
	})
	r.released = time.Since(start)
	if err == nil {
		// The span of the poller's deliveries: the release without the
		// retry command and the poller's wake.
		var secs float64
		err = b.conn.QueryRow(ctx, "SELECT coalesce(extract(epoch FROM max(delivered_at) - min(delivered_at)), 0) FROM outbox_delivery WHERE status = 'DELIVERED'").Scan(&secs)
		r.draining = time.Duration(secs * float64(time.Second))
	}
	if stopErr := p.Stop(60 * time.Second); err == nil {
		err = stopErr
	}
	return err
}

// orderBlocked drains the backlog with 1% of the keys refused (each key's
// events held behind its first), then lifts the refusal and times the
// release.
func (b *bench) orderBlocked(ctx context.Context, out io.Writer) error {
	keys := max(1, b.c.keys/100)
	if err := b.fillOrderBacklog(ctx, "bench_order_blocked"); err != nil {
		return err
	}
	defer b.exec(ctx, "DELETE FROM cdc_relay_checkpoint")
	refuse := &keyRefusal{keys: map[string]bool{}}
	var names []string
	for i := range keys {
		refuse.keys[fmt.Sprintf("key-%d", i)] = true
		names = append(names, fmt.Sprintf("key-%d", i))
	}
	if err := b.conn.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE aggregate_id = ANY($1)", names).Scan(&refuse.events); err != nil {
		return fmt.Errorf("count the refused keys' events: %w", err)
	}
	r, err := b.drainOnce(ctx, "bench_order_blocked", refuse,
		"--retry-base", "100ms", "--retry-max", "1s", "--max-attempts", "1000000")
	b.dropSlot(ctx, "bench_order_blocked")
	if err != nil {
		return err
	}
	logf("order: %d keys refused, %d events held; stream %s, release %s", keys, refuse.events, r.wall.Round(time.Millisecond), refuse.released.Round(time.Millisecond))
	fmt.Fprintf(out, "With %d of %d keys refused by the broker (a produce hook answers MESSAGE_TOO_LARGE for their records until lifted; `--retry-base 100ms --retry-max 1s`), %d events held:\n\n", keys, b.c.keys, refuse.events)
	fmt.Fprintf(out, "| | time | events/s | relay CPU per event |\n|---|---|---|---|\n")
	fmt.Fprintf(out, "| stream (all delivered or held) | %s | %.0f | %.2f µs |\n", r.wall.Round(time.Millisecond), rate(b.c.rows, r.wall), perEvent(r.cpu, b.c.rows))
	fmt.Fprintf(out, "| release after lifting and `failed retry --all` (no FAILED or WAITING row left) | %s | %.0f | |\n", refuse.released.Round(time.Millisecond), rate(refuse.events, refuse.released))
	fmt.Fprintf(out, "| of which the poller's deliveries (first to last delivered_at) | %s | %.0f | |\n\n", refuse.draining.Round(time.Millisecond), rate(refuse.events, refuse.draining))
	return nil
}

// keyRefusal makes a kfake broker refuse every record of some keys until
// lifted.
type keyRefusal struct {
	keys     map[string]bool
	events   int           // the backlog's events of those keys
	released time.Duration // from lifting until none is held
	draining time.Duration // from the poller's first delivery to its last
	lifted   atomic.Bool
}

// install adds the produce hook to broker.
func (r *keyRefusal) install(broker *kfake.Cluster) {
	broker.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		if r.lifted.Load() {
			return nil, nil, false
		}
		return r.answer(req.(*kmsg.ProduceRequest))
	})
}

func (r *keyRefusal) lift() { r.lifted.Store(true) }

// answer refuses, with MESSAGE_TOO_LARGE, each partition whose batch holds
// a refused key's record, and asks for the request's other partitions
// again (a retriable error); a request without such a record is left to
// the broker.
func (r *keyRefusal) answer(req *kmsg.ProduceRequest) (kmsg.Response, error, bool) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	hit := false
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.BaseOffset, rp.ErrorCode = p.Partition, -1, kerr.RequestTimedOut.Code
			if r.batchRefused(p.Records) {
				rp.ErrorCode, hit = kerr.MessageTooLarge.Code, true
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !hit {
		return nil, nil, false
	}
	return resp, nil, true
}

// batchRefused reports whether the uncompressed record batches in b hold
// a record of a refused key.
func (r *keyRefusal) batchRefused(b []byte) bool {
	for len(b) >= 12 {
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(b); err != nil {
			return false
		}
		recs := batch.Records
		for range batch.NumRecords {
			l, size := binary.Varint(recs)
			if size <= 0 || l < 0 || size+int(l) > len(recs) {
				break
			}
			var rec kmsg.Record
			if rec.ReadFrom(recs[:size+int(l)]) == nil && r.keys[string(rec.Key)] {
				return true
			}
			recs = recs[size+int(l):]
		}
		b = b[min(len(b), 12+int(batch.Length)):]
	}
	return false
}
