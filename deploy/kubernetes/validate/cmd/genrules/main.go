// Command genrules writes the Prometheus Operator's copies of
// docker/alerts.yaml: deploy/kubernetes/monitoring/prometheusrule.yaml and
// the Helm chart's files/alerts.yaml (package alertrules says what each
// is). Run it from deploy/kubernetes/validate, or anywhere below the
// repository's root, after changing docker/alerts.yaml:
//
//	cd deploy/kubernetes/validate && go run ./cmd/genrules
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/cdc-relay/cdc-relay/deploy/kubernetes/validate/alertrules"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "genrules:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	source, err := os.ReadFile(filepath.Join(root, alertrules.Source))
	if err != nil {
		return err
	}
	files, err := alertrules.Files(source)
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := os.WriteFile(filepath.Join(root, p), files[p], 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", p)
	}
	return nil
}

// repoRoot returns the nearest directory, from the working directory up,
// that holds docker/alerts.yaml.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, alertrules.Source)); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no %s in the working directory or above it: run it in the repository", alertrules.Source)
		}
		dir = parent
	}
}
