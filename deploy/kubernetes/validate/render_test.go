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
	// objects are all of them, each as the JSON of its Go type, by kind
	// and name ("Deployment/cdc-relay").
	objects map[string][]byte
}

// newManifests returns an empty manifests to add objects to.
func newManifests() manifests {
	return manifests{configMaps: map[string]corev1.ConfigMap{}, secrets: map[string]corev1.Secret{}, objects: map[string][]byte{}}
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
	m := newManifests()
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

// add decodes one object by its apiVersion and kind, strictly, and keeps
// it also as the JSON of its type, by kind and name (m.objects), for the
// comparison of renders.
func (m *manifests) add(apiVersion, kind string, data []byte) error {
	var obj interface{ GetName() string }
	switch apiVersion + " " + kind {
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		obj = &monitoringv1.ServiceMonitor{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		obj = &monitoringv1.PrometheusRule{}
	case "v1 Namespace":
		obj = &corev1.Namespace{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Secret":
		obj = &corev1.Secret{}
	default:
		return fmt.Errorf("unknown kind %s %s: teach this test its Go type", apiVersion, kind)
	}
	if err := strict(data, obj); err != nil {
		return err
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		m.deployments = append(m.deployments, *o)
	case *corev1.Service:
		m.services = append(m.services, *o)
	case *policyv1.PodDisruptionBudget:
		m.pdbs = append(m.pdbs, *o)
	case *monitoringv1.ServiceMonitor:
		m.serviceMonitors = append(m.serviceMonitors, *o)
	case *monitoringv1.PrometheusRule:
		m.prometheusRules = append(m.prometheusRules, *o)
	case *corev1.Namespace:
		m.namespaces = append(m.namespaces, *o)
	case *corev1.ConfigMap:
		m.configMaps[o.Name] = *o
	case *corev1.Secret:
		m.secrets[o.Name] = *o
	}
	key := kind + "/" + obj.GetName()
	if _, dup := m.objects[key]; dup {
		return fmt.Errorf("%s twice", key)
	}
	canonical, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	m.objects[key] = canonical
	return nil
}

// strict decodes JSON into v, refusing a field v's type does not have.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
