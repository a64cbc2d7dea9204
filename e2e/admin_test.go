package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cdc-relay/cdc-relay/report"
)

// endpointLine is the relay's log line naming where it serves /metrics.
var endpointLine = regexp.MustCompile(`msg="serving metrics and health" addr=(\S+)`)

// endpoint returns the base URL of the relay's HTTP endpoints, from its
// log.
func (p *relayProc) endpoint() string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := endpointLine.FindStringSubmatch(p.Log()); m != nil {
			return "http://" + m[1]
		}
		if time.Now().After(deadline) || !p.Running() {
			p.t.Fatalf("the relay does not say where it serves /metrics\n%s", p.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// call makes one HTTP request of the relay and returns the status code and
// the body; token, if set, is sent as a bearer token.
func (p *relayProc) call(method, path, token string) (int, string) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.endpoint()+path, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, string(body)
}

// status reads GET /status.
func (p *relayProc) status() report.Status {
	p.t.Helper()
	code, body := p.call("GET", "/status", "")
	var st report.Status
	if code != http.StatusOK {
		p.t.Fatalf("GET /status: %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		p.t.Fatalf("GET /status: %v\n%s", err, body)
	}
	return st
}

// scrape reads GET /metrics: the text, and the families by name.
func (p *relayProc) scrape() (string, map[string]*dto.MetricFamily) {
	p.t.Helper()
	code, body := p.call("GET", "/metrics", "")
	if code != http.StatusOK {
		p.t.Fatalf("GET /metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		p.t.Fatalf("parse /metrics: %v", err)
	}
	return body, families
}

// value is the value of the metric name (with the labels given as
// name=value pairs) in families: a counter's, a gauge's, or a histogram's
// sample count. Absent is -1.
func value(families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f, ok := families[name]
	if !ok {
		return -1
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestMetricsCountEveryEvent: during a run of 10,000 events, /metrics
// counts each of them read, produced and timed from commit to ack; lag
// returns to 0 once the relay is idle (in bytes, to the relay's own last
// checkpoint save); promtool finds no naming problem;
// /status agrees; and the info-level log of the whole run is short and
// never holds the PostgreSQL password.
func TestMetricsCountEveryEvent(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	const password = "pw-kept-out-of-the-log" // the test cluster trusts every login
	url := strings.Replace(e.url, "postgres@", "postgres:"+password+"@", 1)
	if url == e.url {
		t.Fatalf("no user in %s", e.url)
	}
	args := append(withoutFlag(e.relayArgs(), "--postgres-url"), "--postgres-url", url)
	p := e.startRelayArgs(relayBin, args...)

	const txns, perTx = 100, 100
	ctx := context.Background()
	for i := range txns {
		if _, err := e.conn.Exec(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			SELECT 'order', 'k' || (g % 10), 'OrderPlaced', jsonb_build_object('n', g) FROM generate_series($1::int, $2::int) g`,
			i*perTx, (i+1)*perTx-1); err != nil {
			t.Fatal(err)
		}
	}
	e.readN(e.topic("order"), txns*perTx, 60*time.Second)
	written := e.lsn(insertLSN) // past the last event's commit

	var text string
	var families map[string]*dto.MetricFamily
	// Idle: nothing in flight, no lag in seconds, and in bytes at most the
	// WAL of the relay's own last checkpoint save (which PostgreSQL reports
	// to the stream only when asked, every third of --replication-timeout):
	// a few hundred bytes, or a few KiB when the save is the page's first
	// change since a server checkpoint (a full-page image). The lag in
	// bytes counts the whole server's WAL: while the parallel tests'
	// databases write, it stays above that, and the relay is idle once it
	// confirmed past its own events.
	idle := func() (bool, string) {
		inFlight, seconds, bytes := value(families, "cdc_relay_in_flight_events"),
			value(families, "cdc_relay_replication_lag_seconds"), value(families, "cdc_relay_replication_lag_bytes")
		confirmed := value(families, "cdc_relay_confirmed_lsn_bytes")
		return inFlight == 0 && seconds == 0 && bytes >= 0 && (bytes < 16384 || confirmed >= float64(written)),
			fmt.Sprintf("in flight %v, lag %v s and %v bytes, confirmed %v (the events' end %v)", inFlight, seconds, bytes, pglogrepl.LSN(confirmed), written)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		text, families = p.scrape()
		ok, state := idle()
		if ok {
			t.Logf("idle: %s", state)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay is not idle 30 s after the last event arrived: %s", state)
		}
	}
	for _, c := range []struct {
		name string
		want float64
	}{
		{"cdc_relay_events_read_total", txns * perTx},
		{"cdc_relay_events_produced_total", txns * perTx},
		{"cdc_relay_commit_to_ack_seconds", txns * perTx}, // the histogram's count
		{"cdc_relay_leader", 1},
		{"cdc_relay_ready", 1},
		{"cdc_relay_paused", 0},
		{"cdc_relay_in_flight_bytes", 0},
	} {
		if got := value(families, c.name); got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	if got := value(families, "cdc_relay_slot_wal_retained_bytes"); got <= 0 {
		t.Errorf("cdc_relay_slot_wal_retained_bytes = %v, want the WAL the slot holds", got)
	}
	if got := value(families, "cdc_relay_status_table_events", "state", "failed"); got != 0 {
		t.Errorf("cdc_relay_status_table_events{state=failed} = %v, want 0", got)
	}
	// The slot moves only when the relay confirms, after it set the gauge:
	// a gauge read after the slot is at or past it. (Idle as defined above
	// does not mean the last position is confirmed yet, so read both again
	// until they agree.)
	e.waitFor("cdc_relay_confirmed_lsn_bytes at or past the slot's confirmed position", 10*time.Second, func() bool {
		slot := e.lsn(slotLSN)
		_, fams := p.scrape()
		return value(fams, "cdc_relay_confirmed_lsn_bytes") >= float64(slot)
	})
	promtool := exec.Command("promtool", "check", "metrics")
	promtool.Stdin = strings.NewReader(text)
	if out, err := promtool.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s\n(scripts/deps.sh promtool installs it)", err, out)
	}

	st := p.status()
	if st.Role != report.RoleLeader || !st.Ready || !st.Streaming || st.EventsProduced != txns*perTx || st.Slot != e.slot {
		t.Errorf("GET /status = %+v, want a ready, streaming leader of %s that produced %d events", st, e.slot, txns*perTx)
	}
	// The harness builds without make's stamps: the version is what Go
	// recorded ("dev" with -buildvcs=false), the same in both places.
	build := []string{"version", st.Version, "go_version", runtime.Version()}
	if st.Commit != "" {
		build = append(build, "commit", st.Commit)
	}
	if st.Version == "" || value(families, "cdc_relay_build_info", build...) != 1 {
		t.Errorf("GET /status says version %q, commit %q; cdc_relay_build_info does not say the same with go_version %s", st.Version, st.Commit, runtime.Version())
	}
	if code, body := p.call("GET", "/healthz", ""); code != http.StatusOK {
		t.Errorf("GET /healthz: %d %s", code, body)
	}
	addr := strings.TrimPrefix(p.endpoint(), "http://")
	out, err := exec.Command(relayBin, "status", "--metrics-addr", addr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "leader, ready") || !strings.Contains(string(out), "0 FAILED") {
		t.Errorf("cdc-relay status: %v\n%s", err, out)
	}

	p.stop(30 * time.Second)
	// No relay answers now: status reads the database, and exits 3.
	out, err = exec.Command(relayBin, "status", "--metrics-addr", addr, "--postgres-url", e.url, "--slot", e.slot, "--json").CombinedOutput()
	var fromDB report.Status
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || json.Unmarshal(out, &fromDB) != nil || fromDB.Role != report.RoleNone || fromDB.Failed != 0 || fromDB.WALRetainedBytes <= 0 {
		t.Errorf("cdc-relay status --json with no relay running: %v (want exit status 3)\n%s", err, out)
	}
	log := p.Log()
	if strings.Contains(log, password) {
		t.Errorf("the relay logged the PostgreSQL password")
	}
	if lines := strings.Count(log, "\n"); lines >= 50 {
		t.Errorf("the info-level log of a %d-event run has %d lines, want under 50:\n%s", txns*perTx, lines, log)
	} else {
		t.Logf("the info-level log of a %d-event run has %d lines", txns*perTx, lines)
	}
}

// TestReadyzFollowsTheBroker: /readyz turns not ready within 10 s of the
// broker going away, and ready again once it is back.
func TestReadyzFollowsTheBroker(t *testing.T) {
	parallelOwnBroker(t) // it stops the broker
	e := newEnv(t)
	p := e.startRelay()
	ready := func() bool {
		code, _ := p.call("GET", "/readyz", "")
		return code == http.StatusOK
	}
	e.waitFor("the relay is ready", 30*time.Second, ready)
	e.stopBroker()
	gone := time.Now()
	e.waitFor("/readyz says not ready", 10*time.Second, func() bool { return !ready() })
	t.Logf("not ready %s after the broker stopped", time.Since(gone).Round(10*time.Millisecond))
	if code, body := p.call("GET", "/readyz", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, "Kafka") {
		t.Errorf("GET /readyz without a broker: %d %q, want 503 naming Kafka", code, body)
	}
	e.startBroker()
	e.waitFor("/readyz says ready again", 60*time.Second, ready)
	insert(t, e.conn, "order", "k1", "OrderPlaced", `{"after": "the outage"}`)
	e.readN(e.topic("order"), 1, 60*time.Second)
}

// TestPauseHoldsTheSlot: with a token, an admin call without it is refused
// with 401. Paused, nothing arrives for 5 s while rows are inserted, and
// PostgreSQL keeps them; resumed, all of them arrive, in order.
func TestPauseHoldsTheSlot(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	const token = "t0ken-for-the-test"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := e.startRelay("--admin-token-file", file)
	topic := e.topic("order")
	insert(t, e.conn, "order", "k", "OrderPlaced", `{"n": 0}`)
	e.readN(topic, 1, 30*time.Second)

	for _, c := range []struct{ method, path, token string }{
		{"POST", "/pause", ""},
		{"POST", "/pause", "wrong"},
		{"GET", "/failed", ""},
		{"POST", "/failed/1/retry", ""},
	} {
		if code, body := p.call(c.method, c.path, c.token); code != http.StatusUnauthorized {
			t.Errorf("%s %s with token %q: %d %s, want 401", c.method, c.path, c.token, code, body)
		}
	}
	if p.status().Paused {
		t.Fatal("paused by a refused call")
	}
	if code, body := p.call("POST", "/pause", token); code != http.StatusOK {
		t.Fatalf("POST /pause: %d %s", code, body)
	}
	if !p.status().Paused {
		t.Error("GET /status does not say paused")
	}
	cl := e.client()
	before := sum(e.endOffsets(cl, topic))
	const n = 50
	for i := 1; i <= n; i++ {
		insert(t, e.conn, "order", "k", "OrderPlaced", fmt.Sprintf(`{"n": %d}`, i))
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got := sum(e.endOffsets(cl, topic)); got != before {
			t.Fatalf("%d events arrived while paused", got-before)
		}
	}
	if _, families := p.scrape(); value(families, "cdc_relay_paused") != 1 {
		t.Error("cdc_relay_paused is not 1 while paused")
	}
	if !e.slotActive() {
		t.Error("the slot is not streamed while paused: the relay must keep it")
	}
	if code, body := p.call("POST", "/resume", token); code != http.StatusOK {
		t.Fatalf("POST /resume: %d %s", code, body)
	}
	recs := e.readN(topic, n+1, 30*time.Second)
	for i, r := range recs {
		var v struct{ N int }
		if err := json.Unmarshal(r.Value, &v); err != nil || v.N != i {
			t.Fatalf("record %d is %s, want n=%d: out of order", i, r.Value, i)
		}
	}
	if code, body := p.call("GET", "/failed", token); code != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Errorf("GET /failed: %d %s, want 200 []", code, body)
	}
	if code, body := p.call("POST", "/failed/12345/retry", token); code != http.StatusNotFound {
		t.Errorf("POST /failed/12345/retry: %d %s, want 404", code, body)
	}
}

func sum(offsets map[int32]int64) int64 {
	var n int64
	for _, o := range offsets {
		n += o
	}
	return n
}
