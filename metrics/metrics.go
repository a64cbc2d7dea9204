package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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
	// EventsUnrouted counts the events of a table that routes by tags
	// which matched no route and went nowhere, by table (schema.table).
	EventsUnrouted *prometheus.CounterVec
	// ProduceErrors counts the errors Kafka or the client returned for the
	// stream's records, by error name (sink.ErrorName), whatever became of the record
	// (produced again alone, parked, or sent again after a reconnect).
	ProduceErrors *prometheus.CounterVec
	// CommitToAck is, for each event the stream delivered, the time from its
	// transaction's commit in PostgreSQL to Kafka's acknowledgement (in
	// exactly-once delivery, to the commit of its Kafka transaction: when
	// read_committed consumers can see it).
	CommitToAck prometheus.Histogram
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
}

// CommitToAckBuckets are CommitToAck's buckets, in seconds: 1 ms to 60 s,
// finer from 100 to 250 ms, where exactly-once delivery's latency sits.
var CommitToAckBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .15, .2, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New returns the relay's metrics on a new registry, with Go's and the
// process's collectors, cdc_relay_build_info for version, and, if snapshot
// is not nil, the live state it returns at each scrape.
func New(version string, snapshot func() Snapshot) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		EventsParked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdc_relay_events_parked_total",
			Help: "Events the stream recorded in the status table instead of delivering them, by reason: the Kafka error, or invalid_row for a row that cannot become a record.",
		}, []string{"reason"}),
		EventsDead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdc_relay_events_dead_total",
			Help: "Events marked DEAD: rows that cannot become a record, and parked events whose attempts ran out.",
		}),
		EventsUnrouted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdc_relay_events_unrouted_total",
			Help: "Events of a table that routes by tags which matched no route and were sent nowhere, by table.",
		}, []string{"table"}),
		ProduceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdc_relay_produce_errors_total",
			Help: "Errors Kafka or the client returned for the stream's records, by error.",
		}, []string{"error"}),
		CommitToAck: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cdc_relay_commit_to_ack_seconds",
			Help:    "Time from an event's commit in PostgreSQL to Kafka's acknowledgement (exactly-once: to its Kafka transaction's commit), for each event the stream delivered.",
			Buckets: CommitToAckBuckets,
		}),
		KafkaTransactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdc_relay_kafka_transactions_total",
			Help: "Kafka transactions of exactly-once delivery, by result: committed, or aborted (their PostgreSQL transactions are produced again).",
		}, []string{"result"}),
		PollerCycles: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdc_relay_poller_cycles_total",
			Help: "Claims of due parked events by the poller.",
		}),
		PollerCycleDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cdc_relay_poller_cycle_duration_seconds",
			Help:    "Time the poller took to claim a batch of parked events, produce them and record the outcomes.",
			Buckets: prometheus.ExponentialBuckets(.001, 4, 9), // 1 ms to 65 s
		}),
		PollerRowsClaimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdc_relay_poller_rows_claimed_total",
			Help: "Parked events the poller claimed to try again.",
		}),
		PollerDelivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdc_relay_poller_events_delivered_total",
			Help: "Parked events the poller delivered to Kafka.",
		}),
		PollerFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdc_relay_poller_attempts_failed_total",
			Help: "Attempts of the poller that failed: the event is tried again later, or marked DEAD when its attempts run out.",
		}),
		RetentionDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdc_relay_retention_rows_deleted_total",
			Help: "Rows retention deleted, by table: outbox, or status (DELIVERED and DEAD rows).",
		}, []string{"table"}),
	}
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "cdc_relay_build_info",
			Help:        "Always 1; the version label is the relay's.",
			ConstLabels: prometheus.Labels{"version": version},
		}, func() float64 { return 1 }),
		m.EventsParked, m.EventsDead, m.EventsUnrouted, m.ProduceErrors, m.CommitToAck, m.KafkaTransactions,
		m.PollerCycles, m.PollerCycleDuration, m.PollerRowsClaimed, m.PollerDelivered, m.PollerFailed,
		m.RetentionDeleted,
	)
	for _, t := range []string{"outbox", "status"} {
		m.RetentionDeleted.WithLabelValues(t) // reported from the start, at 0
	}
	if snapshot != nil {
		m.Registry.MustRegister(snapshotCollector{snapshot})
	}
	return m
}
