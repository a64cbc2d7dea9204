package backfill

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/sink"
)

// events is an event-store table: a composite text-and-number key, with
// gaps in the positions, and a row whose topic cannot be one.
const events = `CREATE TABLE events (
	stream   text   NOT NULL,
	position bigint NOT NULL,
	topic    text   NOT NULL,
	payload  jsonb  NOT NULL,
	PRIMARY KEY (stream, position)
)`

// fixture is a database with table events and a Kafka broker.
type fixture struct {
	ctx     context.Context
	url     string
	brokers []string
	cfg     Config
}

func newFixture(t *testing.T, schema ...string) *fixture {
	t.Helper()
	ctx, pg, _ := pgtemptest.ConnectT(t, 2*time.Minute, schema...)
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	m := decoder.Mapping{Schema: "public", Table: "events", KeyColumn: "stream", PayloadColumn: "payload", TopicColumn: "topic", TopicTemplate: "unused"}
	f := &fixture{ctx: ctx, url: pg.URL("postgres"), brokers: kc.ListenAddrs()}
	f.cfg = Config{PostgresURL: f.url, Mapping: m, Kafka: sink.Config{Brokers: f.brokers, AutoCreateTopics: true}, Where: "true", Batch: 7, RunID: "run-1"}
	return f
}

// consume reads topic from its start until it has n records, or fails.
func (f *fixture) consume(t *testing.T, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(f.ctx, 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
	}
	if len(recs) != n {
		t.Fatalf("%s: %d records, want %d", topic, len(recs), n)
	}
	return recs
}

// positions are the positions in the records' values ({"p": n}), in order.
func positions(recs []*kgo.Record) []string {
	ps := make([]string, len(recs))
	for i, r := range recs {
		ps[i] = strings.Trim(strings.TrimPrefix(string(r.Value), `{"p": `), "}")
	}
	return ps
}

// TestBackfillPagesByKey: a predicate over rows with gaps in their
// composite key, read 7 at a time, publishes every selected row once, in
// key order, through the mapping and with the backfill's header; a row
// that cannot become a record is skipped and counted.
func TestBackfillPagesByKey(t *testing.T) {
	f := newFixture(t, events,
		`INSERT INTO events SELECT s, p, 'bf', format('{"p": %s}', p)::jsonb FROM unnest(ARRAY['a', 'b b', 'c''c']) s, generate_series(1, 100) p WHERE p % 3 <> 0`,
		`INSERT INTO events VALUES ('b b', 1000, '__bad', '{"p": 1000}')`)
	f.cfg.Where = "position > 40"
	res, err := Run(f.ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	var each []string // every stream's positions selected, in order
	for p := 41; p <= 100; p++ {
		if p%3 != 0 {
			each = append(each, fmt.Sprint(p))
		}
	}
	streams := []string{"a", "b b", "c'c"}
	if n := int64(len(streams) * len(each)); res.Rows != n || res.Skipped != 1 || res.Total != n+1 || res.Stopped {
		t.Errorf("result %+v, want %d rows, 1 skipped", res, n)
	}
	if res.LastKey != `["c'c","100"]` {
		t.Errorf("last key %s", res.LastKey)
	}
	byKey := map[string][]*kgo.Record{}
	for _, r := range f.consume(t, "bf", len(streams)*len(each)) {
		byKey[string(r.Key)] = append(byKey[string(r.Key)], r)
		if h := r.Headers; len(h) != 1 || h[0].Key != Header || string(h[0].Value) != "run-1" {
			t.Errorf("record of key %q has headers %v: want only %s: run-1", r.Key, h, Header)
		}
	}
	for _, s := range streams {
		if got := positions(byKey[s]); !slices.Equal(got, each) {
			t.Errorf("stream %q: positions %v\nwant %v", s, got, each)
		}
	}
}

// TestBackfillStopsAndResumes: a backfill stopped after its second batch
// says where; one started --after that key publishes the rest, and
// together they publish every row.
func TestBackfillStopsAndResumes(t *testing.T) {
	f := newFixture(t, events, `INSERT INTO events SELECT 's', p, 'sr', format('{"p": %s}', p)::jsonb FROM generate_series(1, 50) p`)
	ctx, stop := context.WithCancel(f.ctx)
	batches := 0
	f.cfg.Progress = func(Progress) {
		if batches++; batches == 2 {
			stop()
		}
	}
	first, err := Run(ctx, f.cfg)
	if err != nil || !first.Stopped || first.Rows != 14 || first.LastKey != `["s","14"]` {
		t.Fatalf("first run %+v, %v: want stopped after 14 rows at [\"s\",\"14\"]", first, err)
	}
	f.cfg.Progress, f.cfg.After = nil, first.LastKey
	second, err := Run(f.ctx, f.cfg)
	if err != nil || second.Stopped || second.Rows != 36 || second.Total != 36 {
		t.Fatalf("second run %+v, %v: want the 36 rows left", second, err)
	}
	want := make([]string, 50)
	for i := range want {
		want[i] = fmt.Sprint(i + 1)
	}
	if got := positions(f.consume(t, "sr", 50)); !slices.Equal(got, want) {
		t.Errorf("positions %v", got)
	}
}

// TestBackfillDryRunAndOverride: a dry run counts and finds the first and
// last key; --topic-override sends every record to its topic; a rate
// spaces the batches.
func TestBackfillDryRunAndOverride(t *testing.T) {
	f := newFixture(t, events, `INSERT INTO events SELECT 'x', p, 'not-this', '{}' FROM generate_series(1, 30) p`)
	f.cfg.Where, f.cfg.DryRun = "position BETWEEN 5 AND 24", true
	res, err := Run(f.ctx, f.cfg)
	if err != nil || res.Total != 20 || res.First != `["x","5"]` || res.Last != `["x","24"]` || res.Rows != 0 {
		t.Fatalf("dry run %+v, %v", res, err)
	}
	f.cfg.DryRun, f.cfg.TopicOverride, f.cfg.Rate, f.cfg.Batch = false, "over", 40, 10
	start := time.Now()
	if res, err = Run(f.ctx, f.cfg); err != nil || res.Rows != 20 {
		t.Fatalf("run %+v, %v", res, err)
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("20 rows at 40 a second, 10 a batch, took %s: want the second batch a quarter second after the first", took)
	}
	f.consume(t, "over", 20)
}

// TestBackfillRefusals: a predicate cannot write; a second backfill of a
// table is refused while one runs, naming its session; a table without a
// primary key is refused with the fix.
func TestBackfillRefusals(t *testing.T) {
	f := newFixture(t, events, `CREATE SEQUENCE s`, `CREATE TABLE nokey (payload jsonb)`,
		`INSERT INTO events VALUES ('x', 1, 't', '{}')`)
	f.cfg.Where = "nextval('s') > 0"
	if _, err := Run(f.ctx, f.cfg); err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("a writing predicate: %v, want a read-only transaction's refusal", err)
	}

	f.cfg.Where = "true"
	b, err := open(f.ctx, f.cfg.withDefaults(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(f.ctx, f.cfg)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "cdc-relay backfill, pid") {
		t.Errorf("a second backfill: %v, want ErrBusy naming the first", err)
	}
	b.close()
	// The server ends the first session, and releases its lock, soon after.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err = Run(f.ctx, f.cfg)
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Errorf("once the first ended: %v", err)
	}

	f.cfg.Mapping.Table = "nokey"
	if _, err := Run(f.ctx, f.cfg); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "ADD PRIMARY KEY") {
		t.Errorf("a table without a key: %v", err)
	}
}
