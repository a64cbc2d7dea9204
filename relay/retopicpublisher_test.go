package relay

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/status"
	"github.com/cdc-relay/cdc-relay/webhook"
)

// publisherStore is the status store of publisher for cfg's tables.
func publisherStore(pool *pgxpool.Pool, cfg Config, publisher string) *status.Store {
	return status.NewStore(pool, cfg.StatusSchema, cfg.StatusTable, status.SourceTables(cfg.SourceNames()...), status.Publisher(publisher))
}

// partnerDB is a database migrated for a relay whose table goes to Kafka
// and a webhook publisher "partner", its config, a connection as the
// database's owner and a pool (closed with the test).
func partnerDB(t *testing.T) (context.Context, Config, *pgx.Conn, *pgxpool.Pool) {
	t.Helper()
	ctx, db, admin := sharedPG.ConnectDB(t, time.Minute)
	cfg := DefaultConfig()
	cfg.PostgresURL, cfg.Slot = db.URL(), db.Name
	cfg.Publishers = []Publisher{{Name: "partner", Webhook: webhook.Config{URL: "https://partner.example/hooks", SecretFile: "/etc/secret"}}}
	cfg.Tables[0].Publishers = []string{"kafka", "partner"}
	if _, err := migrations.Apply(ctx, admin, cfg.Migrations(0)); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return ctx, cfg, admin, pool
}

// TestRefreshHoldsAPublishersCorrectedKeys: a webhook publisher's event
// whose topic another process corrected (`cdc-relay failed retry ID
// --topic T --publisher P`) holds the later events of its key in its new
// topic in that publisher's order once the session reads the corrected
// rows, as Kafka's does in Kafka's order; neither order holds the other
// publisher's corrected keys.
func TestRefreshHoldsAPublishersCorrectedKeys(t *testing.T) {
	t.Parallel()
	ctx, cfg, admin, pool := partnerDB(t)
	if _, err := admin.Exec(ctx, `INSERT INTO outbox_delivery (event_id, topic, record_key, status, attempts, last_error, publisher) VALUES
		  ('e-1', 'bad topic!', 'k1', 'DEAD', 0, 'illegal topic name', 'partner'),
		  ('e-2', 'bad topic!', 'k2', 'DEAD', 0, 'illegal topic name', 'kafka')`); err != nil {
		t.Fatal(err)
	}
	kafka, partner := publisherStore(pool, cfg, status.KafkaPublisher), publisherStore(pool, cfg, "partner")
	// Corrected by another process: no Hold, as `cdc-relay failed retry`.
	if _, err := partner.Retry(ctx, status.RetryOptions{IDs: []int64{1}, Topic: "fixed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := kafka.Retry(ctx, status.RetryOptions{IDs: []int64{2}, Topic: "fixed"}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	s := &session{runner: &runner{Relay: &Relay{cfg: cfg, log: log}, failures: kafka}, order: keyorder.New(true, log)}
	ps := &publisherSession{publisherEngine: &publisherEngine{Publisher: cfg.Publishers[0], store: partner}, order: keyorder.New(true, log)}
	s.pubSessions = []*publisherSession{ps}
	s.refreshCorrected(ctx)
	for i, tc := range []struct {
		order *keyorder.Order
		whose string
		key   string
		want  keyorder.Verdict
	}{
		{ps.order, "the partner's", "k1", keyorder.Waiting}, // its row, corrected to "fixed"
		{ps.order, "the partner's", "k2", keyorder.Pass},    // Kafka's row
		{s.order, "Kafka's", "k2", keyorder.Waiting},
		{s.order, "Kafka's", "k1", keyorder.Pass},
	} {
		ev := &decoder.Event{ID: []byte{byte(i)}, Topic: "fixed", Key: []byte(tc.key)}
		if v, _ := tc.order.Check(ev, uint64(i+1)); v != tc.want {
			t.Errorf("a new event of key %s in topic fixed, in %s order: %v, want %v", tc.key, tc.whose, v, tc.want)
		}
	}
}

// TestRetryOfHoldsTheCorrectedKey: RetryOf (the admin endpoint's
// ?publisher=&topic=) checks a webhook publisher's new topic as Retry
// does Kafka's, and holds the row's key in its new topic in that
// publisher's order before the change commits, not in Kafka's; a name
// that is not a publisher's is refused.
func TestRetryOfHoldsTheCorrectedKey(t *testing.T) {
	t.Parallel()
	ctx, cfg, admin, pool := partnerDB(t)
	if _, err := admin.Exec(ctx, `INSERT INTO outbox_delivery (event_id, topic, record_key, status, attempts, last_error, publisher) VALUES
		  ('e-1', 'bad topic!', 'k1', 'DEAD', 0, 'illegal topic name', 'partner')`); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	r := &Relay{cfg: cfg, log: log}
	kafkaOrder, partnerOrder := keyorder.New(true, log), keyorder.New(true, log)
	r.failures.Store(publisherStore(pool, cfg, status.KafkaPublisher))
	r.publisherFailures.Store(&map[string]*status.Store{"partner": publisherStore(pool, cfg, "partner")})
	r.order.Store(kafkaOrder)
	r.publisherOrders.Store(&map[string]*keyorder.Order{"partner": partnerOrder})

	if _, err := r.RetryOf(ctx, "partner", status.RetryOptions{IDs: []int64{1}, Topic: "__consumer_offsets"}); !errors.Is(err, status.ErrTopicRefused) {
		t.Errorf("RetryOf to a reserved topic: %v, want ErrTopicRefused", err)
	}
	if _, err := r.RetryOf(ctx, "partnr", status.RetryOptions{IDs: []int64{1}}); !errors.Is(err, ErrUnknownPublisher) {
		t.Errorf("RetryOf of a publisher the relay lacks: %v, want ErrUnknownPublisher", err)
	}
	changes, err := r.RetryOf(ctx, "partner", status.RetryOptions{IDs: []int64{1}, Topic: "fixed"})
	if err != nil || len(changes) != 1 {
		t.Fatalf("RetryOf the partner's row to topic fixed: %v, %v", changes, err)
	}
	ev := &decoder.Event{ID: []byte("later"), Topic: "fixed", Key: []byte("k1")}
	if v, _ := partnerOrder.Check(ev, 1); v != keyorder.Waiting {
		t.Errorf("a later event of k1 in fixed, in the partner's order: %v, want it to wait behind the corrected row", v)
	}
	if v, _ := kafkaOrder.Check(ev, 2); v != keyorder.Pass {
		t.Errorf("a later event of k1 in fixed, in Kafka's order: %v, want it to pass (the row is the partner's)", v)
	}
}

// TestPauseTopicOfAtOnce: PauseTopicOf a webhook publisher's topic writes
// its pause in the pause table and holds its events in that publisher's
// session at once, leaving Kafka's flowing; ResumeTopicOf lets them
// flow again at once. Kafka's own goes through PauseTopic.
func TestPauseTopicOfAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cfg, _, pool := partnerDB(t)
	log := slog.New(slog.DiscardHandler)
	r := &Relay{cfg: cfg, log: log}
	kafkaOrder, partnerOrder := keyorder.New(true, log), keyorder.New(true, log)
	store := func(publisher string) *status.Store {
		return status.NewStore(pool, cfg.StatusSchema, cfg.StatusTable, append(publisherStoreOptions(cfg, nil), status.Publisher(publisher))...)
	}
	partner := store("partner")
	r.failures.Store(store(status.KafkaPublisher))
	r.publisherFailures.Store(&map[string]*status.Store{"partner": partner})
	r.order.Store(kafkaOrder)
	r.publisherOrders.Store(&map[string]*keyorder.Order{"partner": partnerOrder})

	ev := &decoder.Event{ID: []byte("e"), Topic: "wallet", Key: []byte("k")}
	if changed, err := r.PauseTopicOf(ctx, "partner", "wallet"); err != nil || !changed {
		t.Fatalf("PauseTopicOf: %v, %v", changed, err)
	}
	if v, _ := partnerOrder.Check(ev, 1); v != keyorder.Paused {
		t.Errorf("the partner's event of a topic just paused for it: %v, want it parked PAUSED at once", v)
	}
	if v, _ := kafkaOrder.Check(ev, 2); v != keyorder.Pass {
		t.Errorf("Kafka's event of the topic paused for the partner: %v, want it to pass", v)
	}
	if topics, err := partner.PausedTopics(ctx); err != nil || len(topics) != 1 || topics[0] != "wallet" {
		t.Errorf("the pause table says the partner's paused topics are %v (%v), want wallet", topics, err)
	}
	if changed, err := r.ResumeTopicOf(ctx, "partner", "wallet"); err != nil || !changed {
		t.Fatalf("ResumeTopicOf: %v, %v", changed, err)
	}
	if v, _ := partnerOrder.Check(ev, 3); v != keyorder.Pass {
		t.Errorf("the partner's event once resumed: %v, want it to pass at once", v)
	}
	if _, err := r.PauseTopicOf(ctx, "partnr", "wallet"); !errors.Is(err, ErrUnknownPublisher) {
		t.Errorf("PauseTopicOf a publisher the relay lacks: %v, want ErrUnknownPublisher", err)
	}
}
