// Package docker_test checks the monitoring files of docker/ against the
// relay's metrics: the Prometheus rules (alerts.yaml, with promtool), the
// Prometheus configuration of the compose file, and the Grafana dashboard;
// and the compose file's relay: its least-privilege role (grants.sql) and
// its health check.
// promtool comes from Debian's prometheus package: scripts/deps.sh promtool.
package docker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
	"github.com/cdc-relay/cdc-relay/metrics"
)

// promtool runs promtool with args in this directory and fails the test,
// with promtool's output, if it does not exit 0. A missing promtool fails the
// test too: these files would go unchecked.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not installed, so the rules and the dashboard cannot be checked: run scripts/deps.sh promtool (Debian's prometheus package): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPromtool(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // in promtool's output
	}{
		{"rules are valid", []string{"check", "rules", "alerts.yaml"}, "SUCCESS: 15 rules found"},
		{"alerts fire when they should and not otherwise", []string{"test", "rules", "alerts_test.yaml"}, "SUCCESS"},
		{"compose's Prometheus configuration loads the rules", []string{"check", "config", "prometheus.yml"}, "SUCCESS: 1 rule files found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out := promtool(t, tc.args...); !strings.Contains(out, tc.want) {
				t.Errorf("promtool %s said\n%s\nwant %q in it", strings.Join(tc.args, " "), out, tc.want)
			}
		})
	}
}

// relayMetrics returns the names a query may use for the relay's metrics:
// every family of the registry of a relay with a webhook publisher (with
// _bucket, _sum and _count for histograms), and the metric vectors that
// have no child yet.
func relayMetrics(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New(buildinfo.Info{Version: "test"}, func() metrics.Snapshot {
		return metrics.Snapshot{SlotWALRetained: 1, Failed: 1, Dead: 1, EventsBehind: 1, Held: []metrics.HeldTopic{{Topic: "t"}}} // known, so reported
	})
	m.Webhook("partner") // a relay with a webhook publisher serves its series
	names := map[string]bool{}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		names[f.GetName()] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[f.GetName()+s] = true
			}
		}
	}
	// A vector with no child yet (parked by reason, produce errors by
	// error) is not gathered; its description names it.
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		c, ok := v.Field(i).Interface().(prometheus.Collector)
		if !ok {
			continue
		}
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			match := fqName.FindStringSubmatch(d.String())
			if match == nil {
				t.Fatalf("no metric name in %s: has client_golang's Desc.String changed?", d)
			}
			names[match[1]] = true
		}
	}
	for _, want := range []string{"cdc_relay_events_parked_total", "cdc_relay_commit_to_ack_seconds_bucket", "cdc_relay_status_table_events"} {
		if !names[want] {
			t.Fatalf("the registry has no %s: %v", want, sorted(names))
		}
	}
	return names
}

var relayMetricName = regexp.MustCompile(`\bcdc_relay_\w+`)

// unknownMetrics returns the cdc_relay_ names in expr that the relay does
// not serve.
func unknownMetrics(expr string, known map[string]bool) []string {
	var unknown []string
	for _, name := range relayMetricName.FindAllString(expr, -1) {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	return unknown
}

func sorted(set map[string]bool) []string {
	s := make([]string, 0, len(set))
	for k := range set {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// ruleExprs returns the expr of every rule in a rule file as this
// directory writes them: `expr: QUERY` on one line, or `expr: |` (or `>`)
// and the query on the lines indented below.
func ruleExprs(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var exprs []string
	for i := 0; i < len(lines); i++ {
		key := strings.TrimLeft(lines[i], " ")
		if !strings.HasPrefix(key, "expr:") {
			continue
		}
		indent := len(lines[i]) - len(key)
		value := strings.TrimSpace(strings.TrimPrefix(key, "expr:"))
		if strings.HasPrefix(value, "|") || strings.HasPrefix(value, ">") {
			value = ""
			for i+1 < len(lines) {
				next := lines[i+1]
				if strings.TrimSpace(next) != "" && len(next)-len(strings.TrimLeft(next, " ")) <= indent {
					break
				}
				value += " " + strings.TrimSpace(next)
				i++
			}
		}
		exprs = append(exprs, strings.TrimSpace(value))
	}
	return exprs
}

func TestAlertsNameRelayMetrics(t *testing.T) {
	known := relayMetrics(t)
	data, err := os.ReadFile("alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alerts := regexp.MustCompile(`(?m)^\s*- alert: `).FindAll(data, -1)
	exprs := ruleExprs(t, "alerts.yaml")
	if len(exprs) == 0 || len(exprs) != len(alerts) {
		t.Fatalf("read %d exprs for %d alerts in alerts.yaml: %q", len(exprs), len(alerts), exprs)
	}
	for _, expr := range exprs {
		if expr == "" {
			t.Errorf("an alert of alerts.yaml has an empty expr")
		}
		if u := unknownMetrics(expr, known); len(u) > 0 {
			t.Errorf("alert expr %q names %v, which the relay does not serve", expr, u)
		}
	}
}

// dashboard is what the tests read of grafana-dashboard.json.
type dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

// variable is a template variable of the dashboard.
type variable struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Definition string `json:"definition"`
	Multi      bool   `json:"multi"`
	IncludeAll bool   `json:"includeAll"`
	AllValue   string `json:"allValue"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int        `json:"id"`
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Datasource datasource `json:"datasource"`
	GridPos    struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string     `json:"refId"`
		Expr       string     `json:"expr"`
		Datasource datasource `json:"datasource"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 || len(d.Panels) == 0 {
		t.Fatalf("grafana-dashboard.json: title %q, uid %q, schemaVersion %d, %d panels: want a title, a uid, schemaVersion 36 or later and panels",
			d.Title, d.UID, d.SchemaVersion, len(d.Panels))
	}
	return d
}

// The data source every panel and query uses: the dashboard's variable,
// which Grafana fills with the provisioned Prometheus (uid prometheus) or
// asks for on import.
var wantDatasource = datasource{Type: "prometheus", UID: "${DS_PROMETHEUS}"}

func TestDashboardPanels(t *testing.T) {
	d := readDashboard(t)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["DS_PROMETHEUS"] != "datasource" {
		t.Errorf("the dashboard has no data source variable DS_PROMETHEUS: %v", vars)
	}
	ids := map[int]string{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range d.Panels {
		name := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.Title == "" {
			t.Errorf("%s has no title", name)
		}
		if other, dup := ids[p.ID]; dup {
			t.Errorf("%s has the id of panel %q", name, other)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			// A row's header: a title across the dashboard, its panels
			// those below it, up to the next row.
			if g := p.GridPos; len(p.Targets) != 0 || g.X != 0 || g.W != 24 || g.H != 1 {
				t.Errorf("%s: a row with %d queries at %+v, want none, across the 24 columns, 1 high", name, len(p.Targets), g)
			}
			continue
		}
		if p.Datasource != wantDatasource {
			t.Errorf("%s uses data source %+v, want %+v", name, p.Datasource, wantDatasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s has no query", name)
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" || q.RefID == "" || refs[q.RefID] {
				t.Errorf("%s: query %q with refId %q: want an expr and a refId of its own", name, q.Expr, q.RefID)
			}
			refs[q.RefID] = true
			if q.Datasource != wantDatasource {
				t.Errorf("%s: query %s uses data source %+v, want %+v", name, q.RefID, q.Datasource, wantDatasource)
			}
			for _, v := range regexp.MustCompile(`\$(\w+)`).FindAllStringSubmatch(q.Expr, -1) {
				if _, ok := vars[v[1]]; !ok && !strings.HasPrefix(v[1], "__") {
					t.Errorf("%s: query %s uses $%s, which is not a variable of the dashboard", name, q.RefID, v[1])
				}
			}
		}
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("%s: gridPos %+v is not within the 24 columns", name, g)
		}
	cells:
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[cell{x, y}]; ok {
					t.Errorf("%s overlaps panel %q at column %d, row %d", name, other, x, y)
					break cells
				}
				taken[cell{x, y}] = p.Title
			}
		}
	}
}

// TestDashboardQueries checks that every query names only metrics the relay
// serves, and that promtool parses it (the dashboard's variables replaced
// by values, as Grafana does).
func TestDashboardQueries(t *testing.T) {
	d := readDashboard(t)
	known := relayMetrics(t)
	vars := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$job", "cdc-relay", "$instance", ".*", "$publisher", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			if u := unknownMetrics(q.Expr, known); len(u) > 0 {
				t.Errorf("panel %q, query %s: %q names %v, which the relay does not serve", p.Title, q.RefID, q.Expr, u)
			}
			if len(relayMetricName.FindAllString(q.Expr, -1)) == 0 && !strings.Contains(q.Expr, "up{") {
				t.Errorf("panel %q, query %s: %q names no metric of the relay", p.Title, q.RefID, q.Expr)
			}
			expr, err := json.Marshal(vars.Replace(q.Expr)) // a JSON string is a YAML string
			if err != nil {
				t.Fatal(err)
			}
			n++
			fmt.Fprintf(&rules, "      - record: dashboard:panel_%d:%s\n        expr: %s\n", p.ID, q.RefID, expr)
		}
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := promtool(t, "check", "rules", file); !strings.Contains(out, fmt.Sprintf("SUCCESS: %d rules found", n)) {
		t.Errorf("promtool check rules on the dashboard's %d queries said\n%s", n, out)
	}
}

// publisherMetrics returns the names of the relay's metrics that carry
// a publisher label, as a relay with a webhook publisher serves them
// (a histogram by its family's name).
func publisherMetrics(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New(buildinfo.Info{Version: "test"}, func() metrics.Snapshot { return metrics.Snapshot{} })
	m.Webhook("partner")
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "publisher" {
					names[f.GetName()] = true
				}
			}
		}
	}
	if !names["cdc_relay_webhook_requests_total"] || !names["cdc_relay_webhook_request_duration_seconds"] {
		t.Fatalf("the webhook metrics carry no publisher label: %v", sorted(names))
	}
	return names
}

// selector is a metric's name in a query, with its label matchers in
// braces when it has any.
var selector = regexp.MustCompile(`\b(cdc_relay_\w+)\s*(\{[^}]*\})?`)

// TestDashboardFiltersPublishers: the dashboard has a $publisher
// variable (the values of the publisher label of a webhook metric, any
// number of them, or all), and every query of a metric that carries a
// publisher label filters on it, so that an operator with several
// webhook publishers reads one, or some, of them.
func TestDashboardFiltersPublishers(t *testing.T) {
	d := readDashboard(t)
	labelled := publisherMetrics(t)
	var publisher *variable
	for i, v := range d.Templating.List {
		if v.Name == "publisher" {
			publisher = &d.Templating.List[i]
		}
	}
	switch {
	case publisher == nil:
		t.Fatal("the dashboard has no variable publisher")
	case publisher.Type != "query" || !publisher.Multi || !publisher.IncludeAll || publisher.AllValue != ".*":
		t.Errorf("variable publisher: type %q, multi %v, includeAll %v, allValue %q: want a query, multi, with All as .*",
			publisher.Type, publisher.Multi, publisher.IncludeAll, publisher.AllValue)
	}
	if publisher != nil {
		m := regexp.MustCompile(`^label_values\((cdc_relay_\w+)\{job="\$job", instance=~"\$instance"\}, publisher\)$`).FindStringSubmatch(publisher.Definition)
		if m == nil || !labelled[strings.TrimSuffix(m[1], "_bucket")] {
			t.Errorf("variable publisher is %q: want label_values(M{job=\"$job\", instance=~\"$instance\"}, publisher) of a metric M with a publisher label (%v)",
				publisher.Definition, sorted(labelled))
		}
	}
	const filter = `publisher=~"$publisher"`
	filtered := 0
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			for _, sel := range selector.FindAllStringSubmatch(q.Expr, -1) {
				name := sel[1]
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base := strings.TrimSuffix(name, suffix); labelled[base] {
						name = base
					}
				}
				if !labelled[name] {
					continue
				}
				filtered++
				if !strings.Contains(sel[2], filter) {
					t.Errorf("panel %q, query %s: %s%s does not filter on the publisher variable: add %s", p.Title, q.RefID, sel[1], sel[2], filter)
				}
			}
		}
	}
	if filtered == 0 {
		t.Error("no query of the dashboard reads a metric with a publisher label: the webhook panels are gone")
	}
}

// composeFile is what the tests read of compose.yaml.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		DependsOn   yaml.Node         `yaml:"depends_on"` // a list, or a map with conditions
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	for _, name := range []string{"postgres", "migrate", "grants", "relay"} {
		if _, ok := c.Services[name]; !ok {
			t.Fatalf("compose.yaml has no service %s", name)
		}
	}
	return c
}

// postgresUser returns the user and password of a service's
// CDC_RELAY_POSTGRES_URL.
func postgresUser(t *testing.T, c composeFile, service string) (user, password string) {
	t.Helper()
	u, err := url.Parse(c.Services[service].Environment["CDC_RELAY_POSTGRES_URL"])
	if err != nil || u.User == nil {
		t.Fatalf("service %s: CDC_RELAY_POSTGRES_URL %v: want a URL with a user", service, err)
	}
	password, _ = u.User.Password()
	return u.User.Username(), password
}

// TestComposeRelayRole: migrate runs as the administrator, the grants
// service then creates the relay's role with grants.sql, and the relay runs
// as that role, not as the administrator.
func TestComposeRelayRole(t *testing.T) {
	c := readCompose(t)
	admin := c.Services["postgres"].Environment["POSTGRES_USER"]
	if user, _ := postgresUser(t, c, "migrate"); user != admin {
		t.Errorf("migrate connects as %q, want the administrator %q", user, admin)
	}
	user, password := postgresUser(t, c, "relay")
	if user == admin || user == "postgres" || user == "" {
		t.Errorf("the relay connects as %q, the administrator: want the role of grants.sql", user)
	}
	grants, err := os.ReadFile("grants.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf(`CREATE ROLE %q;`, user), fmt.Sprintf(`ALTER ROLE %q WITH LOGIN REPLICATION;`, user), fmt.Sprintf(`ALTER ROLE %q PASSWORD '%s';`, user, password)} {
		if !strings.Contains(string(grants), want) {
			t.Errorf("grants.sql lacks %s: the relay's role would not be what its URL says", want)
		}
	}
	g := c.Services["grants"]
	if !slices.Contains(g.Volumes, "./grants.sql:/grants.sql:ro") || !slices.Contains(g.Command, "/grants.sql") || g.Environment["PGPASSWORD"] != c.Services["postgres"].Environment["POSTGRES_PASSWORD"] {
		t.Errorf("the grants service does not apply grants.sql as the administrator: %+v", g)
	}
	for _, dep := range []struct{ service, after string }{{"grants", "migrate"}, {"relay", "grants"}} {
		var deps map[string]struct {
			Condition string `yaml:"condition"`
		}
		node := c.Services[dep.service].DependsOn
		if err := node.Decode(&deps); err != nil || deps[dep.after].Condition != "service_completed_successfully" {
			t.Errorf("%s does not wait for %s to complete", dep.service, dep.after)
		}
	}
}

// TestComposeGrantsArePrintGrants: grants.sql's statements are what
// `cdc-relay migrate --print-grants` prints for the relay's role.
func TestComposeGrantsArePrintGrants(t *testing.T) {
	user, _ := postgresUser(t, readCompose(t), "relay")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/cdc-relay", "migrate", "--print-grants", user)
	cmd.Dir = ".."
	printed, err := cmd.Output()
	if err != nil {
		t.Fatalf("cdc-relay migrate --print-grants %s: %v", user, err)
	}
	grants, err := os.ReadFile("grants.sql")
	if err != nil {
		t.Fatal(err)
	}
	if want := sqlStatements(string(printed)); want == "" || !strings.Contains(sqlStatements(string(grants)), want) {
		t.Errorf("grants.sql is not what --print-grants %s prints; paste this into it again:\n%s", user, printed)
	}
}

// sqlStatements returns sql without its comment lines.
func sqlStatements(sql string) string {
	var b strings.Builder
	for line := range strings.Lines(sql) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") && strings.TrimSpace(line) != "" {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestComposeHealthcheck: the relay's health check is `cdc-relay status`,
// which exits 0 only for a relay that answers ready.
func TestComposeHealthcheck(t *testing.T) {
	want := []string{"CMD", "/cdc-relay", "status"}
	if got := readCompose(t).Services["relay"].Healthcheck.Test; !slices.Equal(got, want) {
		t.Errorf("the relay's healthcheck is %q, want %q", got, want)
	}
}

// TestDashboardWebhookPanels: each query of the Webhooks row reads a
// value, as Prometheus evaluates it (promtool), over the series of a
// publisher whose receiver answered 503s and 204s, had requests tried
// again and events parked, and is failing: no query selects a label the
// metrics do not have, nor reads nothing where the operator must see
// something.
func TestDashboardWebhookPanels(t *testing.T) {
	d := readDashboard(t)
	rowY := -1
	for _, p := range d.Panels {
		if p.Type == "row" && p.Title == "Webhooks" {
			rowY = p.GridPos.Y
		}
	}
	if rowY < 0 {
		t.Fatal("the dashboard has no row Webhooks")
	}
	const labels = `job="cdc-relay",instance="relay-a:7187",publisher="partner"`
	var b strings.Builder
	b.WriteString("evaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n")
	for _, s := range [][2]string{
		{`cdc_relay_webhook_requests_total{` + labels + `,class="5xx"}`, "0+1x10"},
		{`cdc_relay_webhook_requests_total{` + labels + `,class="2xx"}`, "0+5x10"},
		{`cdc_relay_webhook_retries_total{` + labels + `}`, "0+1x10"},
		{`cdc_relay_webhook_request_duration_seconds_bucket{` + labels + `,le="0.1"}`, "0+3x10"},
		{`cdc_relay_webhook_request_duration_seconds_bucket{` + labels + `,le="1"}`, "0+6x10"},
		{`cdc_relay_webhook_request_duration_seconds_bucket{` + labels + `,le="+Inf"}`, "0+6x10"},
		{`cdc_relay_webhook_receiver_failing{` + labels + `}`, "1x10"},
		{`cdc_relay_webhook_events_parked_total{` + labels + `,reason="failed"}`, "0+1x10"},
	} {
		fmt.Fprintf(&b, "      - series: %q\n        values: %q\n", s[0], s[1])
	}
	b.WriteString("    promql_expr_test:\n")
	vars := strings.NewReplacer("$__rate_interval", "2m", "$job", "cdc-relay", "$instance", ".*", "$publisher", "partner")
	n := 0
	for _, p := range d.Panels {
		if p.Type == "row" || p.GridPos.Y <= rowY {
			continue
		}
		for _, q := range p.Targets {
			n++
			fmt.Fprintf(&b, "      - expr: %q\n        eval_time: 5m\n        exp_samples: [{labels: '{}', value: 1}]\n",
				"max(("+vars.Replace(q.Expr)+") > bool 0)")
		}
	}
	if n < 4 {
		t.Fatalf("the Webhooks row has %d queries, want requests, latency, failing and parked at least", n)
	}
	file := filepath.Join(t.TempDir(), "webhook-panels_test.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, "test", "rules", file)
}
