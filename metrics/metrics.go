package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	dto "github.com/prometheus/client_model/go"

	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
)

// Metrics are the relay's metrics. Every field is safe for concurrent use.
// Names follow Prometheus conventions: the cdc_relay_ prefix, base units
// (seconds, bytes), _total for counters.
type Metrics struct {
	// Registry holds every metric below, the snapshot's, and Go's and the
	// process's own; serve it with promhttp.HandlerFor.
	Registry *prometheus.Registry

	// EventsParked counts events the stream recorded in the status table
	// instead of delivering them, by reason: the Kafka error's name (such as
	// MESSAGE_TOO_LARGE; OTHER for an error without one), or invalid_row
	// for a row that cannot become a record (parked DEAD at once).
	EventsParked *prometheus.CounterVec
	// EventsDead counts events marked DEAD: rows that cannot become a
	// record, and parked events whose attempts ran out.
	EventsDead prometheus.Counter
	// EventsHeld counts events the stream parked behind a held key
	// instead of producing them, by reason: waiting (an earlier event of
	// their topic and key is parked) or paused (their topic is paused).
	EventsHeld *prometheus.CounterVec
	// OrderViolations counts records Kafka acked while an earlier event of
	// their key was parked: a key's order broken. It should stay 0.
	OrderViolations prometheus.Counter
	// EventsUnrouted counts the events of a table that routes by tags
	// which matched no route and went nowhere, by table (schema.table).
	EventsUnrouted *prometheus.CounterVec
	// MessagesIgnored counts the transactional logical decoding messages
	// of a prefix no message source maps, which the relay read and went
	// past: events lost, by prefix, as IgnoredPrefixes labels it (any role
	// may write a message: the first MaxLabelValues prefixes by name, then
	// "other").
	MessagesIgnored *prometheus.CounterVec
	// IgnoredPrefixes is the label of MessagesIgnored's prefixes.
	IgnoredPrefixes *LabelBound
	// MessagesNonTransactional counts the non-transactional logical
	// decoding messages of a mapped prefix, which the relay went past
	// (only transactional messages are events), by prefix: bounded by the
	// configuration's message sources.
	MessagesNonTransactional *prometheus.CounterVec
	// ProduceErrors counts the errors Kafka or the client returned for the
	// stream's records, by error name (sink.ErrorName), whatever became of the record
	// (produced again alone, parked, or sent again after a reconnect).
	ProduceErrors *prometheus.CounterVec
	// CommitToAck is, for each event the stream delivered, the time from its
	// transaction's commit in PostgreSQL to Kafka's acknowledgement (in
	// exactly-once delivery, to the commit of its Kafka transaction: when
	// read_committed consumers can see it).
	CommitToAck prometheus.Histogram
	// HeldToAck is, for each event the poller delivered (parked, held,
	// paused, adopted or reset), the time from its parking (its status
	// row's creation) to Kafka's acknowledgement.
	HeldToAck prometheus.Histogram
	// KafkaTransactions counts the Kafka transactions of exactly-once
	// delivery, by result: committed, or aborted (a record refused, the
	// broker lost, the producer fenced; their PostgreSQL transactions are
	// produced again).
	KafkaTransactions *prometheus.CounterVec

	// PollerCycles counts the poller's claims of due parked events;
	// PollerCycleDuration times them, Kafka's answers included.
	PollerCycles        prometheus.Counter
	PollerCycleDuration prometheus.Histogram
	// PollerRowsClaimed counts the parked events the poller claimed;
	// PollerDelivered those it delivered, PollerFailed those whose attempt
	// failed (tried again later, or marked DEAD when attempts run out).
	PollerRowsClaimed prometheus.Counter
	PollerDelivered   prometheus.Counter
	PollerFailed      prometheus.Counter

	// RetentionDeleted counts rows retention deleted, by table: outbox or
	// status.
	RetentionDeleted *prometheus.CounterVec

	// SlotRecoveries counts the gaps in the WAL the relay read (its slot
	// missing, invalidated, or ahead of its checkpoint) that it repaired by
	// itself (--on-slot-loss recover), and SlotRecoveryRows the outbox rows
	// it published again then, by result: published, or parked (in the
	// status table).
	SlotRecoveries   prometheus.Counter
	SlotRecoveryRows *prometheus.CounterVec

	// WebhookRequests counts the requests sent to each webhook
	// publisher's receiver, by publisher and class (WebhookClasses);
	// WebhookRequestDuration times each of them, from sending it to its
	// answer (or the timeout). WebhookRetries counts the requests tried
	// again in place, WebhookParked the events a publisher's lanes called
	// back to be parked, by publisher and reason (WebhookParkReasons), and
	// WebhookFailing is 1 while a publisher's receiver is failing (its
	// lanes' outage), else 0. Fed through [Metrics.Webhook]; the label
	// publisher takes the configuration's publisher names.
	WebhookRequests        *prometheus.CounterVec
	WebhookRequestDuration *prometheus.HistogramVec
	WebhookRetries         *prometheus.CounterVec
	WebhookParked          *prometheus.CounterVec
	WebhookFailing         *prometheus.GaugeVec
}

// CommitToAckBuckets are CommitToAck's buckets, in seconds: 1 ms to 15
// minutes, finer from 100 to 250 ms, where exactly-once delivery's
// latency sits.
var CommitToAckBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .15, .2, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900}

// heldToAckBuckets are HeldToAck's buckets, in seconds: 100 ms to an hour.
var heldToAckBuckets = []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600}

// WebhookRequestBuckets are WebhookRequestDuration's buckets, in seconds:
// 5 ms to 5 minutes, a webhook's longest timeout.
var WebhookRequestBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// New returns the relay's metrics on a new registry, with Go's and the
// process's collectors, cdc_relay_build_info for build, and, if snapshot
// is not nil, the live state it returns at each scrape.
func New(build buildinfo.Info, snapshot func() Snapshot) *Metrics {
	reg := prometheus.NewRegistry()
	f := factory{promauto.With(reg)}
	m := &Metrics{
		Registry: reg,
		EventsParked: f.counterVec("cdc_relay_events_parked_total",
			"Events the stream recorded in the status table instead of delivering them, by reason: the Kafka error, invalid_row for a row that cannot become a record, "+
				"no_timestamp for one whose record lacks only its timestamp, or slow for a webhook publisher's event parked unsent because its receiver answers "+
				"more slowly than the events arrive (behind, not failing: its poller sends it).",
			"reason"),
		EventsDead: f.counter("cdc_relay_events_dead_total",
			"Events marked DEAD: rows that cannot become a record, and parked events whose attempts ran out."),
		EventsHeld: f.counterVec("cdc_relay_events_held_total",
			"Events the stream parked behind a held key instead of producing them, by reason: waiting (an earlier event of their key is parked) or paused (their topic is paused).",
			"reason"),
		OrderViolations: f.counter("cdc_relay_order_violations_total",
			"Records Kafka acked while an earlier event of their key was parked: a key's order broken. Should stay 0."),
		EventsUnrouted: f.counterVec("cdc_relay_events_unrouted_total",
			"Events of a table that routes by tags which matched no route and were sent nowhere, by table.",
			"table"),
		MessagesIgnored: f.counterVec("cdc_relay_messages_ignored_total",
			"Transactional messages of a prefix no message source maps, which the relay read and went past (their events are lost), by prefix: the first 64 prefixes by name, then other.",
			"prefix"),
		IgnoredPrefixes: NewLabelBound(MaxLabelValues),
		MessagesNonTransactional: f.counterVec("cdc_relay_messages_non_transactional_total",
			"Non-transactional messages of a mapped prefix, which the relay went past (only transactional messages are events), by prefix.",
			"prefix"),
		ProduceErrors: f.counterVec("cdc_relay_produce_errors_total",
			"Errors Kafka or the client returned for the stream's records, by error.",
			"error"),
		CommitToAck: f.histogram("cdc_relay_commit_to_ack_seconds",
			"Time from an event's commit in PostgreSQL to Kafka's acknowledgement (exactly-once: to its Kafka transaction's commit), for each event the stream delivered; the poller's deliveries are cdc_relay_held_to_ack_seconds.",
			CommitToAckBuckets),
		HeldToAck: f.histogram("cdc_relay_held_to_ack_seconds",
			"Time from an event's parking in the status table (refused, held, paused, adopted or reset) to Kafka's acknowledgement, for each event the poller delivered.",
			heldToAckBuckets),
		KafkaTransactions: f.counterVec("cdc_relay_kafka_transactions_total",
			"Kafka transactions of exactly-once delivery, by result: committed, or aborted (their PostgreSQL transactions are produced again).",
			"result"),
		PollerCycles: f.counter("cdc_relay_poller_cycles_total",
			"Claims of due parked events by the poller."),
		PollerCycleDuration: f.histogram("cdc_relay_poller_cycle_duration_seconds",
			"Time the poller took to claim a batch of parked events, produce them and record the outcomes.",
			prometheus.ExponentialBuckets(.001, 4, 9)), // 1 ms to 65 s
		PollerRowsClaimed: f.counter("cdc_relay_poller_rows_claimed_total",
			"Parked events the poller claimed to try again."),
		PollerDelivered: f.counter("cdc_relay_poller_events_delivered_total",
			"Parked events the poller delivered to Kafka."),
		PollerFailed: f.counter("cdc_relay_poller_attempts_failed_total",
			"Attempts of the poller that failed: the event is tried again later, or marked DEAD when its attempts run out."),
		RetentionDeleted: f.counterVec("cdc_relay_retention_rows_deleted_total",
			"Rows retention deleted, by table: outbox, or status (DELIVERED and DEAD rows).",
			"table"),
		SlotRecoveries: f.counter("cdc_relay_slot_recoveries_total",
			"Gaps in the WAL the relay read (its slot missing, invalidated, or ahead of its checkpoint) that it repaired by publishing the outbox rows since its checkpoint again (--on-slot-loss recover)."),
		SlotRecoveryRows: f.counterVec("cdc_relay_slot_recovery_rows_total",
			"Outbox rows published again to repair a gap in the WAL the relay read, by result: published, or parked in the status table.",
			"result"),
	}
	m.newWebhook(f)
	registerProcess(reg, build)
	for _, t := range []string{"outbox", "status"} {
		m.RetentionDeleted.WithLabelValues(t) // reported from the start, at 0
	}
	for _, r := range []string{"waiting", "paused"} {
		m.EventsHeld.WithLabelValues(r)
	}
	for _, r := range []string{"published", "parked"} {
		m.SlotRecoveryRows.WithLabelValues(r)
	}
	for _, r := range parkReasons {
		m.EventsParked.WithLabelValues(r)
	}
	for _, e := range produceErrorNames {
		m.ProduceErrors.WithLabelValues(e)
	}
	for _, r := range []string{"committed", "aborted"} {
		m.KafkaTransactions.WithLabelValues(r)
	}
	if snapshot != nil {
		reg.MustRegister(snapshotCollector{snapshot})
	}
	return m
}

// parkReasons are the reasons of EventsParked reported from the start,
// at 0, so that a first parked event raises its series from 0 (rate()
// and increase() see no rise in a series that appears at 1): the
// relay's own (invalid_row, no_timestamp, slow), the Kafka errors that
// refuse a record or its topic for good, and OTHER. An event parked for
// another Kafka error starts its own series.
var parkReasons = []string{"invalid_row", "no_timestamp", "slow", "MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_RECORD",
	"UNKNOWN_TOPIC_OR_PARTITION", "TOPIC_AUTHORIZATION_FAILED", "INVALID_TOPIC_EXCEPTION", "OTHER"}

// produceErrorNames are the errors of ProduceErrors reported from the
// start, at 0: the refusals of parkReasons, the broker's usual passing
// errors (a leader moving, too few replicas, a request timing out) and
// the client's (CLIENT_CLOSED, CANCELED, TIMEOUT, OTHER).
var produceErrorNames = []string{"MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_RECORD", "UNKNOWN_TOPIC_OR_PARTITION",
	"TOPIC_AUTHORIZATION_FAILED", "INVALID_TOPIC_EXCEPTION", "NOT_LEADER_FOR_PARTITION", "NOT_ENOUGH_REPLICAS",
	"NOT_ENOUGH_REPLICAS_AFTER_APPEND", "REQUEST_TIMED_OUT", "CLIENT_CLOSED", "CANCELED", "TIMEOUT", "OTHER"}

// Sources reports the labels a configuration makes known from the start,
// at 0: EventsUnrouted's tables (those that route by tags, as
// schema.table) and MessagesNonTransactional's prefixes (the mapped
// ones), so that a first unrouted event or non-transactional message
// raises its series from 0.
func (m *Metrics) Sources(routedTables, messagePrefixes []string) {
	for _, t := range routedTables {
		m.EventsUnrouted.WithLabelValues(t)
	}
	for _, p := range messagePrefixes {
		m.MessagesNonTransactional.WithLabelValues(p)
	}
}

// registerProcess registers on reg the Go runtime's and the process's
// metrics, and cdc_relay_build_info with build's version, commit and Go
// version as labels.
func registerProcess(reg *prometheus.Registry, build buildinfo.Info) {
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "cdc_relay_build_info",
			Help:        "Always 1; the labels say the relay's build: its version, commit and Go version.",
			ConstLabels: prometheus.Labels{"version": build.Version, "commit": build.Commit, "go_version": build.GoVersion},
		}, func() float64 { return 1 }),
	)
}

// factory makes each metric of [Metrics] and registers it, so that none
// can be left off the registry.
type factory struct{ promauto.Factory }

// counter is a counter with no labels.
func (f factory) counter(name, help string) prometheus.Counter {
	return f.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// counterVec is a counter with labels.
func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// gaugeVec is a gauge with labels.
func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return f.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// histogramVec is a histogram with labels.
func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return f.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// histogram is a histogram with no labels.
func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	return f.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}

// CommitToAckTotals are CommitToAck's sum of seconds and count of events
// since the relay started: what the relay's in-memory history reads.
func (m *Metrics) CommitToAckTotals() (seconds float64, count uint64) {
	var d dto.Metric
	if err := m.CommitToAck.Write(&d); err != nil || d.Histogram == nil {
		return 0, 0
	}
	return d.Histogram.GetSampleSum(), d.Histogram.GetSampleCount()
}
