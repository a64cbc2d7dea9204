// Package validate checks the Kubernetes manifests of deploy/kubernetes and
// the Helm chart of deploy/helm/cdc-relay without a cluster: its tests
// render the kustomize base, the example overlay and the monitoring
// component with kustomize's own library (krusty), and the chart with
// Helm's (pkg/engine, as `helm template` does; pkg/lint, as `helm lint
// --strict` does), and decode every object strictly into the Kubernetes
// API's Go types (k8s.io/api) and the Prometheus Operator's. Then they
// check what the relay needs of them: the probes on the metrics port, a
// grace period above the stop timeout, the secrets as files of a read-only
// Secret volume, a non-root read-only container, only CDC_RELAY_*
// variables that the relay knows, and a ServiceMonitor that scrapes under
// job="cdc-relay"; that the chart with its default values renders the
// kustomize objects, field by field; and that the PrometheusRules are what
// docker/alerts.yaml generates (package alertrules, cmd/genrules).
//
// It is a module of its own, so that kustomize, Helm and the Kubernetes
// types are not dependencies of the relay. `make k8s` runs it; `make test`
// too.
package validate
