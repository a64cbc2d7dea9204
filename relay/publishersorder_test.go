package relay

import (
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/status"
	"github.com/cdc-relay/cdc-relay/webhook"
)

// TestPublisherOrderHoldsAdoptedKeys: a webhook publisher's key order,
// rebuilt at a session's start, holds the keys of the rows the
// switch-over adopted for it (its store's reload rows), so that no later
// event of such a key overtakes them in its lanes; and not the keys of
// the rows adopted for Kafka alone, which Kafka's order holds.
func TestPublisherOrderHoldsAdoptedKeys(t *testing.T) {
	t.Parallel()
	ctx, db, admin := sharedPG.ConnectDB(t, time.Minute)
	cfg := DefaultConfig()
	cfg.PostgresURL, cfg.Slot = db.URL(), db.Name
	cfg.Publishers = []Publisher{{Name: "partner", Webhook: webhook.Config{URL: "https://partner.example/hooks", SecretFile: "/etc/secret"}}}
	cfg.Tables[0].Publishers = []string{"kafka", "partner"}
	cfg.Tables[0].AdoptBy = map[string]string{"kafka": "aggregate_id IN ('k1', 'k2')", "partner": "aggregate_id = 'k2'"}
	if _, err := migrations.Apply(ctx, admin, cfg.Migrations(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('wallet', 'k1', 'Opened', '{}'), ('wallet', 'k2', 'Opened', '{}')`); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, a := range cfg.Tables[0].Adoptables("public.outbox") {
		store := status.NewStore(pool, cfg.StatusSchema, cfg.StatusTable, status.Publisher(a.Publisher))
		if _, err := store.Adopt(ctx, pool, a); err != nil {
			t.Fatal(err)
		}
	}
	partner := status.NewStore(pool, cfg.StatusSchema, cfg.StatusTable, append(publisherStoreOptions(cfg, nil), status.Publisher("partner"))...)
	s := &session{runner: &runner{Relay: &Relay{cfg: cfg, log: slog.New(slog.DiscardHandler)}}}
	o, err := s.publisherOrder(ctx, &publisherEngine{Publisher: cfg.Publishers[0], store: partner})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		key  string
		want keyorder.Verdict
	}{
		{"k2", keyorder.Waiting}, // adopted for the partner
		{"k1", keyorder.Pass},    // adopted for Kafka only
		{"k3", keyorder.Pass},
	} {
		ev := &decoder.Event{ID: []byte{byte(i)}, Topic: "outbox.event.wallet", Key: []byte(tc.key)}
		if v, _ := o.Check(ev, uint64(i+1)); v != tc.want {
			t.Errorf("an event of key %s in the partner's order: %v, want %v", tc.key, v, tc.want)
		}
	}
	// Behind a drain of k2's rows, a new event of k2 waits for none of
	// it in memory (SetDrainCap 0): it may be parked at once.
	end := o.BeginDrain([]status.Key{{Topic: "outbox.event.wallet", Key: "k2"}})
	defer end()
	if ev := (&decoder.Event{ID: []byte("d"), Topic: "outbox.event.wallet", Key: []byte("k2")}); !o.MayGoAlone(ev) {
		t.Error("an event of a key the partner's poller drains waits for the drain in memory: a slow receiver's drain would hold the in-flight limits")
	}
}
