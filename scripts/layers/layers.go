package main

import (
	"bufio"
	"fmt"
	"sort"
	"strings"
)

// rule is the layering the packages keep: layers[i] holds the patterns
// of layer i, lowest first.
type rule struct {
	layers [][]pattern
}

// pattern names a package, or with "/..." a package and every package
// below it: one unit whose members may import each other.
type pattern struct {
	path string // without "/..."
	tree bool   // path/...
	line int    // the rule's line, for messages
}

func (p pattern) String() string {
	if p.tree {
		return p.path + "/..."
	}
	return p.path
}

func (p pattern) matches(pkg string) bool {
	return pkg == p.path || p.tree && strings.HasPrefix(pkg, p.path+"/")
}

// parseRule reads a rule: one layer a line, lowest first, its patterns
// separated by spaces; "#" starts a comment.
func parseRule(text string) (rule, error) {
	var r rule
	seen := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		var layer []pattern
		for _, f := range fields {
			if prev, ok := seen[f]; ok {
				return rule{}, fmt.Errorf("line %d: %s is already on line %d", n, f, prev)
			}
			seen[f] = n
			path, tree := strings.CutSuffix(f, "/...")
			layer = append(layer, pattern{path: path, tree: tree, line: n})
		}
		r.layers = append(r.layers, layer)
	}
	return r, sc.Err()
}

// place is where a package stands in the rule: its layer and the pattern
// that names it (the longest that matches).
type place struct {
	layer int
	pat   pattern
}

func (r rule) place(pkg string) (place, bool) {
	best, found := place{}, false
	for i, layer := range r.layers {
		for _, p := range layer {
			if p.matches(pkg) && (!found || len(p.path) > len(best.pat.path)) {
				best, found = place{layer: i, pat: p}, true
			}
		}
	}
	return best, found
}

// check returns a sentence for every package the rule does not place and
// for every import that does not point to a lower layer (or, within one
// pattern/..., to the same unit). imports maps each package (relative to
// the module) to the module's packages it imports.
func (r rule) check(imports map[string][]string) []string {
	var problems []string
	pkgs := make([]string, 0, len(imports))
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, from := range pkgs {
		pf, ok := r.place(from)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is on no layer: add it to the line of the layer it belongs to", from))
			continue
		}
		for _, to := range imports[from] {
			pt, ok := r.place(to)
			if !ok {
				continue // reported as a package of its own
			}
			if pf.layer > pt.layer || pf.pat == pt.pat && pf.pat.tree {
				continue
			}
			where := "above it"
			if pf.layer == pt.layer {
				where = "on its own layer"
			}
			problems = append(problems, fmt.Sprintf("%s imports %s, which stands %s (%s: line %d, %s: line %d of the rule): an arrow must point down; move what %s needs below it, or have its caller pass it in",
				from, to, where, pf.pat, pf.pat.line, pt.pat, pt.pat.line, from))
		}
	}
	return problems
}
