package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestDashboardSeesFaults: the shipped Grafana dashboard's queries, as
// Prometheus evaluates them (promtool) over the relay's own /metrics
// scraped once a second through a parked event, a paused topic and a
// broker outage under a steady load, read what an operator must see in
// each: the parked line and its reason, the held events, the held line
// and the oldest event owed while a topic is paused, the lag and the in
// flight while the broker refuses every produce. The scrapes are fed to
// promtool as one sample every 15 s, so that the panels' rate windows
// span a few scrapes.
func TestDashboardSeesFaults(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.needKfake()
	promtool := promtoolPath(t)
	a, b := e.topic("a"), e.topic("b")
	e.createTopic(a, map[string]string{"max.message.bytes": "2000"})
	e.createTopic1(b)
	p := e.startRelay()
	app := startAppender(t, e.url, 1, 20*time.Millisecond, func(i int64) (string, []any) {
		return "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ($1, $2, 'Steady', '{}')",
			[]any{[]string{"a", "b"}[i%2], fmt.Sprintf("k%d", i%20)}
	})

	s := &scraper{p: p}
	scrapeFor := func(d time.Duration) int { return s.scrapeFor(d) - 1 } // the last scrape's
	steady := scrapeFor(8 * time.Second)
	insert(t, e.conn, "a", "big", "TooLarge", `{"pad": "`+strings.Repeat("x", 5000)+`"}`)
	parked := scrapeFor(8 * time.Second)
	e.pauseCmd("pause", b)
	paused := scrapeFor(12 * time.Second)
	e.pauseCmd("resume", b)
	scrapeFor(4 * time.Second)
	unblock := e.blockProduce()
	outage := scrapeFor(8 * time.Second)
	unblock()
	scrapeFor(4 * time.Second)

	// The parked event counts once: the panels' rate windows see it for a
	// minute (4 scrapes) after the scrape that first counts it.
	first := slices.IndexFunc(s.scrapes, func(f map[string]*dto.MetricFamily) bool {
		return value(f, "cdc_relay_events_parked_total", "reason", "MESSAGE_TOO_LARGE") >= 1
	})
	if first < 0 || first > parked {
		t.Fatalf("no scrape counts the record too large as parked")
	}
	at := func(i int) string { return strconv.Itoa(i*15) + "s" }
	checks := []dashboardCheck{
		{at(steady), "Throughput", "read"},
		{at(steady), "Throughput", "produced"},
		{at(first + 1), "Throughput", "parked"},
		{at(first + 1), "Parked and produce errors", "parked {{reason}}"},
		{at(paused), "Throughput", "held behind a parked event or a paused topic"},
		{at(paused), "Held events by topic", "{{topic}} {{state}}"},
		{at(paused), "Replication lag", "oldest event owed, in flight or held (seconds)"},
		{at(outage), "Replication lag", "{{instance}} seconds"},
		{at(outage), "In flight", "{{instance}} events"},
	}
	if err := app.stop(); err != nil {
		t.Fatal(err)
	}
	out := e.promtoolDashboard(promtool, s.scrapes, checks)
	t.Logf("%d scrapes; promtool: %s", len(s.scrapes), strings.TrimSpace(out))
	p.stop(30 * time.Second)
}

// promtoolPath returns promtool's path, or fails t saying how to install it.
func promtoolPath(t *testing.T) string {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not installed: run scripts/deps.sh promtool (Debian's prometheus package): %v", err)
	}
	return promtool
}

// scraper keeps the relay p's /metrics, scraped once a second.
type scraper struct {
	p       *relayProc
	scrapes []map[string]*dto.MetricFamily
}

// scrapeFor scrapes for d, once a second, and returns how many scrapes it
// holds then.
func (s *scraper) scrapeFor(d time.Duration) int {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Second) {
		_, fams := s.p.scrape()
		s.scrapes = append(s.scrapes, fams)
	}
	return len(s.scrapes)
}

// dashboardCheck is a panel's target, by title and legend, that must read
// more than 0 at a time of the scrapes.
type dashboardCheck struct{ at, title, legend string }

// promtoolDashboard writes scrapes as promtool's input series (job
// cdc-relay, instance relay) and, for each check, the dashboard target's
// query with Grafana's variables set, as `max((query) > bool 0)` that must
// be 1; it fails the test with promtool's report unless all are.
func (e *env) promtoolDashboard(promtool string, scrapes []map[string]*dto.MetricFamily, checks []dashboardCheck) string {
	e.t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docker", "grafana-dashboard.json"))
	if err != nil {
		e.t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr   string `json:"expr"`
				Legend string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		e.t.Fatal(err)
	}
	vars := strings.NewReplacer("$job", "cdc-relay", "$instance", ".*", "$publisher", ".*", "$__rate_interval", "1m")
	var b strings.Builder
	b.WriteString("evaluation_interval: 15s\ntests:\n")
	b.WriteString(inputSeries(scrapes))
	b.WriteString("    promql_expr_test:\n")
	for _, c := range checks {
		expr := ""
		for _, p := range dash.Panels {
			for _, tg := range p.Targets {
				if p.Title == c.title && tg.Legend == c.legend {
					expr = vars.Replace(tg.Expr)
				}
			}
		}
		if expr == "" {
			e.t.Fatalf("the dashboard has no panel %q with a target %q", c.title, c.legend)
		}
		fmt.Fprintf(&b, "      - expr: %s\n        eval_time: %s\n        exp_samples: [{labels: '{}', value: 1}]\n",
			strconv.Quote("max(("+expr+") > bool 0)"), c.at)
	}
	file := filepath.Join(e.t.TempDir(), "dashboard_test.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		e.t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", file).CombinedOutput()
	if err != nil {
		e.t.Fatalf("the dashboard's queries over the scrapes (promtool test rules %s): %v\n%s", file, err, out)
	}
	return string(out)
}

// inputSeries is a promtool test of scrapes taken once a second, as one
// sample every 15 s: its interval and input_series, indented as the first
// of a test file's tests.
func inputSeries(scrapes []map[string]*dto.MetricFamily) string {
	var b strings.Builder
	b.WriteString("  - interval: 15s\n    input_series:\n")
	for _, s := range seriesOf(scrapes) {
		fmt.Fprintf(&b, "      - series: %s\n        values: %q\n", strconv.Quote(s.name), s.values)
	}
	return b.String()
}

// series is one series of the scrapes, in promtool's notation: its name
// with labels, and its value at each scrape ("_" where it was missing).
type series struct{ name, values string }

// seriesOf turns scrapes into series: counters, gauges and untyped
// metrics by value, histograms as their _bucket, _sum and _count, each
// with job="cdc-relay" and instance="relay".
func seriesOf(scrapes []map[string]*dto.MetricFamily) []series {
	values := map[string][]string{}
	add := func(i int, name string, labels []*dto.LabelPair, extra [2]string, v float64) {
		pairs := []string{`instance="relay"`, `job="cdc-relay"`}
		for _, l := range labels {
			pairs = append(pairs, l.GetName()+"="+strconv.Quote(l.GetValue()))
		}
		if extra[0] != "" {
			pairs = append(pairs, extra[0]+"="+strconv.Quote(extra[1]))
		}
		sort.Strings(pairs)
		key := name + "{" + strings.Join(pairs, ",") + "}"
		if values[key] == nil {
			values[key] = slices.Repeat([]string{"_"}, len(scrapes))
		}
		values[key][i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	for i, fams := range scrapes {
		for name, f := range fams {
			for _, m := range f.Metric {
				switch {
				case m.Counter != nil:
					add(i, name, m.Label, [2]string{}, m.Counter.GetValue())
				case m.Gauge != nil:
					add(i, name, m.Label, [2]string{}, m.Gauge.GetValue())
				case m.Untyped != nil:
					add(i, name, m.Label, [2]string{}, m.Untyped.GetValue())
				case m.Histogram != nil:
					h := m.Histogram
					for _, bk := range h.Bucket {
						add(i, name+"_bucket", m.Label, [2]string{"le", strconv.FormatFloat(bk.GetUpperBound(), 'g', -1, 64)}, float64(bk.GetCumulativeCount()))
					}
					add(i, name+"_bucket", m.Label, [2]string{"le", "+Inf"}, float64(h.GetSampleCount()))
					add(i, name+"_sum", m.Label, [2]string{}, h.GetSampleSum())
					add(i, name+"_count", m.Label, [2]string{}, float64(h.GetSampleCount()))
				}
			}
		}
	}
	out := make([]series, 0, len(values))
	for k, v := range values {
		out = append(out, series{k, strings.Join(v, " ")})
	}
	slices.SortFunc(out, func(a, b series) int { return strings.Compare(a.name, b.name) })
	return out
}
