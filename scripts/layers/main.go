// Command layers checks that every import between the module's packages
// points down the layers of rule.txt, beside it: a package imports only
// packages of lower layers, never one of its own layer or above. make lint
// runs it; it prints each wrong arrow with the two rule lines and fails.
//
//	go run ./scripts/layers [-rule FILE]
//
// Only the packages' own imports count, not their tests'. With -map it
// prints instead the module's packages layer by layer, from the top, each
// with its doc's first sentence: the package map, read from the code.
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
	printMap := flag.Bool("map", false, "print the packages layer by layer, from the top (layer 1 is the ground), each with its doc's first sentence, as Markdown")
	flag.Parse()
	run := check
	if *printMap {
		run = writeMap
	}
	if err := run(*ruleFile); err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(1)
	}
}

// readRule reads the rule of ruleFile, or rule.txt's without one.
func readRule(ruleFile string) (rule, error) {
	text := defaultRule
	if ruleFile != "" {
		b, err := os.ReadFile(ruleFile)
		if err != nil {
			return rule{}, err
		}
		text = string(b)
	}
	r, err := parseRule(text)
	if err != nil {
		return rule{}, fmt.Errorf("rule: %w", err)
	}
	return r, nil
}

// check prints every arrow against the rule and fails when there is one.
func check(ruleFile string) error {
	r, err := readRule(ruleFile)
	if err != nil {
		return err
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
		return fmt.Errorf("arrows against the rule in scripts/layers/rule.txt: %d", len(problems))
	}
	fmt.Printf("layers: %d packages, every arrow points down\n", len(imports))
	return nil
}

// writeMap prints the module's packages layer by layer, from the top,
// each with its doc's first sentence.
func writeMap(ruleFile string) error {
	r, err := readRule(ruleFile)
	if err != nil {
		return err
	}
	docs, err := goList("{{.Module.Path}}\t{{.ImportPath}}\t{{.Doc}}")
	if err != nil {
		return err
	}
	byLayer := make([][]string, len(r.layers))
	for _, line := range docs {
		mod, rest, _ := strings.Cut(line, "\t")
		pkg, doc, _ := strings.Cut(rest, "\t")
		pkg = strings.TrimPrefix(strings.TrimPrefix(pkg, mod), "/")
		if p, ok := r.place(pkg); ok {
			byLayer[p.layer] = append(byLayer[p.layer], fmt.Sprintf("| %d | `%s` | %s |", p.layer+1, pkg, doc))
		}
	}
	fmt.Println("| layer | package | its job |")
	fmt.Println("|---|---|---|")
	for i := len(byLayer) - 1; i >= 0; i-- {
		for _, row := range byLayer[i] {
			fmt.Println(row)
		}
	}
	return nil
}

// moduleImports lists, from go list, each package of the module with the
// module's packages it imports, paths relative to the module.
func moduleImports() (map[string][]string, error) {
	lines, err := goList("{{.Module.Path}} {{.ImportPath}} {{join .Imports \" \"}}")
	if err != nil {
		return nil, err
	}
	imports := map[string][]string{}
	for _, line := range lines {
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

// goList runs go list -f format over the module's packages, from the
// module's root, and returns its lines.
func goList(format string) ([]string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return nil, fmt.Errorf("run it inside the module (go env GOMOD: %q, %v)", gomod, err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	list := exec.Command("go", "list", "-f", format, "./...")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("go list: %v: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list: %w", err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n"), nil
}
