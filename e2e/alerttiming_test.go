package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPausedTopicAlertsWithinFiveMinutes: a topic paused under a steady
// load (about 100 events a second over two topics) fires the shipped
// CdcRelayHeldGrowing within 5 minutes of its backlog starting to grow,
// and not before the pause, as Prometheus evaluates docker/alerts.yaml
// (promtool) over the relay's own /metrics. The scrapes, one a second,
// are fed as one sample every 15 s: 20 s of pause are 5 minutes, and the
// relay's figures, read from the database every 5 s, are 75 s apart
// there, coarser than a real scrape sees them. Its subject is the
// alert over the relay's figures, not the broker: on kfake only.
func TestPausedTopicAlertsWithinFiveMinutes(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.relaySideOnly()
	promtool := promtoolPath(t)
	a, b := e.topic("a"), e.topic("b")
	e.createTopic1(a)
	e.createTopic1(b)
	p := e.startRelay()
	app := startAppender(t, e.url, 1, 10*time.Millisecond, func(i int64) (string, []any) {
		return "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ($1, $2, 'Steady', '{}')",
			[]any{[]string{"a", "b"}[i%2], fmt.Sprintf("order-%d", i)}
	})
	s := &scraper{p: p}
	paused := s.scrapeFor(6 * time.Second) // the first scrape of the pause
	e.pauseCmd("pause", a)
	s.scrapeFor(22 * time.Second)
	e.pauseCmd("resume", a)
	if err := app.stop(); err != nil {
		t.Fatal(err)
	}
	rules, err := filepath.Abs(filepath.Join("..", "docker", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	firing := strconv.Quote(`max(ALERTS{alertname="CdcRelayHeldGrowing", alertstate="firing", job="cdc-relay"})`)
	at := func(i int) string { return strconv.Itoa(i*15) + "s" }
	var test strings.Builder
	fmt.Fprintf(&test, "rule_files: [%q]\nevaluation_interval: 15s\ntests:\n", rules)
	test.WriteString(inputSeries(s.scrapes))
	test.WriteString("    promql_expr_test:\n")
	fmt.Fprintf(&test, "      - expr: %s\n        eval_time: %s\n        exp_samples: []\n", firing, at(paused-1))
	fmt.Fprintf(&test, "      - expr: %s\n        eval_time: %s\n        exp_samples: [{labels: '{}', value: 1}]\n", firing, at(paused+20))
	file := filepath.Join(t.TempDir(), "alerts_timing_test.yaml")
	if err := os.WriteFile(file, []byte(test.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("CdcRelayHeldGrowing over the scrapes of a paused topic (promtool test rules %s): %v\n%s", file, err, out)
	}
	t.Logf("%d scrapes, the pause from scrape %d: CdcRelayHeldGrowing fires within 5 minutes (series time)", len(s.scrapes), paused)
	p.stop(30 * time.Second)
}
