package poller

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cdc-relay/cdc-relay/status"
)

// TestDeliverReloadRows: a Reload row is sent as Config.Load reads its
// outbox row, and the outcome carries what was read; a row that cannot be
// read for good is DEAD, one that cannot be read now waits for the next
// poll, without an attempt.
func TestDeliverReloadRows(t *testing.T) {
	t.Parallel()
	load := func(_ context.Context, r status.Row) (status.Row, error) {
		switch r.EventID {
		case "gone":
			return r, fmt.Errorf("its outbox row no longer exists: the event %w", ErrUnloadable)
		case "busy":
			return r, errors.New("connection refused")
		}
		r.Topic, r.Key, r.Value = map[string]string{"ok": "orders", "missing": "missing"}[r.EventID], []byte("k"), []byte(`{"now": true}`)
		return r, nil
	}
	store := &fakeStore{rows: []status.Row{
		{ID: 1, EventID: "ok", SourceTable: "public.outbox", Reload: true},
		{ID: 2, EventID: "gone", SourceTable: "public.outbox", Reload: true},
		{ID: 3, EventID: "busy", SourceTable: "public.outbox", Reload: true},
		{ID: 4, EventID: "missing", SourceTable: "public.outbox", Reload: true},
	}}
	prod := &fakeProducer{errs: map[string]error{"missing": kerr.UnknownTopicOrPartition}}
	cfg := DefaultConfig()
	cfg.Load = each(load)
	if _, err := New(store, prod, cfg).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(prod.produced) != 2 || string(prod.produced[0].Value) != `{"now": true}` || prod.produced[0].Topic != "orders" {
		t.Fatalf("produced %v, want the loaded records of ok and missing", prod.produced)
	}
	got := map[int64]status.Outcome{}
	for _, o := range store.outcomes {
		got[o.ID] = o
	}
	switch {
	case !got[1].Delivered || got[1].Loaded == nil || got[1].Loaded.Topic != "orders" || got[1].Loaded.Reload:
		t.Fatalf("ok: %+v, want delivered with its loaded record", got[1])
	case !got[2].Dead || !errors.Is(got[2].Err, ErrUnloadable):
		t.Fatalf("gone: %+v, want dead", got[2])
	case got[4].Delivered || got[4].Dead || got[4].Loaded == nil || got[4].RetryIn == 0:
		t.Fatalf("missing: %+v, want failed with its loaded record, due again", got[4])
	}
	if _, ok := got[3]; ok || len(store.outcomes) != 3 {
		t.Fatalf("outcomes %+v: want none for the row that could not be read now", store.outcomes)
	}
}

// TestReloadRowOfATopicNotItsPublishers: a reset re-arms every publisher
// of a table; a reload row loaded for a topic its publisher does not send
// (Config.Sends) is settled as delivered without being sent, and does not
// hold the later rows of its key, which are sent.
func TestReloadRowOfATopicNotItsPublishers(t *testing.T) {
	t.Parallel()
	load := func(_ context.Context, r status.Row) (status.Row, error) {
		r.Topic, r.Key, r.Value = r.EventID, []byte("k"), []byte(`{}`) // the test's rows name their topic by their id
		return r, nil
	}
	store := &fakeStore{rows: []status.Row{
		{ID: 1, EventID: "payment-events", SourceTable: "public.events", Topic: "", Key: []byte("k"), Reload: true},
		{ID: 2, EventID: "wallet-events", SourceTable: "public.events", Topic: "", Key: []byte("k"), Reload: true},
	}}
	prod := &fakeProducer{}
	cfg := DefaultConfig()
	cfg.Load = each(load)
	cfg.Sends = func(source, topic string) bool { return source == "public.events" && topic == "wallet-events" }
	if _, err := New(store, prod, cfg).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(prod.produced) != 1 || prod.produced[0].Topic != "wallet-events" {
		t.Fatalf("produced %v, want wallet-events' record alone", prod.produced)
	}
	got := map[int64]status.Outcome{}
	for _, o := range store.outcomes {
		got[o.ID] = o
	}
	if !got[1].Delivered || got[1].Err != nil || !got[2].Delivered {
		t.Fatalf("outcomes %+v: want both settled as delivered", store.outcomes)
	}
}

// TestReloadRowOfAPausedTopic: a Reload row's topic is known once its
// outbox row is loaded; one loaded for a paused topic is not produced,
// and its outcome parks it PAUSED with the record read, counting no
// attempt; one of a topic not paused is delivered. A row loaded for the
// topic it was claimed with costs no read of the paused topics. When they
// cannot be read, no row loaded for a new topic is produced, and none gets
// an outcome.
func TestReloadRowOfAPausedTopic(t *testing.T) {
	t.Parallel()
	load := func(_ context.Context, r status.Row) (status.Row, error) {
		r.Topic, r.Value = r.EventID, []byte(`{}`) // the test's rows name their topic by their id
		return r, nil
	}
	rows := []status.Row{
		{ID: 1, EventID: "paused", SourceTable: "public.outbox", Reload: true},
		{ID: 2, EventID: "orders", SourceTable: "public.outbox", Reload: true},
	}
	store := &fakeStore{rows: rows}
	prod := &fakeProducer{}
	cfg := DefaultConfig()
	cfg.Load = each(load)
	cfg.PausedTopics = func(context.Context) ([]string, error) { return []string{"other", "paused"}, nil }
	if _, err := New(store, prod, cfg).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(prod.produced) != 1 || prod.produced[0].Topic != "orders" {
		t.Fatalf("produced %v, want the row of orders only", prod.produced)
	}
	got := map[int64]status.Outcome{}
	for _, o := range store.outcomes {
		got[o.ID] = o
	}
	if o := got[1]; !o.Paused || o.Delivered || o.Dead || o.Loaded == nil || o.Loaded.Topic != "paused" {
		t.Fatalf("the row of the paused topic: %+v, want parked PAUSED with its loaded record", o)
	}
	if o := got[2]; !o.Delivered || o.Paused {
		t.Fatalf("the row of orders: %+v, want delivered", o)
	}

	// A row loaded for the topic it was claimed with was checked by the
	// claim: the paused topics are not read for it.
	reads := 0
	cfg.PausedTopics = func(context.Context) ([]string, error) { reads++; return []string{"paused"}, nil }
	store, prod = &fakeStore{rows: []status.Row{{ID: 3, EventID: "orders", Topic: "orders", SourceTable: "public.outbox", Reload: true}}}, &fakeProducer{}
	if _, err := New(store, prod, cfg).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if reads != 0 || len(prod.produced) != 1 {
		t.Fatalf("a row loaded for the topic it was claimed with: %d reads of the paused topics, %d produced; want 0 and 1", reads, len(prod.produced))
	}

	store, prod = &fakeStore{rows: rows}, &fakeProducer{}
	cfg.PausedTopics = func(context.Context) ([]string, error) { return nil, errors.New("connection refused") }
	if _, err := New(store, prod, cfg).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(prod.produced) != 0 || len(store.outcomes) != 0 {
		t.Fatalf("with the paused topics unread: produced %v, outcomes %+v; want none", prod.produced, store.outcomes)
	}
}

// each is a Config.Load that loads each row with load.
func each(load func(context.Context, status.Row) (status.Row, error)) func(context.Context, []status.Row) ([]status.Row, []error) {
	return func(ctx context.Context, rows []status.Row) ([]status.Row, []error) {
		out, errs := make([]status.Row, len(rows)), make([]error, len(rows))
		for i, r := range rows {
			out[i], errs[i] = load(ctx, r)
		}
		return out, errs
	}
}

// TestReloadRowsWithinMaxBytes: a claim's Reload rows are read a few at a
// time while the claim's records (its other rows' and those read) fit in
// Config.MaxBytes; the rows past it are not read, get no outcome, and wait
// for the next claim, which follows at once.
func TestReloadRowsWithinMaxBytes(t *testing.T) {
	t.Parallel()
	const size = 1000
	var reads [][]string
	load := func(_ context.Context, rows []status.Row) ([]status.Row, []error) {
		var ids []string
		out := make([]status.Row, len(rows))
		for i, r := range rows {
			ids = append(ids, r.EventID)
			r.Topic, r.Key, r.Value = "orders", []byte(r.EventID), make([]byte, size)
			out[i] = r
		}
		reads = append(reads, ids)
		return out, make([]error, len(rows))
	}
	store := &fakeStore{rows: []status.Row{{ID: 1, EventID: "parked", Topic: "orders", Key: []byte("p"), Value: make([]byte, 2*size)}}}
	for i := range 200 {
		store.rows = append(store.rows, status.Row{ID: int64(i + 2), EventID: fmt.Sprint("r", i), SourceTable: "public.outbox", Reload: true})
	}
	prod := &fakeProducer{}
	cfg := DefaultConfig()
	cfg.Load, cfg.MaxBytes = load, 100*size
	p := New(store, prod, cfg)
	if _, err := p.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, r := range reads {
		read += len(r)
	}
	// The parked row's 2,000 bytes, then 64 rows read, then as many as fit.
	if len(reads) < 2 || len(reads[0]) != firstLoad || read < 95 || read > 100 {
		t.Fatalf("read %d rows in %d reads (%v rows each), want %d first, then up to 98 in all", read, len(reads), lens(reads), firstLoad)
	}
	if len(prod.produced) != read+1 || len(store.outcomes) != read+1 {
		t.Fatalf("%d produced, %d outcomes; want the parked row and the %d rows read, the others left for the next claim", len(prod.produced), len(store.outcomes), read)
	}
	if p.held <= cfg.MaxBytes/2 {
		t.Fatalf("the claim held %d bytes, want over half of MaxBytes, so that the next claim follows at once", p.held)
	}
}

func lens(s [][]string) []int {
	var out []int
	for _, x := range s {
		out = append(out, len(x))
	}
	return out
}
