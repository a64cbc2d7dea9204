package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// webhookWay is one way the webhook part drains its backlog: to Kafka
// alone, or to Kafka and a webhook receiver, one event a request or
// batches.
type webhookWay struct {
	name  string
	batch int // 0: no webhook publisher
}

// webhookResult is one drain of one way.
type webhookResult struct {
	drainResult
	hook time.Duration // until the receiver took every event (0: no webhook)
}

// webhook measures what a webhook publisher costs beside Kafka: the
// batched backlog drained into kfake by `run --config` with the table
// sent to Kafka alone, to Kafka and a local receiver (keep-alive, one
// event a request), and to both with batches of 10, alternating; the
// Kafka drain is timed to the last ack, the webhook's to the receiver's
// last event; CPU is the relay's, per event (each event is one Kafka
// record and one webhook copy).
func (b *bench) webhook(ctx context.Context, out io.Writer) error {
	var took atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := int64(1)
		if strings.HasPrefix(string(body), "[") { // a batch: one element per event
			n = int64(strings.Count(string(body), `"content_type"`))
		}
		took.Add(n)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	secret := filepath.Join(b.tmp, "webhook-secret")
	if err := os.WriteFile(secret, []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"), 0o600); err != nil {
		return err
	}
	ways := []webhookWay{{"Kafka alone", 0}, {"Kafka and a webhook, one event a request", 1}, {"Kafka and a webhook, batches of 10", 10}}
	files := map[int]string{}
	for _, w := range ways {
		body := webhookConfig(srv.URL, secret, w.batch)
		path := filepath.Join(b.tmp, fmt.Sprintf("webhook-%d.yaml", w.batch))
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			return err
		}
		files[w.batch] = path
	}
	load := loadAverage()
	results := map[int][]webhookResult{}
	for round := 0; round < b.c.rounds; round++ {
		for i := range ways {
			w := ways[(i+round)%len(ways)]
			took.Store(0)
			res, err := b.webhookRound(ctx, files[w.batch], w.batch > 0, &took)
			if err != nil {
				return err
			}
			logf("round %d, %s: Kafka %s (%.0f/s), webhook %s, %.2f µs CPU/event", round+1, w.name, res.wall.Round(time.Millisecond),
				rate(b.c.rows, res.wall), res.hook.Round(time.Millisecond), perEvent(res.cpu, b.c.rows))
			results[w.batch] = append(results[w.batch], res)
		}
	}
	b.webhookTable(out, load, ways, results)
	return nil
}

// webhookConfig is the webhook part's config file: the bench's table to
// Kafka, and to the receiver at url with batches of batch (0: Kafka
// alone).
func webhookConfig(url, secret string, batch int) string {
	table := `tables:
  - table: public.outbox
    id: id
    key: aggregate_id
    value: payload
    topic: "` + benchTopic + `"
    headers: {event_type: event_type, aggregate_type: aggregate_type, aggregate_id: aggregate_id}
    timestamp: created_at
`
	if batch == 0 {
		return table
	}
	return fmt.Sprintf("publishers:\n  receiver:\n    webhook: {url: %q, secret_file: %q, batch_size: %d}\n", url, secret, batch) +
		table + "    publishers: [kafka, receiver]\n"
}

// webhookTable prints the webhook part's table.
func (b *bench) webhookTable(out io.Writer, load string, ways []webhookWay, results map[int][]webhookResult) {
	wall := func(d webhookResult) float64 { return float64(d.wall) }
	hook := func(d webhookResult) float64 { return float64(d.hook) }
	cpu := func(d webhookResult) float64 { return float64(d.cpu) }
	rss := func(d webhookResult) float64 { return float64(d.peakRSS) }
	fmt.Fprintf(out, "### Webhooks: %d rows, %d per transaction, kfake and a local receiver (median of %d rounds)\n\n", b.c.rows, b.c.perTx, b.c.rounds)
	fmt.Fprintf(out, "Load average before: %s.\n\n", load)
	fmt.Fprintf(out, "| | Kafka drained | events/s | webhook took all | events/s | CPU per event | peak RSS |\n|---|---|---|---|---|---|---|\n")
	for _, w := range ways {
		rs := results[w.batch]
		kw, hw := time.Duration(median(rs, wall)), time.Duration(median(rs, hook))
		hookCells := "| — | — "
		if w.batch > 0 {
			hookCells = fmt.Sprintf("| %s | %.0f ", hw.Round(time.Millisecond), rate(b.c.rows, hw))
		}
		fmt.Fprintf(out, "| %s | %s | %.0f %s| %.2f µs | %.1f MiB |\n", w.name, kw.Round(time.Millisecond), rate(b.c.rows, kw), hookCells,
			perEvent(time.Duration(median(rs, cpu)), b.c.rows), median(rs, rss)/(1<<20))
	}
	fmt.Fprintln(out)
}

// webhookRound fills the backlog behind a fresh slot and drains it with
// `run --config path`, timing the last Kafka ack and, with a webhook, the
// receiver's last event (took counts them).
func (b *bench) webhookRound(ctx context.Context, path string, hook bool, took *atomic.Int64) (webhookResult, error) {
	var res webhookResult
	if err := b.exec(ctx, "TRUNCATE outbox"); err != nil {
		return res, err
	}
	if err := b.exec(ctx, "TRUNCATE outbox_delivery"); err != nil {
		return res, err
	}
	const slot = "bench_webhook"
	if err := b.exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot); err != nil {
		return res, err
	}
	defer func() {
		b.dropSlot(ctx, slot)
		_ = b.exec(ctx, "DELETE FROM cdc_relay_checkpoint")
	}()
	if err := b.fillBacklog(ctx, "outbox", b.c.rows, b.c.perTx); err != nil {
		return res, err
	}
	_ = b.exec(ctx, "CHECKPOINT")
	broker, err := newBroker(true)
	if err != nil {
		return res, err
	}
	defer broker.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.ListenAddrs()...))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, benchTopic); err != nil {
		return res, err
	}
	saved := b.c.relayArgs
	b.c.relayArgs = strings.TrimSpace(saved + " --config " + path)
	start := time.Now()
	p, err := b.startRelay(slot, broker.ListenAddrs())
	b.c.relayArgs = saved
	if err != nil {
		return res, err
	}
	if err := waitAcked(ctx, cl, benchTopic, int64(b.c.rows), p, 10*time.Minute); err != nil {
		p.Kill()
		return res, err
	}
	res.wall = time.Since(start)
	if hook {
		if err := poll(ctx, 10*time.Minute, func() (bool, error) { return took.Load() >= int64(b.c.rows), nil }); err != nil {
			p.Kill()
			return res, fmt.Errorf("wait for the receiver: %w (it took %d of %d)", err, took.Load(), b.c.rows)
		}
		res.hook = time.Since(start)
	}
	if res.cpu, err = p.CPU(); err != nil {
		p.Kill()
		return res, err
	}
	if res.peakRSS, err = p.PeakRSS(); err != nil {
		p.Kill()
		return res, err
	}
	return res, p.Stop(60 * time.Second)
}
