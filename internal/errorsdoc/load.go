package errorsdoc

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// pkg is a package of the module, parsed: its path in the module
// ("slot", "relay/delivery/atleastonce") and its non-test files.
type pkg struct {
	rel   string
	files []*ast.File
	// consts are its package-level string constants, by name.
	consts map[string]string
	// errorMethods are the Error methods of its types, by type name.
	errorMethods map[string]*ast.FuncDecl
	// funcs are its functions (not methods), by name, each with its
	// file's imports.
	funcs map[string]funcAt
	// calls are its calls of functions and methods, by the name called
	// (f(…), x.f(…)), as module.walk finds them.
	calls map[string][]site
}

// funcAt is a function of a package, with its file's imports.
type funcAt struct {
	decl    *ast.FuncDecl
	imports map[string]string
	p       *pkg
}

// scope is the scope of f's body.
func (f funcAt) scope(m *module) scope {
	return scope{m: m, p: f.p, imports: f.imports, fns: []*fn{newFn(f.decl, nil)}}
}

// module is the packages the binary links, parsed.
type module struct {
	path string // the module's path, from go.mod
	fset *token.FileSet
	pkgs []*pkg // sorted by rel
	// methods are the methods of the packages' types, by name.
	methods map[string][]funcAt
}

// modulePath reads the module's path from root's go.mod.
func modulePath(root string) (string, error) {
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(p), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("go.mod names no module")
}

// load parses the packages of the module at root that main (a package's
// path in the module, such as "cmd/cdc-relay") links: main and the
// module's packages it imports, directly or not. go/build chooses each
// package's files, as the go command would for this platform, without
// the tests'.
func load(root, main string) (*module, error) {
	mp, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	m := &module{path: mp, fset: token.NewFileSet(), methods: map[string][]funcAt{}}
	seen := map[string]bool{main: true}
	queue := []string{main}
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		p, imports, err := m.parse(root, rel)
		if err != nil {
			return nil, err
		}
		m.pkgs = append(m.pkgs, p)
		for _, imp := range imports {
			if r, ok := strings.CutPrefix(imp, mp+"/"); ok && !seen[r] {
				seen[r] = true
				queue = append(queue, r)
			}
		}
	}
	slices.SortFunc(m.pkgs, func(a, b *pkg) int { return strings.Compare(a.rel, b.rel) })
	m.collectConsts()
	return m, nil
}

// parse parses the non-test files of the package rel, and returns it
// with its imports.
func (m *module) parse(root, rel string) (*pkg, []string, error) {
	bp, err := build.Default.ImportDir(filepath.Join(root, filepath.FromSlash(rel)), 0)
	if err != nil {
		return nil, nil, fmt.Errorf("package %s: %w", rel, err)
	}
	p := &pkg{rel: rel, consts: map[string]string{}, errorMethods: map[string]*ast.FuncDecl{}, calls: map[string][]site{}, funcs: map[string]funcAt{}}
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(m.fset, filepath.Join(bp.Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		p.files = append(p.files, f)
	}
	return p, bp.Imports, nil
}

// collectConsts records each package's string constants whose values are
// literals or joins of them, and its types' Error methods.
func (m *module) collectConsts() {
	for _, p := range m.pkgs {
		for _, f := range p.files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.GenDecl:
					if d.Tok == token.CONST {
						p.addConsts(d)
					}
				case *ast.FuncDecl:
					if d.Recv == nil {
						p.funcs[d.Name.Name] = funcAt{decl: d, imports: imports(f), p: p}
					} else {
						m.methods[d.Name.Name] = append(m.methods[d.Name.Name], funcAt{decl: d, imports: imports(f), p: p})
					}
					if d.Name.Name == "Error" && d.Recv != nil && len(d.Recv.List) == 1 && d.Type.Params.NumFields() == 0 {
						if name := receiverType(d.Recv.List[0].Type); name != "" {
							p.errorMethods[name] = d
						}
					}
				}
			}
		}
	}
}

// addConsts records d's constants whose values are string literals, or
// literals joined by +.
func (p *pkg) addConsts(d *ast.GenDecl) {
	for _, s := range d.Specs {
		vs := s.(*ast.ValueSpec)
		for i, name := range vs.Names {
			if i < len(vs.Values) {
				if v, ok := literal(vs.Values[i]); ok {
					p.consts[name.Name] = v
				}
			}
		}
	}
}

// literal is e's value when e is a string literal, or literals joined by
// +.
func literal(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		return unquote(e)
	case *ast.ParenExpr:
		return literal(e.X)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok := literal(e.X)
		y, ok2 := literal(e.Y)
		return x + y, ok && ok2
	}
	return "", false
}

// receiverType is the name of a method's receiver type (T for T and *T).
func receiverType(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// imports maps the names f's imports are known by to their paths.
func imports(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, s := range f.Imports {
		p := strings.Trim(s.Path.Value, `"`)
		name := path.Base(p)
		if s.Name != nil {
			name = s.Name.Name
		} else if strings.HasPrefix(name, "v") && strings.Contains(p, "/") && isMajor(name) {
			name = path.Base(path.Dir(p)) // github.com/jackc/pgx/v5
		}
		out[name] = p
	}
	return out
}

// isMajor reports whether s is a major version's element: v2, v5, ….
func isMajor(s string) bool {
	if len(s) < 2 {
		return false
	}
	for _, r := range s[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// pkg returns the package of the module whose import path is path, or
// nil.
func (m *module) pkg(path string) *pkg {
	rel, ok := strings.CutPrefix(path, m.path+"/")
	if !ok {
		return nil
	}
	for _, p := range m.pkgs {
		if p.rel == rel {
			return p
		}
	}
	return nil
}
