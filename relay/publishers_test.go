package relay

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/status"
	"github.com/cdc-relay/cdc-relay/webhook"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// publishersConfig is a relay of a routed table (wallet to Kafka and the
// partner, payment to Kafka, audit to the partner alone) and a table of
// one topic to the partner and Kafka.
func publishersConfig() Config {
	events := outbox.Table{Mapping: decoder.Mapping{Schema: "public", Table: "events", Routes: []decoder.Route{
		{Topic: "wallet"}, {Topic: "payment"}, {Topic: "audit"}, {Topic: "wallet"}}},
		RoutePublishers: [][]string{{"kafka", "partner"}, nil, {"partner"}, {"kafka"}}}
	orders := outbox.Table{Mapping: decoder.Mapping{Schema: "public", Table: "outbox", TopicTemplate: "orders"},
		Publishers: []string{"partner", "kafka"}}
	return Config{Tables: []outbox.Table{events, orders},
		Publishers: []Publisher{{Name: "partner", Webhook: webhook.Config{URL: "https://partner.example/hooks", SecretFile: "/etc/secret"}}}}
}

// TestPublishersOf: each copy of an event goes to the publishers of its
// topic: a routed table's by the routes naming the topic (the union, each
// once), another table's its own; messages to Kafka alone; no publisher
// beside Kafka, no function (the pipeline's path unchanged).
func TestPublishersOf(t *testing.T) {
	c := publishersConfig()
	of := c.publishersOf()
	for _, tc := range []struct {
		table int
		topic string
		want  []int
	}{
		{0, "wallet", []int{0, 1}},
		{0, "payment", []int{0}},
		{0, "audit", []int{1}},
		{0, "nowhere", []int{0, 1}}, // a poison row's: every publisher of the table
		{1, "orders", []int{1, 0}},
		{2, "messages", []int{0}},
	} {
		if got := of(tc.table, tc.topic); !slices.Equal(got, tc.want) {
			t.Errorf("table %d, topic %s: publishers %v, want %v", tc.table, tc.topic, got, tc.want)
		}
	}
	c.Publishers = nil
	if c.publishersOf() != nil {
		t.Error("no publisher beside Kafka: want no PublishersOf")
	}
}

// TestCheckPublishers: an undefined publisher, one defined twice, an
// invalid webhook and exactly-once beside a webhook are each refused,
// saying what to do; write-back beside a webhook is taken.
func TestCheckPublishers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"valid", func(*Config) {}, ""},
		{"undefined", func(c *Config) { c.Publishers = nil }, `routes events to publisher "partner", which is not defined`},
		{"twice", func(c *Config) { c.Publishers = append(c.Publishers, c.Publishers[0]) }, `publisher "partner" is defined twice`},
		{"kafka", func(c *Config) { c.Publishers[0].Name = "kafka" }, "not a publisher's name"},
		{"invalid webhook", func(c *Config) { c.Publishers[0].Webhook.URL = "ftp://x" }, "publisher partner: "},
		{"exactly-once", func(c *Config) { c.ExactlyOnce.Enabled = true }, "webhooks are at-least-once only"},
		{"write-back", func(c *Config) { c.Tables[1].WriteBack = &writeback.Columns{} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := publishersConfig()
			tc.change(&c)
			err := c.checkPublishers()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("checkPublishers: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestFailures: the status store of each of the relay's publishers once
// it has connected (ErrNotConnected before), and for another name an
// error wrapping ErrUnknownPublisher that names the relay's publishers.
func TestFailures(t *testing.T) {
	r := &Relay{cfg: publishersConfig()}
	for _, name := range []string{status.KafkaPublisher, "partner"} {
		if _, err := r.Failures(name); !errors.Is(err, ErrNotConnected) {
			t.Errorf("Failures(%s) before Run connects: %v, want ErrNotConnected", name, err)
		}
	}
	kafka := status.NewStore(nil, "public", "outbox_delivery")
	partner := status.NewStore(nil, "public", "outbox_delivery", status.Publisher("partner"))
	r.failures.Store(kafka)
	r.publisherFailures.Store(&map[string]*status.Store{"partner": partner})
	for name, want := range map[string]*status.Store{status.KafkaPublisher: kafka, "partner": partner} {
		if got, err := r.Failures(name); got != want || err != nil {
			t.Errorf("Failures(%s): %p, %v; want its store %p", name, got, err, want)
		}
	}
	for name, msg := range map[string]string{
		"partnr":    `publisher "partnr": not one of the relay's publishers: did you mean "partner"? (kafka, partner)`,
		"analytics": `publisher "analytics": not one of the relay's publishers: kafka, partner`,
	} {
		if _, err := r.Failures(name); !errors.Is(err, ErrUnknownPublisher) || err.Error() != msg {
			t.Errorf("Failures(%s): %v, want %q", name, err, msg)
		}
	}
}

// TestPublisherMetricsFromTheStart: a relay serves each webhook
// publisher's series from New on, before it leads (a standby too): its
// requests of every class, its parked events of every reason, its retries
// and its failing gauge, at 0; none for Kafka.
func TestPublisherMetricsFromTheStart(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PostgresURL = "postgres://relay@127.0.0.1/app"
	cfg.Publishers = []Publisher{
		{Name: "partner", Webhook: webhook.Config{URL: "https://partner.example/hooks", SecretEnv: "CDC_RELAY_TEST_UNSET"}},
		{Name: "analytics", Webhook: webhook.Config{URL: "https://analytics.example/in", SecretEnv: "CDC_RELAY_TEST_UNSET"}},
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	families, err := r.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]map[string]int{} // by metric, by publisher
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "cdc_relay_webhook_") {
			continue
		}
		series[f.GetName()] = map[string]int{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "publisher" {
					series[f.GetName()][l.GetValue()]++
				}
			}
			if m.GetCounter().GetValue() != 0 || m.GetGauge().GetValue() != 0 || m.GetHistogram().GetSampleCount() != 0 {
				t.Errorf("%s %v: not 0 at the start", f.GetName(), m.GetLabel())
			}
		}
	}
	for _, tc := range []struct {
		name string
		per  int // series per publisher
	}{
		{"cdc_relay_webhook_requests_total", len(metrics.WebhookClasses)},
		{"cdc_relay_webhook_events_parked_total", len(metrics.WebhookParkReasons)},
		{"cdc_relay_webhook_retries_total", 1},
		{"cdc_relay_webhook_receiver_failing", 1},
		{"cdc_relay_webhook_request_duration_seconds", 1},
	} {
		want := map[string]int{"partner": tc.per, "analytics": tc.per}
		if got := series[tc.name]; !maps.Equal(got, want) {
			t.Errorf("%s: series by publisher %v, want %v", tc.name, got, want)
		}
	}
}
