// Package validate checks the Kubernetes manifests of deploy/kubernetes
// without a cluster: its test renders the base and the example overlay with
// kustomize's own library (krusty) and decodes every object strictly into
// the Kubernetes API's Go types (k8s.io/api), then checks what the relay
// needs of them: the probes on the metrics port, a grace period above the
// stop timeout, the secrets as files of a read-only Secret volume, a
// non-root read-only container, and only CDC_RELAY_* variables that the
// relay knows.
//
// It is a module of its own, so that kustomize and the Kubernetes types are
// not dependencies of the relay. `make k8s` runs it; `make test` too.
package validate
