package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// manifests are the objects of one rendered kustomization, each decoded
// into its Kubernetes type.
type manifests struct {
	deployments []appsv1.Deployment
	services    []corev1.Service
	pdbs        []policyv1.PodDisruptionBudget
	namespaces  []corev1.Namespace
	configMaps  map[string]corev1.ConfigMap
	secrets     map[string]corev1.Secret
	// The Prometheus Operator's objects (deploy/kubernetes/monitoring).
	serviceMonitors []monitoringv1.ServiceMonitor
	prometheusRules []monitoringv1.PrometheusRule
}

// render runs kustomize on dir, as `kubectl kustomize dir` does, and decodes
// every object strictly: a field its type does not have, or a kind this
// test does not know, fails.
func render(t *testing.T, dir string) manifests {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := k.Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	m := manifests{configMaps: map[string]corev1.ConfigMap{}, secrets: map[string]corev1.Secret{}}
	for _, r := range resources.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("%s: %s: %v", dir, r.CurId(), err)
		}
		if err := m.add(r.GetApiVersion(), r.GetKind(), data); err != nil {
			t.Fatalf("%s: %s %s: %v", dir, r.GetKind(), r.GetName(), err)
		}
	}
	return m
}

// add decodes one object by its apiVersion and kind.
func (m *manifests) add(apiVersion, kind string, data []byte) error {
	switch apiVersion + " " + kind {
	case "apps/v1 Deployment":
		return decodeInto(data, &m.deployments)
	case "v1 Service":
		return decodeInto(data, &m.services)
	case "policy/v1 PodDisruptionBudget":
		return decodeInto(data, &m.pdbs)
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return decodeInto(data, &m.serviceMonitors)
	case "monitoring.coreos.com/v1 PrometheusRule":
		return decodeInto(data, &m.prometheusRules)
	case "v1 Namespace":
		return decodeInto(data, &m.namespaces)
	case "v1 ConfigMap":
		var cm corev1.ConfigMap
		if err := strict(data, &cm); err != nil {
			return err
		}
		m.configMaps[cm.Name] = cm
		return nil
	case "v1 Secret":
		var s corev1.Secret
		if err := strict(data, &s); err != nil {
			return err
		}
		m.secrets[s.Name] = s
		return nil
	}
	return fmt.Errorf("unknown kind %s %s: teach this test its Go type", apiVersion, kind)
}

// decodeInto decodes data strictly and appends it to *list.
func decodeInto[T any](data []byte, list *[]T) error {
	var v T
	if err := strict(data, &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

// strict decodes JSON into v, refusing a field v's type does not have.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
