package validate

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"

	"github.com/cdc-relay/cdc-relay/deploy/kubernetes/validate/alertrules"
)

// repoRoot is the repository's root, from this directory.
const repoRoot = "../../.."

// TestGeneratedRulesAreCurrent: the committed PrometheusRule of
// deploy/kubernetes/monitoring and the chart's files/alerts.yaml are what
// docker/alerts.yaml makes now, byte for byte, so the alerts have one
// source; and what it makes holds the same groups as docker/alerts.yaml,
// decoded strictly into the Prometheus Operator's types.
func TestGeneratedRulesAreCurrent(t *testing.T) {
	source, err := os.ReadFile(filepath.Join(repoRoot, alertrules.Source))
	if err != nil {
		t.Fatal(err)
	}
	files, err := alertrules.Files(source)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			t.Errorf("%v: run `%s`", err, alertrules.Command)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: it is not what %s makes; run `%s` and commit it", path, alertrules.Source, alertrules.Command)
		}
	}

	var src monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(source, &src); err != nil {
		t.Fatalf("%s as a PrometheusRule's spec: %v", alertrules.Source, err)
	}
	if len(src.Groups) == 0 {
		t.Fatalf("%s: no groups", alertrules.Source)
	}
	var rule monitoringv1.PrometheusRule
	if err := yaml.UnmarshalStrict(files[alertrules.PrometheusRule], &rule); err != nil {
		t.Fatalf("the generated %s: %v", alertrules.PrometheusRule, err)
	}
	if !reflect.DeepEqual(rule.Spec, src) {
		t.Errorf("the generated %s has other groups than %s", alertrules.PrometheusRule, alertrules.Source)
	}
	var chart monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(files[alertrules.ChartRules], &chart); err != nil {
		t.Fatalf("the generated %s: %v", alertrules.ChartRules, err)
	}
	if !reflect.DeepEqual(chart, src) {
		t.Errorf("the generated %s has other groups than %s", alertrules.ChartRules, alertrules.Source)
	}
}
