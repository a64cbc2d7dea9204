package metrics

import (
	"github.com/jackc/pglogrepl"
	"github.com/prometheus/client_golang/prometheus"
)

// Snapshot is the relay's live state, read once per scrape.
type Snapshot struct {
	// EventsRead counts the outbox inserts read from the slot;
	// EventsProduced those Kafka acknowledged. Both only go up over the
	// relay's life.
	EventsRead, EventsProduced uint64
	// InFlightEvents and InFlightBytes are what was read and is not yet
	// delivered or parked.
	InFlightEvents, InFlightBytes int64
	// LagBytes is the server's WAL end less the slot's confirmed position,
	// as last read; -1 when not known.
	LagBytes int64
	// LagSeconds is the time since the commit of the oldest transaction
	// read whose events are not all delivered; 0 when nothing is in flight.
	LagSeconds float64
	// OldestUndeliveredSeconds is the age of the oldest event the relay
	// still owes Kafka, in flight or held (FAILED, WAITING, PAUSED).
	OldestUndeliveredSeconds float64
	// ConfirmedLSN is the position last confirmed to PostgreSQL.
	ConfirmedLSN pglogrepl.LSN
	// Slot is the relay's replication slot (the leader gauge's label).
	Slot string
	// Leader: this relay holds the slot's lock. Paused: reading is paused.
	// Ready: see the relay's readiness.
	Leader, Paused, Ready bool
	// SlotWALRetained is the WAL the slot keeps on the server, in bytes, as
	// last checked; -1 when not known.
	SlotWALRetained int64
	// Failed and Dead are the status table's FAILED and DEAD rows, as last
	// counted; -1 when not known.
	Failed, Dead int64
	// Held are the topics with held events in the status table, as last
	// read (at most the 100 with the most): one series per topic and
	// state, and a topic that has none held any more has no series.
	Held []HeldTopic
	// EventsBehind is the events in flight plus the held events the relay
	// delivers itself (FAILED, WAITING, PAUSED); -1 when not known.
	EventsBehind int64
	// WriteBack is set when a table writes outcomes back to its rows:
	// WriteBackRows counts the rows updated, WriteBackErrors the
	// statements that failed (and are tried again), WriteBackRefused the
	// rows that refused their outcome (a trigger, a constraint) and were
	// given up; WriteBackNotVisible the rows not visible yet when their
	// outcome was first written (their transaction committed, not yet
	// visible to other sessions), each written again; WriteBackPending
	// are the outcomes waiting now.
	WriteBack                                        bool
	WriteBackRows, WriteBackErrors, WriteBackRefused int64
	WriteBackNotVisible, WriteBackPending            int64
	// Backfills are the backfills running now (`cdc-relay backfill`, a
	// process of its own), as last read: one series per table, none while
	// none runs.
	Backfills []Backfill
}

// Backfill is a running backfill of a table: the rows it published.
type Backfill struct {
	Table string
	Rows  int64
}

// HeldTopic is what the status table holds of one topic: its rows in
// each held state, and the age of the oldest.
type HeldTopic struct {
	Topic                         string
	Failed, Dead, Waiting, Paused int64
	OldestSeconds                 float64
}

// snapshotCollector reports a Snapshot as gauges and counters.
type snapshotCollector struct{ snapshot func() Snapshot }

var (
	descRead         = desc("cdc_relay_events_read_total", "Outbox inserts read from the replication slot.")
	descProduced     = desc("cdc_relay_events_produced_total", "Events of the stream that Kafka acknowledged.")
	descInFlight     = desc("cdc_relay_in_flight_events", "Events read and not yet delivered or parked.")
	descInFlightB    = desc("cdc_relay_in_flight_bytes", "Bytes of the events read and not yet delivered or parked.")
	descLagBytes     = desc("cdc_relay_replication_lag_bytes", "WAL written after the slot's confirmed position, as last read (every 5 s): all the server's WAL, not only the outbox's (other tables' changes, other databases' on the server too).")
	descLagSeconds   = desc("cdc_relay_replication_lag_seconds", "Time since the commit of the oldest transaction read whose events are not all delivered; 0 when nothing is in flight.")
	descOldest       = desc("cdc_relay_undelivered_oldest_seconds", "Age of the oldest event the relay still owes Kafka: in flight (since its commit), or held in the status table as FAILED, WAITING or PAUSED (since it was parked or adopted, as last read); 0 when none. Events not read yet count only in cdc_relay_replication_lag_bytes.")
	descConfirmed    = desc("cdc_relay_confirmed_lsn_bytes", "The WAL position last confirmed to PostgreSQL: its byte offset in the WAL (pg_wal_lsn_diff(lsn, '0/0')).")
	descConfirmedOld = desc("cdc_relay_confirmed_lsn", "Deprecated, removed in the next minor release: cdc_relay_confirmed_lsn_bytes, the same value.")
	descLeader       = prometheus.NewDesc("cdc_relay_leader", "1 while this relay holds the slot's lock (it leads the slot), else 0; slot names the slot, so that relays of two slots scraped under one job are told apart.", []string{"slot"}, nil)
	descPaused       = desc("cdc_relay_paused", "1 while reading the slot is paused (POST /pause), else 0.")
	descReady        = desc("cdc_relay_ready", "1 while the relay is ready (as /readyz), else 0.")
	descWALRetained  = desc("cdc_relay_slot_wal_retained_bytes", "WAL the replication slot keeps on the server, as last checked.")
	descWBRows       = desc("cdc_relay_writeback_rows_total", "Outbox rows whose status column the write-back set (delivered or failed).")
	descWBErrors     = desc("cdc_relay_writeback_errors_total", "Write-back statements that failed; each is tried again.")
	descWBRefused    = desc("cdc_relay_writeback_refused_rows_total", "Outbox rows that refused their outcome (a trigger or constraint of the table): each is logged with its id and keeps its old status; the event is delivered as usual.")
	descWBPending    = desc("cdc_relay_writeback_pending", "Outcomes waiting to be written back.")
	descWBNotVisible = desc("cdc_relay_writeback_not_visible_total", "Outbox rows not yet visible when write-back first wrote their outcome (their transaction's commit was in the WAL, so its events were delivered, but not yet visible to other sessions: a moment, or as long as synchronous replication waits for a standby); each is written again at the next flush.")
	descBehind       = desc("cdc_relay_events_behind", "Events the relay still owes Kafka: in flight (read, not yet acknowledged) plus held in the status table as FAILED, WAITING or PAUSED, as last read (every 5 s). The WAL not read yet counts in cdc_relay_replication_lag_bytes only.")
	descHeld         = prometheus.NewDesc("cdc_relay_status_table_topic_events", "Events the status table holds for a topic, by state: failed (retried by the poller), dead (given up: an operator retries, skips or purges it), waiting (behind an earlier held event of its key), paused (its topic is paused); as last read (every 5 s), for the 100 topics with the most.", []string{"topic", "state"}, nil)
	descHeldOld      = prometheus.NewDesc("cdc_relay_held_events", "Deprecated, removed in the next minor release: cdc_relay_status_table_topic_events, the same series.", []string{"topic", "state"}, nil)
	descHeldOldest   = prometheus.NewDesc("cdc_relay_held_oldest_seconds", "Age of the oldest event the status table holds for a topic (failed, dead, waiting or paused), as last read (every 5 s).", []string{"topic"}, nil)
	descBackfill     = prometheus.NewDesc("cdc_relay_backfill_rows_total", "Rows a running backfill (cdc-relay backfill, a process of its own) of an outbox table has published, as last read (every 5 s) from the table of backfills, which it updates every second; from 0 again for a new backfill; no series while none runs.", []string{"table"}, nil)
	descBackfillOld  = prometheus.NewDesc("cdc_relay_backfill_rows", "Deprecated, removed in the next minor release: cdc_relay_backfill_rows_total, the same value as a counter.", []string{"table"}, nil)
	descStatusRows   = prometheus.NewDesc("cdc_relay_status_table_events", "Events of the status table in a state, every topic, as last counted: failed (waiting to be tried again) or dead (given up).", []string{"state"}, nil)
	descStatusOld    = prometheus.NewDesc("cdc_relay_status_rows", "Deprecated, removed in the next minor release: cdc_relay_status_table_events, with the states in lower case (FAILED is failed, DEAD is dead).", []string{"state"}, nil)
)

func desc(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }

func (c snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRead, descProduced, descInFlight, descInFlightB, descLagBytes, descLagSeconds, descOldest,
		descConfirmed, descLeader, descPaused, descReady, descWALRetained, descStatusRows, descBehind, descHeld, descHeldOldest,
		descWBRows, descWBErrors, descWBRefused, descWBPending, descWBNotVisible, descBackfill,
		descConfirmedOld, descHeldOld, descBackfillOld, descStatusOld} {
		ch <- d
	}
}

func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.snapshot()
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	// ifKnown serves a gauge the relay may not know (-1): not at all then.
	ifKnown := func(d *prometheus.Desc, v int64, labels ...string) {
		if v >= 0 {
			gauge(d, float64(v), labels...)
		}
	}
	counter(descRead, float64(s.EventsRead))
	counter(descProduced, float64(s.EventsProduced))
	gauge(descInFlight, float64(s.InFlightEvents))
	gauge(descInFlightB, float64(s.InFlightBytes))
	ifKnown(descLagBytes, s.LagBytes)
	gauge(descLagSeconds, s.LagSeconds)
	gauge(descOldest, s.OldestUndeliveredSeconds)
	gauge(descConfirmed, float64(s.ConfirmedLSN))
	gauge(descConfirmedOld, float64(s.ConfirmedLSN))
	gauge(descLeader, b2f(s.Leader), s.Slot)
	gauge(descPaused, b2f(s.Paused))
	gauge(descReady, b2f(s.Ready))
	ifKnown(descWALRetained, s.SlotWALRetained)
	ifKnown(descStatusRows, s.Failed, "failed")
	ifKnown(descStatusRows, s.Dead, "dead")
	ifKnown(descStatusOld, s.Failed, "FAILED")
	ifKnown(descStatusOld, s.Dead, "DEAD")
	ifKnown(descBehind, s.EventsBehind)
	for _, t := range s.Held {
		for _, d := range []*prometheus.Desc{descHeld, descHeldOld} {
			gauge(d, float64(t.Failed), t.Topic, "failed")
			gauge(d, float64(t.Dead), t.Topic, "dead")
			gauge(d, float64(t.Waiting), t.Topic, "waiting")
			gauge(d, float64(t.Paused), t.Topic, "paused")
		}
		gauge(descHeldOldest, t.OldestSeconds, t.Topic)
	}
	for _, b := range s.Backfills {
		ch <- prometheus.MustNewConstMetric(descBackfill, prometheus.CounterValue, float64(b.Rows), b.Table)
		gauge(descBackfillOld, float64(b.Rows), b.Table)
	}
	if s.WriteBack {
		counter(descWBRows, float64(s.WriteBackRows))
		counter(descWBErrors, float64(s.WriteBackErrors))
		counter(descWBRefused, float64(s.WriteBackRefused))
		gauge(descWBPending, float64(s.WriteBackPending))
		counter(descWBNotVisible, float64(s.WriteBackNotVisible))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
