package lanes

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/webhook"
)

// scripted is an HTTP receiver that answers the requests with the
// statuses of its script in turn (0: no answer within the sender's
// timeout), then with next.
type scripted struct {
	mu     sync.Mutex
	script []int
	next   int
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	status := s.next
	if len(s.script) > 0 {
		status, s.script = s.script[0], s.script[1:]
	}
	s.mu.Unlock()
	io.Copy(io.Discard, r.Body) // so that the server sees the client go
	if status == 0 {
		select { // past the sender's timeout
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
		return
	}
	w.WriteHeader(status)
}

// answerWith makes the receiver answer next from now on.
func (s *scripted) answerWith(next int) {
	s.mu.Lock()
	s.next = next
	s.mu.Unlock()
}

// meteredLanes returns lanes of publisher "partner" over a webhook sender
// to rc (a timeout of 200 ms), observed by the partner's metrics of m.
func meteredLanes(t *testing.T, rc http.Handler, m *metrics.Metrics, c Config) *Producer {
	t.Helper()
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := webhook.Config{URL: srv.URL, SecretFile: secretFile, Timeout: 200 * time.Millisecond}
	secret, err := cfg.ReadSecret()
	if err != nil {
		t.Fatal(err)
	}
	ws, err := webhook.New(cfg, secret, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ws.Close)
	c.Observer = m.Webhook("partner")
	c.Log = slog.New(slog.DiscardHandler)
	p := New(Webhook(ws), quick(c))
	t.Cleanup(p.Close)
	return p
}

// event is a record of key k, with its id header; its value is id too.
func event(k, id string) *kgo.Record {
	return &kgo.Record{Topic: "wallet", Key: []byte(k), Value: []byte(id), Headers: []kgo.RecordHeader{{Key: "id", Value: []byte(id)}}}
}

// partnerMetrics are the partner's series of m, by a short name: each
// request class's count ("5xx"), the latency histogram's count
// ("latency") and the sum of its seconds ("latency seconds"), the retries ("retries"), each park reason's count
// ("parked failed") and the failing gauge ("failing"); the series at 0
// are left out.
func partnerMetrics(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["publisher"] != "partner" {
				continue
			}
			name, v := "", 0.0
			switch f.GetName() {
			case "cdc_relay_webhook_requests_total":
				name, v = labels["class"], s.GetCounter().GetValue()
			case "cdc_relay_webhook_request_duration_seconds":
				name, v = "latency", float64(s.GetHistogram().GetSampleCount())
				if sum := s.GetHistogram().GetSampleSum(); sum != 0 {
					got["latency seconds"] = sum
				}
			case "cdc_relay_webhook_retries_total":
				name, v = "retries", s.GetCounter().GetValue()
			case "cdc_relay_webhook_events_parked_total":
				name, v = "parked "+labels["reason"], s.GetCounter().GetValue()
			case "cdc_relay_webhook_receiver_failing":
				name, v = "failing", s.GetGauge().GetValue()
			}
			if v != 0 {
				got[name] = v
			}
		}
	}
	return got
}

// TestLanesMetrics: through lanes over a real HTTP receiver, each request
// counts once in its class and once in the latency histogram, each try
// again in place is a retry, each request's time is observed (a timeout's
// at least the sender's 200 ms), and each record the stream handed that
// is called back to be parked counts by its reason.
func TestLanesMetrics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script []int // the receiver's answers; 0: past the timeout
		keys   int   // records of keys k0, k1, … (one each)
		want   map[string]float64
		// slowest is the least time the requests took in all: the
		// timeout's 200 ms, or more than 0.
		slowest time.Duration
	}{
		{"a 503 then a 204", []int{503, 204}, 1, map[string]float64{"5xx": 1, "2xx": 1, "latency": 2, "retries": 1}, 0},
		{"a 429 then a 200", []int{429, 200}, 1, map[string]float64{"4xx": 1, "2xx": 1, "latency": 2, "retries": 1}, 0},
		{"a timeout then a 202", []int{0, 202}, 1, map[string]float64{"timeout": 1, "2xx": 1, "latency": 2, "retries": 1}, 150 * time.Millisecond}, // the timeout counts from connecting, the latency from sending
		{"two 200s", []int{200, 200}, 2, map[string]float64{"2xx": 2, "latency": 2}, 0},
		{"a 400: refused", []int{400}, 1, map[string]float64{"4xx": 1, "latency": 1, "parked refused": 1}, 0},
		{"a 307: refused", []int{307}, 1, map[string]float64{"3xx": 1, "latency": 1, "parked refused": 1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New(buildinfo.Info{}, nil)
			p := meteredLanes(t, &scripted{script: tc.script, next: 200}, m, Config{Lanes: 1, RetryFor: time.Minute})
			o := newOutcomes(tc.keys)
			for k := range tc.keys {
				p.Produce(context.Background(), event(fmt.Sprint("k", k), fmt.Sprint("e", k)), o.done)
			}
			o.wait(t)
			got := partnerMetrics(t, m)
			took := time.Duration(got["latency seconds"] * float64(time.Second))
			if took <= 0 || took < tc.slowest {
				t.Fatalf("the requests took %s in all, by the histogram; want more than 0 and at least %s", took, tc.slowest)
			}
			delete(got, "latency seconds")
			if !equalMetrics(got, tc.want) {
				t.Fatalf("metrics %v, want %v", got, tc.want)
			}
		})
	}
}

// equalMetrics reports whether a and b hold the same values.
func equalMetrics(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestLanesMetricsOutage: the failing gauge is 1 from the request that
// failed for RetryFor until the receiver answers a probe, then 0; the
// record that failed counts as parked failed, those called back unsent
// as parked not_sent; the poller's records (ProduceWait), parked already,
// count as requests but not as parked; and lanes closed during an outage
// leave the gauge at 0.
func TestLanesMetricsOutage(t *testing.T) {
	m := metrics.New(buildinfo.Info{}, nil)
	rc := &scripted{next: 503}
	p := meteredLanes(t, rc, m, Config{Lanes: 2, RetryFor: 50 * time.Millisecond, ProbeEvery: time.Hour})
	gauge := func() float64 { return partnerMetrics(t, m)["failing"] }
	if g := gauge(); g != 0 {
		t.Fatalf("failing = %v before any request, want 0", g)
	}
	o := newOutcomes(1)
	p.Produce(context.Background(), event("a", "a0"), o.done)
	o.wait(t)
	got := partnerMetrics(t, m)
	if got["failing"] != 1 || got["parked failed"] != 1 || got["5xx"] < 2 || got["retries"] != got["5xx"]-1 || got["latency"] != got["5xx"] {
		t.Fatalf("after a request failed for RetryFor: %v, want failing 1, parked failed 1, and each 503 a request, all but the first a retry", got)
	}
	o = newOutcomes(5)
	for n := range 5 {
		p.Produce(context.Background(), event("b", fmt.Sprint("b", n)), o.done)
	}
	o.wait(t)
	got = partnerMetrics(t, m)
	// The probe due at once after the outage began is sent, and fails at
	// once (a probe is not retried): the others are not sent.
	if got["failing"] != 1 || got["parked not_sent"]+got["parked failed"] != 6 || got["parked not_sent"] < 4 {
		t.Fatalf("during the outage: %v, want failing 1 and the 5 records parked, the probe's failed and the others not_sent", got)
	}
	before := got["5xx"]
	rc.answerWith(503)
	p.health.mu.Lock()
	p.health.nextProbe = time.Now() // the next probe is due
	p.health.mu.Unlock()
	errs := p.ProduceWait(context.Background(), []*kgo.Record{event("c", "c0")})
	got = partnerMetrics(t, m)
	if !IsError(errs[0]) || got["5xx"] != before+1 || got["parked not_sent"]+got["parked failed"] != 6 {
		t.Fatalf("the poller's probe: %v, metrics %v: want one more 5xx, no more parked", errs[0], got)
	}
	rc.answerWith(204)
	p.health.mu.Lock()
	p.health.nextProbe = time.Now()
	p.health.mu.Unlock()
	if errs := p.ProduceWait(context.Background(), []*kgo.Record{event("c", "c0")}); errs[0] != nil {
		t.Fatalf("the receiver answers again: %v", errs[0])
	}
	if got = partnerMetrics(t, m); got["failing"] != 0 || got["2xx"] != 1 {
		t.Fatalf("after the receiver answered: %v, want failing 0 and one 2xx", got)
	}

	// A new outage, and the lanes close during it.
	rc.answerWith(503)
	if errs := p.ProduceGroup(context.Background(), []*kgo.Record{event("d", "d0")}); !IsError(errs[0]) || gauge() != 1 {
		t.Fatalf("a second outage: %v, failing %v, want an *Error and failing 1", errs[0], gauge())
	}
	p.Close()
	if g := gauge(); g != 0 {
		t.Fatalf("failing = %v after the lanes closed during an outage, want 0", g)
	}
}

// TestParkReasonsAreTheMetrics: the reasons the lanes give Parked are
// those the metrics serve from the start.
func TestParkReasonsAreTheMetrics(t *testing.T) {
	ours := []string{ParkedRefused, ParkedFailed, ParkedNotSent, ParkedSlow}
	if !slices.Equal(ours, metrics.WebhookParkReasons) {
		t.Fatalf("the lanes' reasons %v are not metrics.WebhookParkReasons %v", ours, metrics.WebhookParkReasons)
	}
}
