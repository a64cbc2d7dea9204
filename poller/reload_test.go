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
	cfg.Load = load
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
