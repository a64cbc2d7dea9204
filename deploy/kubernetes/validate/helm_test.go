package validate

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// chartDir is the Helm chart, from this directory.
const chartDir = "../../helm/cdc-relay"

// The release the tests render: named cdc-relay, the chart's objects have
// the names of the kustomize base's.
const (
	releaseName      = "cdc-relay"
	releaseNamespace = "default"
)

// monitoringValues enable the chart's ServiceMonitor and PrometheusRule.
var monitoringValues = map[string]any{"monitoring": map[string]any{
	"serviceMonitor": map[string]any{"enabled": true},
	"prometheusRule": map[string]any{"enabled": true},
}}

// renderChartErr renders the chart with values over values.yaml, as
// `helm template cdc-relay deploy/helm/cdc-relay` does without a cluster
// (values.schema.json checked), and decodes every object strictly.
func renderChartErr(values map[string]any) (manifests, error) {
	m := newManifests()
	ch, err := loader.Load(chartDir)
	if err != nil {
		return m, err
	}
	opts := chartutil.ReleaseOptions{Name: releaseName, Namespace: releaseNamespace, Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValues(ch, values, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return m, err
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return m, err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if path.Ext(name) != ".yaml" || strings.HasPrefix(path.Base(name), "_") {
			continue // NOTES.txt, partials
		}
		docs := releaseutil.SplitManifests(files[name])
		for _, key := range slices.Sorted(maps.Keys(docs)) {
			data, err := yaml.YAMLToJSON([]byte(docs[key]))
			if err != nil {
				return m, fmt.Errorf("%s: %w", name, err)
			}
			if string(data) == "null" {
				continue // only comments
			}
			var head struct{ APIVersion, Kind string }
			if err := json.Unmarshal(data, &head); err != nil {
				return m, fmt.Errorf("%s: %w", name, err)
			}
			if err := m.add(head.APIVersion, head.Kind, data); err != nil {
				return m, fmt.Errorf("%s: %s: %w", name, head.Kind, err)
			}
		}
	}
	return m, nil
}

// renderChart is renderChartErr that fails the test on an error.
func renderChart(t *testing.T, values map[string]any) manifests {
	t.Helper()
	m, err := renderChartErr(values)
	if err != nil {
		t.Fatalf("helm template %s: %v", chartDir, err)
	}
	return m
}

// TestChartLints: `helm lint --strict` of the chart finds nothing worse than
// information, with the default values and with monitoring enabled.
func TestChartLints(t *testing.T) {
	for name, values := range map[string]map[string]any{"defaults": nil, "monitoring": monitoringValues} {
		linter := lint.All(chartDir, values, releaseNamespace, true)
		for _, msg := range linter.Messages {
			if msg.Severity >= support.WarningSev {
				t.Errorf("helm lint --strict %s (%s): %s", chartDir, name, msg)
			} else {
				t.Logf("helm lint (%s): %s", name, msg)
			}
		}
	}
}

// helmOnly are the labels and annotations the chart adds to what the
// kustomize base has: Helm's own labels, the selector's instance label (so
// that two releases do not select each other's pods), and the checksum of
// the settings, which rolls the pods as kustomize's hashed ConfigMap name
// does.
var helmOnly = []string{
	"helm.sh/chart",
	"app.kubernetes.io/managed-by",
	"app.kubernetes.io/instance",
	"app.kubernetes.io/version",
	"checksum/config",
}

// hashSuffix is the suffix kustomize adds to a generated ConfigMap's name.
var hashSuffix = regexp.MustCompile(`-[a-z0-9]{10}$`)

// normalize returns the objects of m as generic JSON, without the keys
// helmOnly names wherever they are (labels, selectors, annotations) and
// with kustomize's hashed ConfigMap names, wherever they are, unhashed.
func normalize(t *testing.T, m manifests) map[string]any {
	t.Helper()
	unhash := map[string]string{}
	for name := range m.configMaps {
		unhash[name] = hashSuffix.ReplaceAllString(name, "")
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range helmOnly {
				delete(v, k)
			}
			for k, e := range v {
				v[k] = walk(e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		case string:
			if u, ok := unhash[v]; ok {
				return u
			}
		}
		return v
	}
	out := map[string]any{}
	for key, data := range m.objects {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		kind, name, _ := strings.Cut(key, "/")
		if u, ok := unhash[name]; ok {
			key = kind + "/" + u
		}
		out[key] = walk(v)
	}
	return out
}

// TestChartMatchesKustomize: with its default values the chart renders the
// kustomize base's objects, and with monitoring enabled also the
// monitoring component's ServiceMonitor and PrometheusRule, object by
// object and field by field, but for what helmOnly names and the hash of
// the ConfigMap's name. So the two stay one deployment, and a setting
// changed in one (the metrics port, say) fails here until the other has it.
func TestChartMatchesKustomize(t *testing.T) {
	tests := []struct {
		name          string
		values        map[string]any
		kustomization string
	}{
		{"defaults", nil, "../base"},
		{"monitoring", monitoringValues, "testdata/base-monitoring"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := normalize(t, render(t, tt.kustomization))
			got := normalize(t, renderChart(t, tt.values))
			if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
				t.Fatalf("the chart renders %v, kustomize %s renders %v", g, tt.kustomization, w)
			}
			for key := range want {
				if !reflect.DeepEqual(got[key], want[key]) {
					t.Errorf("%s differs between the chart (+) and kustomize %s (-): change the one that is wrong\n%s", key, tt.kustomization, lineDiff(t, want[key], got[key]))
				}
			}
		})
	}
}

// lineDiff returns the lines of a's and b's YAML that differ, - for a's and
// + for b's, with the lines in common between them elided.
func lineDiff(t *testing.T, a, b any) string {
	t.Helper()
	ay, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	by, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	x, y := strings.Split(string(ay), "\n"), strings.Split(string(by), "\n")
	// lcs[i][j] is the length of the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(&out, "+ %s\n", y[j])
			j++
		default:
			fmt.Fprintf(&out, "- %s\n", x[i])
			i++
		}
	}
	return out.String()
}

// TestChartValues: the values other than the defaults render what they
// say, and the settings the chart refuses are refused with a message that
// says what to do.
func TestChartValues(t *testing.T) {
	tests := []struct {
		name   string
		values string
		check  func(m manifests) []string
		err    string // a part of the error, when the render must fail
	}{
		{name: "replicas", values: "replicas: 3", check: func(m manifests) []string {
			return want("replicas", *m.deployments[0].Spec.Replicas, int32(3))
		}},
		{name: "image", values: "image: {repository: registry.example.com/cdc-relay, tag: v1.2.3, pullPolicy: IfNotPresent}", check: func(m manifests) []string {
			c := m.deployments[0].Spec.Template.Spec.Containers[0]
			return append(want("image", c.Image, "registry.example.com/cdc-relay:v1.2.3"), want("pull policy", string(c.ImagePullPolicy), "IfNotPresent")...)
		}},
		{name: "image tag from appVersion", values: "image: {tag: ''}", check: func(m manifests) []string {
			image, err := releaseImage()
			if err != nil {
				return []string{err.Error()}
			}
			c := m.deployments[0].Spec.Template.Spec.Containers[0]
			_, tag, _ := strings.Cut(image, "cdc-relay:")
			return append(want("image", c.Image, image), want("version label", m.deployments[0].Labels["app.kubernetes.io/version"], tag)...)
		}},
		{name: "resources", values: "resources: {requests: {cpu: '1', memory: 1Gi}, limits: {memory: 2Gi}}", check: func(m manifests) []string {
			r := m.deployments[0].Spec.Template.Spec.Containers[0].Resources
			return append(append(want("cpu request", r.Requests.Cpu().String(), "1"), want("memory request", r.Requests.Memory().String(), "1Gi")...),
				want("memory limit", r.Limits.Memory().String(), "2Gi")...)
		}},
		{name: "secrets", values: "existingSecret: relay-secrets\nkafkaSaslSecret: relay-sasl", check: func(m manifests) []string {
			src := m.deployments[0].Spec.Template.Spec.Volumes[0].Projected.Sources
			return append(want("secret", src[0].Secret.Name, "relay-secrets"), want("SASL secret", src[1].Secret.Name, "relay-sasl")...)
		}},
		{name: "metrics port", values: "metrics: {port: 9300}", check: func(m manifests) []string {
			c := m.deployments[0].Spec.Template.Spec.Containers[0]
			return slices.Concat(
				want("container port", c.Ports[0].ContainerPort, int32(9300)),
				want("Service port", m.services[0].Spec.Ports[0].Port, int32(9300)),
				want("annotation", m.deployments[0].Spec.Template.Annotations["prometheus.io/port"], "9300"),
				want(metricsAddrVar, env(m, &c)[metricsAddrVar], "0.0.0.0:9300"))
		}},
		{name: "config file", values: "configFile: |\n  tables:\n    - name: public.outbox\n", check: func(m manifests) []string {
			c := m.deployments[0].Spec.Template.Spec.Containers[0]
			return slices.Concat(
				want("CDC_RELAY_CONFIG", env(m, &c)["CDC_RELAY_CONFIG"], "/etc/cdc-relay/relay.yaml"),
				want("relay.yaml", m.configMaps["cdc-relay-config"].Data["relay.yaml"], "tables:\n  - name: public.outbox\n"),
				want("mount", c.VolumeMounts[1].MountPath, "/etc/cdc-relay"))
		}},
		{name: "monitoring labels", values: "monitoring: {serviceMonitor: {enabled: true, labels: {release: kps}, interval: 15s}, prometheusRule: {enabled: true, labels: {release: kps}}}", check: func(m manifests) []string {
			return slices.Concat(
				want("ServiceMonitor label", m.serviceMonitors[0].Labels["release"], "kps"),
				want("interval", string(m.serviceMonitors[0].Spec.Endpoints[0].Interval), "15s"),
				want("PrometheusRule label", m.prometheusRules[0].Labels["release"], "kps"))
		}},
		{name: "a second slot's job", values: "monitoring: {serviceMonitor: {enabled: true, job: cdc-relay-payments}}", check: func(m manifests) []string {
			return want("job", *m.serviceMonitors[0].Spec.Endpoints[0].RelabelConfigs[0].Replacement, "cdc-relay-payments")
		}},
		{name: "a job the alerts do not match", values: "monitoring: {serviceMonitor: {enabled: true, job: payments}}", err: "does not match pattern"},
		{name: "a secret as a variable", values: "config: {CDC_RELAY_POSTGRES_URL: 'postgres://x'}", err: "a secret must not be a variable"},
		{name: "the listen address", values: "config: {CDC_RELAY_METRICS_ADDR: '0.0.0.0:1'}", err: "metrics.port"},
		{name: "a number", values: "config: {CDC_RELAY_MAX_IN_FLIGHT: 1000000}", err: "string"},
		{name: "not a relay variable", values: "config: {KAFKA_BROKERS: x}", err: "KAFKA_BROKERS"},
		{name: "a misspelt value", values: "replica: 3", err: "replica"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tt.values), &values); err != nil {
				t.Fatal(err)
			}
			m, err := renderChartErr(values)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("with %s: error %v, want one that says %q", tt.values, err, tt.err)
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("with %s: %v", tt.values, err)
			}
			for _, problem := range tt.check(m) {
				t.Errorf("with %s: %s", tt.values, problem)
			}
		})
	}
}

// want says how got differs from what the values asked for.
func want[T comparable](what string, got, want T) []string {
	if got != want {
		return []string{fmt.Sprintf("%s is %v, want %v", what, got, want)}
	}
	return nil
}
