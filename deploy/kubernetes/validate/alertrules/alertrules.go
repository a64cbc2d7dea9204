// Package alertrules makes the Prometheus Operator's copies of
// docker/alerts.yaml, the one file of the relay's alerting rules: the
// PrometheusRule of the kustomize component deploy/kubernetes/monitoring
// and the Helm chart's files/alerts.yaml, which its PrometheusRule template
// reads. `go run ./cmd/genrules` (in deploy/kubernetes/validate) writes
// them; a test of package validate fails when a committed copy differs
// from what docker/alerts.yaml makes.
package alertrules

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The files, relative to the repository's root.
const (
	Source         = "docker/alerts.yaml"
	PrometheusRule = "deploy/kubernetes/monitoring/prometheusrule.yaml"
	ChartRules     = "deploy/helm/cdc-relay/files/alerts.yaml"
	// Command is what writes them again, for the messages that say so.
	Command = "cd deploy/kubernetes/validate && go run ./cmd/genrules"
)

// Files returns the contents of the generated files by their path relative
// to the repository's root, made from source, the contents of
// docker/alerts.yaml. Its groups are copied node by node, so that the
// order, the comments and the block style of the descriptions stay.
func Files(source []byte) (map[string][]byte, error) {
	groups, err := groupsNode(source)
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# GENERATED from %s by `%s`: do not edit;\n# change %s and run that.\n", Source, Command, Source)

	rule := &yaml.Node{Kind: yaml.MappingNode}
	addPair(rule, "apiVersion", scalar("monitoring.coreos.com/v1"))
	addPair(rule, "kind", scalar("PrometheusRule"))
	meta := &yaml.Node{Kind: yaml.MappingNode}
	addPair(meta, "name", scalar("cdc-relay"))
	labels := &yaml.Node{Kind: yaml.MappingNode}
	addPair(labels, "app.kubernetes.io/name", scalar("cdc-relay"))
	addPair(meta, "labels", labels)
	rule.Content = append(rule.Content, scalar("metadata"), meta)
	spec := &yaml.Node{Kind: yaml.MappingNode}
	addPair(spec, "groups", groups)
	rule.Content = append(rule.Content, scalar("spec"), spec)
	ruleYAML, err := encode(rule)
	if err != nil {
		return nil, err
	}

	chartSpec := &yaml.Node{Kind: yaml.MappingNode}
	addPair(chartSpec, "groups", groups)
	chartYAML, err := encode(chartSpec)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		PrometheusRule: append([]byte(header+"# The alerts of the relay for the Prometheus Operator; kustomization.yaml\n# says how to use it.\n"), ruleYAML...),
		ChartRules:     append([]byte(header+"# The spec of the chart's PrometheusRule (templates/prometheusrule.yaml).\n"), chartYAML...),
	}, nil
}

// groupsNode returns the node of the top-level key groups of source.
func groupsNode(source []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(source, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", Source, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: want a mapping with the key groups", Source)
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "groups" {
			if len(top.Content) != 2 {
				return nil, fmt.Errorf("%s: want only the key groups at the top, as a PrometheusRule's spec has", Source)
			}
			return top.Content[i+1], nil
		}
	}
	return nil, fmt.Errorf("%s: no key groups", Source)
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

func addPair(m *yaml.Node, key string, value *yaml.Node) {
	m.Content = append(m.Content, scalar(key), value)
}

func encode(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
