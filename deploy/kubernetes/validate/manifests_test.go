package validate

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// renderings are what the tests render and check: the kustomizations and
// the Helm chart with a few sets of values; whether each makes the Secrets
// (the base and the chart must not: they hold no secret), and whether it
// has a ServiceMonitor and a PrometheusRule (the base must not: a cluster
// without the Prometheus Operator's CRDs would refuse them).
var renderings = []struct {
	name        string
	render      func(t *testing.T) manifests
	makesSecret bool
	monitoring  bool
}{
	{"kustomize ../base", kustomize("../base"), false, false},
	{"kustomize ../example", kustomize("../example"), true, true},
	{"helm defaults", chart(nil), false, false},
	{"helm monitoring", chart(monitoringValues), false, true},
	{"helm config file and SASL", chart(map[string]any{
		"configFile": "tables:\n  - name: public.outbox\n",
		"config": map[string]any{
			"CDC_RELAY_KAFKA_BROKERS":            "kafka.kafka.svc:9092",
			"CDC_RELAY_KAFKA_SASL_MECHANISM":     "SCRAM-SHA-512",
			"CDC_RELAY_KAFKA_SASL_USER":          "cdc-relay",
			"CDC_RELAY_KAFKA_SASL_PASSWORD_FILE": "/var/run/secrets/cdc-relay/kafka-sasl-password",
			"CDC_RELAY_KAFKA_TLS":                "true",
		},
	}), false, false},
}

func kustomize(dir string) func(t *testing.T) manifests {
	return func(t *testing.T) manifests { return render(t, dir) }
}

func chart(values map[string]any) func(t *testing.T) manifests {
	return func(t *testing.T) manifests { return renderChart(t, values) }
}

// TestManifests renders each of the renderings and runs every check on it.
func TestManifests(t *testing.T) {
	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			m := r.render(t)
			if got := len(m.secrets) > 0; got != r.makesSecret {
				t.Errorf("makes %d Secrets, want them: %v", len(m.secrets), r.makesSecret)
			}
			if got := len(m.serviceMonitors) == 1 && len(m.prometheusRules) == 1; got != r.monitoring {
				t.Errorf("makes %d ServiceMonitors and %d PrometheusRules, want one each: %v", len(m.serviceMonitors), len(m.prometheusRules), r.monitoring)
			}
			for _, name := range sortedChecks() {
				for _, problem := range checks[name](m) {
					t.Errorf("%s: %s", name, problem)
				}
			}
		})
	}
}

func sortedChecks() []string {
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// TestChecksCatchMistakes: each check reports the mistake it is there for,
// made in the example's rendered objects.
func TestChecksCatchMistakes(t *testing.T) {
	container := func(m *manifests) *corev1.Container { return &m.deployments[0].Spec.Template.Spec.Containers[0] }
	pod := func(m *manifests) *corev1.PodSpec { return &m.deployments[0].Spec.Template.Spec }
	setConfig := func(m *manifests, name, value string) {
		for _, cm := range m.configMaps {
			cm.Data[name] = value
		}
	}
	tests := []struct {
		check   string
		mistake string
		make    func(m *manifests)
	}{
		{"two replicas", "one replica", func(m *manifests) { one := int32(1); m.deployments[0].Spec.Replicas = &one }},
		{"runs the relay", "no run", func(m *manifests) { container(m).Args = []string{"migrate"} }},
		{"runs the relay", "an image built by hand", func(m *manifests) { container(m).Image = "cdc-relay:latest" }},
		{"runs the relay", "another release's image", func(m *manifests) { container(m).Image = releaseRepository + ":v0.4.0" }},
		{"probes on the metrics port", "liveness on /readyz", func(m *manifests) { container(m).LivenessProbe.HTTPGet.Path = "/readyz" }},
		{"probes on the metrics port", "readiness on a number", func(m *manifests) { container(m).ReadinessProbe.HTTPGet.Port = intstr.FromInt32(7187) }},
		{"probes on the metrics port", "the relay listens elsewhere", func(m *manifests) { setConfig(m, metricsAddrVar, "0.0.0.0:9188") }},
		{"probes on the metrics port", "no Service port", func(m *manifests) { m.services[0].Spec.Ports[0].Name = "http" }},
		{"grace above stop timeout", "Kubernetes' default", func(m *manifests) { pod(m).TerminationGracePeriodSeconds = nil }},
		{"grace above stop timeout", "a longer stop timeout", func(m *manifests) { setConfig(m, stopTimeoutVar, "1m") }},
		{"no secret in a variable", "the URL in a ConfigMap", func(m *manifests) { setConfig(m, "CDC_RELAY_POSTGRES_URL", "postgres://x") }},
		{"no secret in a variable", "the token from a Secret", func(m *manifests) {
			c := container(m)
			c.Env = append(c.Env, corev1.EnvVar{Name: "CDC_RELAY_ADMIN_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "admin-token"}}})
		}},
		{"secrets as files", "a writable mount", func(m *manifests) { container(m).VolumeMounts[0].ReadOnly = false }},
		{"secrets as files", "a file outside the mount", func(m *manifests) {
			setConfig(m, "CDC_RELAY_KAFKA_SASL_PASSWORD_FILE", "/etc/kafka-sasl-password")
		}},
		{"secrets as files", "a key the Secret lacks", func(m *manifests) {
			for name, s := range m.secrets {
				if strings.HasPrefix(name, "cdc-relay-kafka-sasl") {
					delete(s.Data, "password")
				}
			}
		}},
		{"secrets as files", "no PostgreSQL URL", func(m *manifests) {
			c := container(m)
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "CDC_RELAY_POSTGRES_URL_FILE" })
		}},
		{"admin token off loopback", "no token", func(m *manifests) {
			c := container(m)
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "CDC_RELAY_ADMIN_TOKEN_FILE" })
		}},
		{"non-root, read-only", "a writable root", func(m *manifests) { f := false; container(m).SecurityContext.ReadOnlyRootFilesystem = &f }},
		{"non-root, read-only", "root", func(m *manifests) { root := int64(0); pod(m).SecurityContext.RunAsUser = &root }},
		{"non-root, read-only", "a capability", func(m *manifests) { container(m).SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"} }},
		{"selectors find the pods", "a Service selecting nothing", func(m *manifests) { m.services[0].Spec.Selector = map[string]string{"app": "other"} }},
		{"probes on the metrics port", "an annotation on another port", func(m *manifests) {
			m.deployments[0].Spec.Template.Annotations["prometheus.io/port"] = "9188"
		}},
		{"scraped as job cdc-relay", "the job named after the Service", func(m *manifests) { m.serviceMonitors[0].Spec.Endpoints[0].RelabelConfigs = nil }},
		{"scraped as job cdc-relay", "the job relabelled again", func(m *manifests) {
			ep := &m.serviceMonitors[0].Spec.Endpoints[0]
			ep.RelabelConfigs = append(ep.RelabelConfigs, monitoringv1.RelabelConfig{SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_service_name"}, TargetLabel: "job"})
		}},
		{"scraped as job cdc-relay", "another port", func(m *manifests) { m.serviceMonitors[0].Spec.Endpoints[0].Port = "http" }},
		{"scraped as job cdc-relay", "a Service it does not select", func(m *manifests) {
			m.serviceMonitors[0].Spec.Selector.MatchLabels = map[string]string{"app.kubernetes.io/name": "other"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.check+": "+tt.mistake, func(t *testing.T) {
			m := render(t, "../example")
			if problems := checks[tt.check](m); len(problems) > 0 {
				t.Fatalf("the example fails before the mistake: %v", problems)
			}
			tt.make(&m)
			if problems := checks[tt.check](m); len(problems) == 0 {
				t.Errorf("%s: the check did not see it", tt.mistake)
			} else {
				t.Logf("reported: %v", problems)
			}
		})
	}
}

var relayVariable = regexp.MustCompile(`\bCDC_RELAY_[A-Z0-9_]+\b`)

// relayVariables returns the variables `cdc-relay run --help` names, run
// from the repository's root.
func relayVariables(t *testing.T) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/cdc-relay", "run", "--help")
	cmd.Dir = "../../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./cmd/cdc-relay run --help: %v\n%s", err, out)
	}
	known := map[string]bool{}
	for _, name := range relayVariable.FindAllString(string(out), -1) {
		known[name] = true
	}
	if !known["CDC_RELAY_POSTGRES_URL_FILE"] || !known[metricsAddrVar] || len(known) < 20 {
		t.Fatalf("run --help names %d variables, not the ones expected: has its format changed?\n%s", len(known), out)
	}
	return known
}

// unknownVariables returns the CDC_RELAY_ variables the container sets
// that the relay does not read.
func unknownVariables(m manifests, known map[string]bool) []string {
	var unknown []string
	_, c := relayContainer(m)
	if c == nil {
		return []string{"no container cdc-relay"}
	}
	for name := range env(m, c) {
		if strings.HasPrefix(name, "CDC_RELAY_") && !known[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	return unknown
}

// TestVariablesAreTheRelays: every CDC_RELAY_ variable the manifests set
// is one the relay reads; a misspelt one would be ignored.
func TestVariablesAreTheRelays(t *testing.T) {
	known := relayVariables(t)
	for _, r := range renderings {
		m := r.render(t)
		if u := unknownVariables(m, known); len(u) > 0 {
			t.Errorf("%s sets %v, which cdc-relay run does not read (cdc-relay run --help lists them)", r.name, u)
		}
		for _, cm := range m.configMaps {
			cm.Data["CDC_RELAY_SLOTT"] = "x"
		}
		if u := unknownVariables(m, known); !slices.Equal(u, []string{"CDC_RELAY_SLOTT"}) {
			t.Errorf("%s with CDC_RELAY_SLOTT set: unknown %v, want that one", r.name, u)
		}
	}
}
