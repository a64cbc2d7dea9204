package metrics

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
	"github.com/cdc-relay/cdc-relay/webhook"
)

// gather returns the registry's families by name; a gather error (such as
// a metric registered twice, or a value that does not fit its
// description) fails the test.
func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	return byName
}

// labels returns a metric's labels as name=value pairs, sorted.
// testBuild is the build the tests' metrics say they are.
var testBuild = buildinfo.Info{Version: "v1.2.3", Commit: "2b7a81f3da8a2fd289da1f12ae7bad2ad6f24b76", GoVersion: "go1.26.8", Platform: "linux/amd64"}

func labels(m *dto.Metric) string {
	var pairs []string
	for _, l := range m.GetLabel() {
		pairs = append(pairs, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// value returns the value of a family's metric with the given labels
// (name=value pairs, sorted, comma-separated), and whether it is there.
func value(f *dto.MetricFamily, want string) (float64, bool) {
	for _, m := range f.GetMetric() {
		if labels(m) != want {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// fieldCollectors returns every metric field of Metrics (each field that
// is a collector, but the Registry), by field name.
func fieldCollectors(m *Metrics) map[string]prometheus.Collector {
	out := map[string]prometheus.Collector{}
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		if v.Field(i).Interface() == any(m.Registry) {
			continue
		}
		if c, ok := v.Field(i).Interface().(prometheus.Collector); ok {
			out[v.Type().Field(i).Name] = c
		}
	}
	return out
}

// describe returns the names a collector describes.
func describe(c prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc, 32)
	go func() { c.Describe(ch); close(ch) }()
	var names []string
	for d := range ch {
		// Desc has no accessor for its name; its String form holds it.
		s := d.String()
		_, rest, _ := strings.Cut(s, `fqName: "`)
		name, _, _ := strings.Cut(rest, `"`)
		names = append(names, name)
	}
	return names
}

func TestNewRegistersEachMetricOnce(t *testing.T) {
	m := New(testBuild, func() Snapshot { return Snapshot{WriteBack: true} })
	gather(t, m)
	fields := fieldCollectors(m)
	if len(fields) == 0 {
		t.Fatal("no collector field found in Metrics")
	}
	for field, c := range fields {
		err := m.Registry.Register(c)
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			t.Errorf("%s: registering it again gave %v, want AlreadyRegisteredError (New must register it)", field, err)
		}
	}
	// Two relays' metrics live side by side: nothing is package-level.
	gather(t, New(buildinfo.Info{Version: "other"}, nil))
}

func TestNamesFollowTheConventions(t *testing.T) {
	m := New(testBuild, func() Snapshot { return Snapshot{WriteBack: true} })
	names := map[string]bool{}
	for _, c := range fieldCollectors(m) {
		for _, n := range describe(c) {
			names[n] = true
		}
	}
	for _, n := range describe(snapshotCollector{}) {
		names[n] = true
	}
	for n, f := range gather(t, m) {
		if strings.HasPrefix(n, "go_") || strings.HasPrefix(n, "process_") {
			continue // Go's and the process's collectors
		}
		names[n] = true
		if f.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(n, "_total") {
			t.Errorf("counter %s: want the _total suffix", n)
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no help", n)
		}
	}
	for n := range names {
		if !strings.HasPrefix(n, "cdc_relay_") {
			t.Errorf("%s: want the cdc_relay_ prefix", n)
		}
	}
}

// TestSnapshotIsWhatIsServed: each value of the snapshot is what its
// metric reads, and a value the relay does not know (-1, or no write-back)
// is not served at all.
func TestSnapshotIsWhatIsServed(t *testing.T) {
	known := Snapshot{
		EventsRead: 10, EventsProduced: 9, InFlightEvents: 3, InFlightBytes: 300,
		LagBytes: 4096, LagSeconds: 1.5, OldestUndeliveredSeconds: 42, ConfirmedLSN: 0x16B3748,
		Slot: "orders_relay", Leader: true, Paused: true, Ready: true,
		SlotWALRetained: 8192, Failed: 2, Dead: 1,
		WriteBack: true, WriteBackRows: 7, WriteBackErrors: 1, WriteBackRefused: 5, WriteBackPending: 4, WriteBackNotVisible: 3,
		EventsBehind: 12, Held: []HeldTopic{{Topic: "orders", Failed: 2, Dead: 1, Waiting: 6, Paused: 1, OldestSeconds: 30.5}},
		Backfills: []Backfill{{Table: "public.outbox", Rows: 1200}},
	}
	unknown := Snapshot{LagBytes: -1, SlotWALRetained: -1, Failed: -1, Dead: -1, EventsBehind: -1}
	tests := []struct {
		snap   Snapshot
		name   string
		labels string
		want   float64
		absent bool
	}{
		{snap: known, name: "cdc_relay_events_read_total", want: 10},
		{snap: known, name: "cdc_relay_events_produced_total", want: 9},
		{snap: known, name: "cdc_relay_in_flight_events", want: 3},
		{snap: known, name: "cdc_relay_in_flight_bytes", want: 300},
		{snap: known, name: "cdc_relay_replication_lag_bytes", want: 4096},
		{snap: known, name: "cdc_relay_replication_lag_seconds", want: 1.5},
		{snap: known, name: "cdc_relay_confirmed_lsn_bytes", want: 0x16B3748},
		{snap: known, name: "cdc_relay_confirmed_lsn", want: 0x16B3748}, // deprecated
		{snap: known, name: "cdc_relay_leader", labels: "slot=orders_relay", want: 1},
		{snap: known, name: "cdc_relay_undelivered_oldest_seconds", want: 42},
		{snap: known, name: "cdc_relay_paused", want: 1},
		{snap: known, name: "cdc_relay_ready", want: 1},
		{snap: known, name: "cdc_relay_slot_wal_retained_bytes", want: 8192},
		{snap: known, name: "cdc_relay_status_table_events", labels: "state=failed", want: 2},
		{snap: known, name: "cdc_relay_status_table_events", labels: "state=dead", want: 1},
		{snap: known, name: "cdc_relay_status_rows", labels: "state=FAILED", want: 2}, // deprecated
		{snap: known, name: "cdc_relay_status_rows", labels: "state=DEAD", want: 1},
		{snap: known, name: "cdc_relay_writeback_rows_total", want: 7},
		{snap: known, name: "cdc_relay_writeback_errors_total", want: 1},
		{snap: known, name: "cdc_relay_writeback_refused_rows_total", want: 5},
		{snap: known, name: "cdc_relay_writeback_pending", want: 4},
		{snap: known, name: "cdc_relay_writeback_not_visible_total", want: 3},
		{snap: known, name: "cdc_relay_events_behind", want: 12},
		{snap: known, name: "cdc_relay_status_table_topic_events", labels: "state=failed,topic=orders", want: 2},
		{snap: known, name: "cdc_relay_status_table_topic_events", labels: "state=dead,topic=orders", want: 1},
		{snap: known, name: "cdc_relay_status_table_topic_events", labels: "state=waiting,topic=orders", want: 6},
		{snap: known, name: "cdc_relay_status_table_topic_events", labels: "state=paused,topic=orders", want: 1},
		{snap: known, name: "cdc_relay_held_events", labels: "state=failed,topic=orders", want: 2}, // deprecated
		{snap: known, name: "cdc_relay_held_events", labels: "state=dead,topic=orders", want: 1},
		{snap: known, name: "cdc_relay_held_events", labels: "state=waiting,topic=orders", want: 6},
		{snap: known, name: "cdc_relay_held_events", labels: "state=paused,topic=orders", want: 1},
		{snap: known, name: "cdc_relay_held_oldest_seconds", labels: "topic=orders", want: 30.5},

		{snap: unknown, name: "cdc_relay_leader", labels: "slot=", want: 0},
		{snap: unknown, name: "cdc_relay_undelivered_oldest_seconds", want: 0},
		{snap: unknown, name: "cdc_relay_paused", want: 0},
		{snap: unknown, name: "cdc_relay_ready", want: 0},
		{snap: unknown, name: "cdc_relay_replication_lag_seconds", want: 0},
		{snap: unknown, name: "cdc_relay_replication_lag_bytes", absent: true},
		{snap: unknown, name: "cdc_relay_slot_wal_retained_bytes", absent: true},
		{snap: unknown, name: "cdc_relay_status_table_events", absent: true},
		{snap: unknown, name: "cdc_relay_status_rows", absent: true},
		{snap: unknown, name: "cdc_relay_writeback_rows_total", absent: true},
		{snap: unknown, name: "cdc_relay_writeback_errors_total", absent: true},
		{snap: unknown, name: "cdc_relay_writeback_refused_rows_total", absent: true},
		{snap: unknown, name: "cdc_relay_writeback_pending", absent: true},
		{snap: unknown, name: "cdc_relay_writeback_not_visible_total", absent: true},
		{snap: unknown, name: "cdc_relay_events_behind", absent: true},
		{snap: unknown, name: "cdc_relay_status_table_topic_events", absent: true},
		{snap: unknown, name: "cdc_relay_held_events", absent: true},
		{snap: unknown, name: "cdc_relay_held_oldest_seconds", absent: true},
		{snap: known, name: "cdc_relay_backfill_rows_total", labels: "table=public.outbox", want: 1200},
		{snap: unknown, name: "cdc_relay_backfill_rows_total", absent: true},
		{snap: known, name: "cdc_relay_backfill_rows", labels: "table=public.outbox", want: 1200}, // deprecated
		{snap: unknown, name: "cdc_relay_backfill_rows", absent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name+"{"+tt.labels+"}", func(t *testing.T) {
			f := gather(t, New(testBuild, func() Snapshot { return tt.snap }))[tt.name]
			got, ok := value(f, tt.labels)
			switch {
			case tt.absent && f != nil:
				t.Fatalf("served %v, want it absent while unknown", f.GetMetric())
			case tt.absent:
			case !ok:
				t.Fatalf("not served with labels {%s}", tt.labels)
			case got != tt.want:
				t.Fatalf("= %v, want %v", got, tt.want)
			}
		})
	}
}

// TestHeldTopicLeaves: a topic that has no held events any more, at the
// next reading, has no series left; the others keep theirs.
func TestHeldTopicLeaves(t *testing.T) {
	held := []HeldTopic{{Topic: "orders", Failed: 1, OldestSeconds: 5}, {Topic: "payments", Paused: 2, OldestSeconds: 9}}
	m := New(testBuild, func() Snapshot { return Snapshot{Held: held} })
	series := func() []string {
		var s []string
		for _, name := range []string{"cdc_relay_status_table_topic_events", "cdc_relay_held_events", "cdc_relay_held_oldest_seconds"} {
			for _, m := range gather(t, m)[name].GetMetric() {
				s = append(s, name+"{"+labels(m)+"}")
			}
		}
		sort.Strings(s)
		return s
	}
	if got := series(); len(got) != 18 {
		t.Fatalf("two topics: %d series, want 18 (four states twice, the new name and the deprecated one, and the age each): %v", len(got), got)
	}
	held = held[1:]
	for _, s := range series() {
		if strings.Contains(s, "orders") {
			t.Errorf("%s served after its topic left", s)
		}
	}
	if got := series(); len(got) != 9 {
		t.Errorf("one topic: %d series, want 9: %v", len(got), got)
	}
}

// TestLabels: the label names the dashboard and the alerts (docker/) select
// on, and the series served from the start.
func TestLabels(t *testing.T) {
	m := New(testBuild, func() Snapshot { return Snapshot{Failed: 0, Dead: 0} })
	m.EventsParked.WithLabelValues("MESSAGE_TOO_LARGE").Inc()
	m.ProduceErrors.WithLabelValues("NOT_LEADER_FOR_PARTITION").Inc()
	m.EventsUnrouted.WithLabelValues("public.outbox").Inc()
	m.MessagesIgnored.WithLabelValues("renamed").Inc()
	m.MessagesNonTransactional.WithLabelValues("outbox").Inc()
	m.KafkaTransactions.WithLabelValues("committed").Inc()
	m.CommitToAck.Observe(.003)
	m.EventsDead.Inc()
	m.RetentionDeleted.WithLabelValues("outbox").Add(5)
	m.SlotRecoveries.Inc()
	m.SlotRecoveryRows.WithLabelValues("published").Add(7)
	m.EventsHeld.WithLabelValues("waiting").Add(3)
	families := gather(t, m)
	tests := []struct {
		name   string
		labels string
		want   float64
	}{
		{"cdc_relay_build_info", "commit=2b7a81f3da8a2fd289da1f12ae7bad2ad6f24b76,go_version=go1.26.8,version=v1.2.3", 1},
		{"cdc_relay_events_parked_total", "reason=MESSAGE_TOO_LARGE", 1},
		{"cdc_relay_produce_errors_total", "error=NOT_LEADER_FOR_PARTITION", 1},
		{"cdc_relay_events_unrouted_total", "table=public.outbox", 1},
		{"cdc_relay_messages_ignored_total", "prefix=renamed", 1},
		{"cdc_relay_messages_non_transactional_total", "prefix=outbox", 1},
		{"cdc_relay_kafka_transactions_total", "result=committed", 1},
		{"cdc_relay_commit_to_ack_seconds", "", 1},
		{"cdc_relay_events_dead_total", "", 1},
		{"cdc_relay_retention_rows_deleted_total", "table=outbox", 5},
		{"cdc_relay_retention_rows_deleted_total", "table=status", 0}, // from the start
		{"cdc_relay_status_table_events", "state=failed", 0},
		{"cdc_relay_status_table_events", "state=dead", 0},
		{"cdc_relay_status_rows", "state=FAILED", 0},
		{"cdc_relay_status_rows", "state=DEAD", 0},
		{"cdc_relay_poller_cycles_total", "", 0},
		{"cdc_relay_poller_rows_claimed_total", "", 0},
		{"cdc_relay_poller_events_delivered_total", "", 0},
		{"cdc_relay_poller_attempts_failed_total", "", 0},
		{"cdc_relay_poller_cycle_duration_seconds", "", 0},
		{"cdc_relay_slot_recoveries_total", "", 1},
		{"cdc_relay_slot_recovery_rows_total", "result=published", 7},
		{"cdc_relay_slot_recovery_rows_total", "result=parked", 0}, // from the start
		{"cdc_relay_events_held_total", "reason=waiting", 3},
		{"cdc_relay_events_held_total", "reason=paused", 0}, // from the start
		{"cdc_relay_order_violations_total", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name+"{"+tt.labels+"}", func(t *testing.T) {
			f, ok := families[tt.name]
			if !ok {
				t.Fatal("not served")
			}
			got, ok := value(f, tt.labels)
			if !ok {
				var have []string
				for _, m := range f.GetMetric() {
					have = append(have, "{"+labels(m)+"}")
				}
				t.Fatalf("no series {%s}; served: %v", tt.labels, have)
			}
			if got != tt.want {
				t.Fatalf("= %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCommitToAckBuckets: the buckets rise, and the histogram uses them.
func TestCommitToAckBuckets(t *testing.T) {
	if !sort.Float64sAreSorted(CommitToAckBuckets) {
		t.Fatalf("buckets not rising: %v", CommitToAckBuckets)
	}
	m := New(testBuild, nil)
	m.CommitToAck.Observe(.12)
	h := gather(t, m)["cdc_relay_commit_to_ack_seconds"].GetMetric()[0].GetHistogram()
	var bounds []float64
	for _, b := range h.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	if !reflect.DeepEqual(bounds, CommitToAckBuckets) {
		t.Fatalf("bucket bounds %v, want %v", bounds, CommitToAckBuckets)
	}
}

// TestLabelBound: the first MaxLabelValues distinct values are their own
// label, for good; every later one is other.
func TestLabelBound(t *testing.T) {
	b := NewLabelBound(MaxLabelValues)
	for i := range 1000 {
		v := fmt.Sprint("p", i)
		want := v
		if i >= MaxLabelValues {
			want = OtherLabel
		}
		if got := b.Label(v); got != want {
			t.Fatalf("Label(%q) = %q, want %q", v, got, want)
		}
	}
	if got := b.Label("p0"); got != "p0" {
		t.Errorf("Label(p0) later = %q, want p0", got)
	}
}

// TestWebhook: a webhook publisher's series are served from Webhook on,
// at 0, for every known class and reason; each call moves its own series
// of its publisher, and no other publisher's.
func TestWebhook(t *testing.T) {
	m := New(testBuild, nil)
	partner, other := m.Webhook("partner"), m.Webhook("analytics")
	at0 := gather(t, m)
	for _, tt := range []struct{ name, labels string }{
		{"cdc_relay_webhook_requests_total", "class=2xx,publisher=partner"},
		{"cdc_relay_webhook_requests_total", "class=timeout,publisher=analytics"},
		{"cdc_relay_webhook_requests_total", "class=other,publisher=partner"},
		{"cdc_relay_webhook_request_duration_seconds", "publisher=partner"},
		{"cdc_relay_webhook_retries_total", "publisher=partner"},
		{"cdc_relay_webhook_events_parked_total", "publisher=partner,reason=not_sent"},
		{"cdc_relay_webhook_events_parked_total", "publisher=analytics,reason=refused"},
		{"cdc_relay_webhook_receiver_failing", "publisher=partner"},
	} {
		if v, ok := value(at0[tt.name], tt.labels); !ok || v != 0 {
			t.Errorf("%s{%s} = %v (served %v), want 0 from the start", tt.name, tt.labels, v, ok)
		}
	}
	partner.Request("5xx", 30*time.Millisecond)
	partner.Request("2xx", 2*time.Second)
	partner.Retried()
	partner.Parked("failed", 3)
	partner.Failing(true)
	other.Request("teapot", time.Millisecond) // a class not known: a series of its own
	families := gather(t, m)
	for _, tt := range []struct {
		name, labels string
		want         float64
	}{
		{"cdc_relay_webhook_requests_total", "class=5xx,publisher=partner", 1},
		{"cdc_relay_webhook_requests_total", "class=2xx,publisher=partner", 1},
		{"cdc_relay_webhook_requests_total", "class=2xx,publisher=analytics", 0},
		{"cdc_relay_webhook_requests_total", "class=teapot,publisher=analytics", 1},
		{"cdc_relay_webhook_request_duration_seconds", "publisher=partner", 2}, // its count
		{"cdc_relay_webhook_request_duration_seconds", "publisher=analytics", 1},
		{"cdc_relay_webhook_retries_total", "publisher=partner", 1},
		{"cdc_relay_webhook_retries_total", "publisher=analytics", 0},
		{"cdc_relay_webhook_events_parked_total", "publisher=partner,reason=failed", 3},
		{"cdc_relay_webhook_events_parked_total", "publisher=partner,reason=refused", 0},
		{"cdc_relay_webhook_receiver_failing", "publisher=partner", 1},
		{"cdc_relay_webhook_receiver_failing", "publisher=analytics", 0},
	} {
		if got, ok := value(families[tt.name], tt.labels); !ok || got != tt.want {
			t.Errorf("%s{%s} = %v (served %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	h := families["cdc_relay_webhook_request_duration_seconds"].GetMetric()
	for _, s := range h {
		if labels(s) == "publisher=partner" && math.Abs(s.GetHistogram().GetSampleSum()-2.03) > 1e-9 {
			t.Errorf("partner's latency sum %v, want 2.03 s", s.GetHistogram().GetSampleSum())
		}
	}
	partner.Failing(false)
	if got, _ := value(gather(t, m)["cdc_relay_webhook_receiver_failing"], "publisher=partner"); got != 0 {
		t.Errorf("failing after its end = %v, want 0", got)
	}
	if again := m.Webhook("partner"); again == nil {
		t.Fatal("Webhook again: nil")
	}
	if got, _ := value(gather(t, m)["cdc_relay_webhook_requests_total"], "class=5xx,publisher=partner"); got != 1 {
		t.Errorf("Webhook again reset a series: 5xx = %v, want 1", got)
	}
}

// TestWebhookRequestBuckets: the buckets rise, from a few milliseconds to
// the webhook's longest timeout.
func TestWebhookRequestBuckets(t *testing.T) {
	b := WebhookRequestBuckets
	if !sort.Float64sAreSorted(b) || b[0] > .01 || b[len(b)-1] != webhook.MaxTimeout.Seconds() {
		t.Fatalf("buckets %v: want them rising, from 10 ms or less to %s", b, webhook.MaxTimeout)
	}
}
