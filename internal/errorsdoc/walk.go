package errorsdoc

import (
	"go/ast"
	"slices"
)

// fn is a function around an expression: a declared one or a literal.
type fn struct {
	node ast.Node // *ast.FuncDecl or *ast.FuncLit
	// name is what calls name it by: a declared function's or method's
	// name, or the variable or field a literal is assigned to; "" when
	// it is not known.
	name string
	// params are its parameters' names, in order ("" for one unnamed);
	// variadic says the last takes the rest.
	params   []string
	variadic bool
}

// site is a call of a function of a package, in the scope it is made in.
type site struct {
	call *ast.CallExpr
	in   scope
}

// newFn describes the function node n (a *ast.FuncDecl or
// *ast.FuncLit), whose parent in the syntax tree is parent.
func newFn(n, parent ast.Node) *fn {
	f := &fn{node: n}
	var typ *ast.FuncType
	switch n := n.(type) {
	case *ast.FuncDecl:
		f.name, typ = n.Name.Name, n.Type
	case *ast.FuncLit:
		f.name, typ = boundName(n, parent), n.Type
	}
	for _, field := range typ.Params.List {
		if len(field.Names) == 0 {
			f.params = append(f.params, "")
		}
		for _, id := range field.Names {
			f.params = append(f.params, id.Name)
		}
		_, f.variadic = field.Type.(*ast.Ellipsis)
	}
	return f
}

// boundName is the name a function literal lit is known by: the variable
// or field it is assigned to, or the key it is the value of in a
// composite literal; "" for any other.
func boundName(lit *ast.FuncLit, parent ast.Node) string {
	switch p := parent.(type) {
	case *ast.AssignStmt:
		for i, r := range p.Rhs {
			if r == lit && i < len(p.Lhs) {
				return exprName(p.Lhs[i])
			}
		}
	case *ast.ValueSpec:
		for i, v := range p.Values {
			if v == lit && i < len(p.Names) {
				return p.Names[i].Name
			}
		}
	case *ast.KeyValueExpr:
		if p.Value == lit {
			return exprName(p.Key)
		}
	}
	return ""
}

// exprName is the name of an identifier or the selected name of a
// selector (x.name), else "".
func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// walk calls visit for each node of f, of package p, with the scope it
// is in, and records each call in p's index of calls by name.
func (m *module) walk(p *pkg, f *ast.File, visit func(ast.Node, scope)) {
	s := scope{m: m, p: p, imports: imports(f)}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if len(s.fns) > 0 && s.fns[len(s.fns)-1].node == top {
				s.fns = s.fns[:len(s.fns)-1]
			}
			return true
		}
		var parent ast.Node
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		stack = append(stack, n)
		switch n.(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			s.fns = append(slices.Clip(s.fns), newFn(n, parent))
		}
		here := s
		here.fns = slices.Clip(s.fns)
		if call, ok := n.(*ast.CallExpr); ok {
			if name := exprName(call.Fun); name != "" {
				p.calls[name] = append(p.calls[name], site{call: call, in: here})
			}
		}
		visit(n, here)
		return true
	})
}
