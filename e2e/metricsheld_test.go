package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMetricsSeeFirstEventsAndHeldOnes: what an operator's Prometheus
// scrapes through a first parked event and a paused topic. Before any
// event, the reasons of parking, the usual produce errors and the Kafka
// transactions' results have series at 0, so that a first parked event is
// a rise that rate() and increase() see (a series that appears at 1 is
// none). While a topic is paused with events held,
// cdc_relay_undelivered_oldest_seconds (the lag alert's) grows although
// nothing is in flight and cdc_relay_replication_lag_seconds reads 0; it
// is back to 0 once they are delivered.
func TestMetricsSeeFirstEventsAndHeldOnes(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	a, b := e.topic("a"), e.topic("b")
	e.createTopic(a, map[string]string{"max.message.bytes": "2000"})
	e.createTopic1(b)
	p := e.startRelay()
	_, fams := p.scrape()
	for _, s := range []struct{ name, label, value string }{
		{"cdc_relay_events_parked_total", "reason", "MESSAGE_TOO_LARGE"},
		{"cdc_relay_events_parked_total", "reason", "UNKNOWN_TOPIC_OR_PARTITION"},
		{"cdc_relay_events_parked_total", "reason", "invalid_row"},
		{"cdc_relay_produce_errors_total", "error", "MESSAGE_TOO_LARGE"},
		{"cdc_relay_produce_errors_total", "error", "NOT_LEADER_FOR_PARTITION"},
		{"cdc_relay_kafka_transactions_total", "result", "aborted"},
	} {
		if got := value(fams, s.name, s.label, s.value); got != 0 {
			t.Errorf("before any event, %s{%s=%q} = %v, want a series at 0 (-1: none)", s.name, s.label, s.value, got)
		}
	}

	insert(t, e.conn, "a", "k1", "TooLarge", `{"pad": "`+strings.Repeat("x", 5000)+`"}`)
	e.waitFor("the record too large parked, counted from 0", 30*time.Second, func() bool {
		_, fams := p.scrape()
		return value(fams, "cdc_relay_events_parked_total", "reason", "MESSAGE_TOO_LARGE") == 1
	})
	e.setMaxMessageBytes(a, "1000000")
	e.waitFor("the parked record delivered", 60*time.Second, func() bool { return e.statusCount("DELIVERED") == 1 })

	e.pauseCmd("pause", b)
	for i := range 5 {
		insert(t, e.conn, "b", "k1", "OnB", fmt.Sprintf(`{"seq": %d}`, i))
	}
	e.waitFor("the paused topic's events held", 30*time.Second, func() bool { return e.statusCount("PAUSED") == 5 })
	var first float64
	e.waitFor("the oldest undelivered event's age seen, with nothing in flight", 30*time.Second, func() bool {
		_, fams := p.scrape()
		first = value(fams, "cdc_relay_undelivered_oldest_seconds")
		return first > 0 && value(fams, "cdc_relay_replication_lag_seconds") == 0
	})
	e.waitFor("the oldest undelivered event's age growing", 30*time.Second, func() bool {
		_, fams := p.scrape()
		return value(fams, "cdc_relay_undelivered_oldest_seconds") >= first+1
	})
	e.pauseCmd("resume", b)
	e.readN(b, 5, 60*time.Second)
	e.waitFor("the oldest undelivered event's age back to 0", 30*time.Second, func() bool {
		_, fams := p.scrape()
		return value(fams, "cdc_relay_undelivered_oldest_seconds") == 0
	})
	p.stop(30 * time.Second)
}
