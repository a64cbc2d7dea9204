// Command layers checks that every import between the module's packages
// points down the layers of rule.txt, beside it: a package imports only
// packages of lower layers, never one of its own layer or above. make lint
// runs it; it prints each wrong arrow with the two rule lines and fails.
//
//	go run ./scripts/layers [-rule FILE]
//
// Only the packages' own imports count, not their tests'.
package main

import (
	_ "embed"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed rule.txt
var defaultRule string

func main() {
	ruleFile := flag.String("rule", "", "read the rule from this file instead of scripts/layers/rule.txt")
	flag.Parse()
	if err := run(*ruleFile); err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(1)
	}
}

func run(ruleFile string) error {
	text := defaultRule
	if ruleFile != "" {
		b, err := os.ReadFile(ruleFile)
		if err != nil {
			return err
		}
		text = string(b)
	}
	r, err := parseRule(text)
	if err != nil {
		return fmt.Errorf("rule: %w", err)
	}
	imports, err := moduleImports()
	if err != nil {
		return err
	}
	problems := r.check(imports)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d arrows against the rule in scripts/layers/rule.txt", len(problems))
	}
	fmt.Printf("layers: %d packages, every arrow points down\n", len(imports))
	return nil
}

// moduleImports lists, from go list, each package of the module with the
// module's packages it imports, paths relative to the module.
func moduleImports() (map[string][]string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return nil, fmt.Errorf("run it inside the module (go env GOMOD: %q, %v)", gomod, err)
	}
	list := exec.Command("go", "list", "-f", "{{.Module.Path}} {{.ImportPath}} {{join .Imports \" \"}}", "./...")
	list.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	out, err := list.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("go list: %v: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list: %w", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		mod, pkg := f[0]+"/", f[1]
		rel := strings.TrimPrefix(pkg, mod)
		if pkg == f[0] {
			rel = "."
		}
		imports[rel] = nil
		for _, imp := range f[2:] {
			if strings.HasPrefix(imp, mod) {
				imports[rel] = append(imports[rel], strings.TrimPrefix(imp, mod))
			}
		}
	}
	return imports, nil
}
