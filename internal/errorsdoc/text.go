package errorsdoc

import (
	"go/ast"
	"go/token"
	"slices"
	"strconv"
	"strings"
)

// Hole is how a message shows a value the source does not hold: a format
// verb's argument, an operand of + that is not constant.
const Hole = "…"

// maxDepth bounds how far texts follows variables and parameters.
const maxDepth = 4

// scope is where an expression is read: its module, package, its file's
// imports, and the functions around it, innermost last (none at the
// package level), whose variables and parameters texts follows.
type scope struct {
	m       *module
	p       *pkg
	imports map[string]string
	fns     []*fn
	// direct says a call of a function of the module is a Hole, not the
	// texts it returns: in an operand of + (what it returns is a part that
	// may be there or not, "" when not), and where only the texts made in
	// place are asked for.
	direct bool
}

// unquote is a string literal's value.
func unquote(l *ast.BasicLit) (string, bool) {
	if l.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(l.Value)
	return s, err == nil
}

// text renders e as the operator reads it when it has one text that holds
// some of the source's own; else it is a Hole, and ok is false.
func (s scope) text(e ast.Expr, depth int) (t string, ok bool) {
	if ts := slices.Compact(s.texts(e, depth)); len(ts) == 1 && ts[0] != Hole {
		return ts[0], true
	}
	return Hole, false
}

// texts returns the texts e can be, as the operator reads them, that hold
// some of the source's own, each value the source does not hold a Hole:
// a string literal or constant; fmt.Sprintf, fmt.Errorf or errors.New of
// such a format; + of such parts and others; a variable of the function
// assigned such texts; a parameter of the function, given such texts by
// the package's calls of it. None when e holds no text of the source's.
func (s scope) texts(e ast.Expr, depth int) []string {
	if depth > maxDepth {
		return nil
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if v, ok := unquote(e); ok {
			return []string{v}
		}
	case *ast.ParenExpr:
		return s.texts(e.X, depth)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			in := s
			in.direct = true
			return joined(in.texts(e.X, depth), in.texts(e.Y, depth))
		}
	case *ast.Ident:
		return s.identTexts(e.Name, depth)
	case *ast.SelectorExpr:
		if v, ok := s.qualifiedConst(e); ok {
			return []string{v}
		}
	case *ast.CallExpr:
		return s.callTexts(e, depth)
	}
	return nil
}

// joined is the texts of x + y: each of xs followed by each of ys, a
// Hole for a side without any; none when both are without.
func joined(xs, ys []string) []string {
	if len(xs) == 0 && len(ys) == 0 {
		return nil
	}
	if len(xs) == 0 {
		xs = []string{Hole}
	}
	if len(ys) == 0 {
		ys = []string{Hole}
	}
	var out []string
	for _, x := range xs {
		for _, y := range ys {
			out = append(out, x+y)
		}
	}
	return out
}

// identTexts returns the texts of the identifier name: a constant of the
// package, the values a variable of the functions around is assigned, or
// those a parameter is given by the package's calls of its function.
func (s scope) identTexts(name string, depth int) []string {
	if v, ok := s.p.consts[name]; ok {
		return []string{v}
	}
	for i := len(s.fns) - 1; i >= 0; i-- {
		f := s.fns[i]
		if at := indexOf(f.params, name); at >= 0 {
			return s.paramTexts(f, at, depth)
		}
		if vals := assigned(f.node, name); len(vals) > 0 {
			var out []string
			for _, v := range vals {
				out = append(out, s.textsOrHole(v, depth+1)...)
			}
			return out
		}
	}
	return nil
}

// indexOf is the index of name in names, or -1.
func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// paramTexts returns the texts the package's calls of f give its
// parameter at.
func (s scope) paramTexts(f *fn, at int, depth int) []string {
	if f.name == "" || f.variadic && at == len(f.params)-1 {
		return nil
	}
	var out []string
	for _, c := range s.p.calls[f.name] {
		if at < len(c.call.Args) && c.call.Ellipsis == token.NoPos {
			out = append(out, c.in.textsOrHole(c.call.Args[at], depth+1)...)
		}
	}
	return out
}

// callTexts returns the texts of a call of fmt.Sprintf, fmt.Errorf or
// errors.New. A format that is a parameter of the function around, with
// its arguments the function's variadic parameter, is read at each of the
// package's calls of the function.
func (s scope) callTexts(call *ast.CallExpr, depth int) []string {
	switch s.callee(call) {
	case "errors.New":
		if len(call.Args) == 1 {
			return s.texts(call.Args[0], depth)
		}
	case "fmt.Sprintf", "fmt.Errorf":
		if len(call.Args) == 0 {
			return nil
		}
		if f, at, rest := s.forwarded(call); f != nil {
			var out []string
			for _, c := range s.p.calls[f.name] {
				if rest <= len(c.call.Args) && at < len(c.call.Args) {
					out = append(out, c.in.formatTexts(c.call.Args[at], c.call.Args[rest:], depth+1)...)
				}
			}
			return out
		}
		return s.formatTexts(call.Args[0], call.Args[1:], depth)
	}
	if f, in := s.funcOf(call); f != nil && !s.direct {
		return in.returned(f, depth+1)
	}
	return nil
}

// funcOf returns the function of the module that call calls, when its
// first result is a string or an error, with the scope of its body; else
// nil.
func (s scope) funcOf(call *ast.CallExpr) (*ast.FuncDecl, scope) {
	f := s.called(call)
	if f.decl == nil || f.decl.Type.Results == nil {
		return nil, s
	}
	if r, ok := f.decl.Type.Results.List[0].Type.(*ast.Ident); !ok || r.Name != "string" && r.Name != "error" {
		return nil, s
	}
	return f.decl, f.scope(s.m)
}

// errorMethodOf returns the Error method of the error type (T, *T) of the
// module that the function call calls returns first, with the scope of
// its body; else nil.
func (s scope) errorMethodOf(call *ast.CallExpr) (*ast.FuncDecl, scope) {
	f := s.called(call)
	if f.decl == nil || f.decl.Type.Results == nil {
		return nil, s
	}
	m := f.p.errorMethods[receiverType(f.decl.Type.Results.List[0].Type)]
	if m == nil {
		return nil, s
	}
	in := f.scope(s.m)
	in.fns = []*fn{newFn(m, nil)}
	return m, in
}

// called returns the function of the module that call calls: f(…) of the
// package, pkg.F(…) of another, or x.M(…) when M is the name of one
// method of the module only; a zero funcAt for any other.
func (s scope) called(call *ast.CallExpr) funcAt {
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		return s.p.funcs[fun.Name]
	case *ast.SelectorExpr:
		if x, ok := fun.X.(*ast.Ident); ok {
			if path, isPkg := s.imports[x.Name]; isPkg {
				if p := s.m.pkg(path); p != nil {
					return p.funcs[fun.Sel.Name]
				}
				return funcAt{}
			}
		}
		if ms := s.m.methods[fun.Sel.Name]; len(ms) == 1 {
			return ms[0]
		}
	}
	return funcAt{}
}

// assignedIn returns the values the innermost function around that
// assigns the variable name any assigns it.
func (s scope) assignedIn(name string) []ast.Expr {
	for i := len(s.fns) - 1; i >= 0; i-- {
		if vals := assigned(s.fns[i].node, name); len(vals) > 0 {
			return vals
		}
	}
	return nil
}

// returned returns the texts the function f (of the scope s, whose fns
// are f's) returns as its first result, and a Hole for a result without
// any; nil and "" are no result.
func (s scope) returned(f *ast.FuncDecl, depth int) []string {
	var out []string
	ast.Inspect(f.Body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) > 0 && !isNone(r.Results[0]) {
			out = append(out, s.textsOrHole(r.Results[0], depth)...)
		}
		return true
	})
	return out
}

// isNone reports whether e is nil or "".
func isNone(e ast.Expr) bool {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name == "nil"
	}
	l, ok := e.(*ast.BasicLit)
	return ok && l.Value == `""`
}

// textsOrHole is e's texts, or a Hole when it has none: each value a
// variable or a result can take counts, so that a text is shown in place
// of a value only when it is the one the value can be.
func (s scope) textsOrHole(e ast.Expr, depth int) []string {
	if ts := s.texts(e, depth); len(ts) > 0 {
		return ts
	}
	return []string{Hole}
}

// forwarded reports the function around whose parameters call's format
// and arguments are, as fmt.Sprintf(format, args...) in
// func(…, format string, args ...any): the function, the format's
// parameter and the first argument's; a nil fn for any other call.
func (s scope) forwarded(call *ast.CallExpr) (*fn, int, int) {
	if len(s.fns) == 0 || call.Ellipsis == token.NoPos || len(call.Args) != 2 {
		return nil, 0, 0
	}
	f := s.fns[len(s.fns)-1]
	format, fok := call.Args[0].(*ast.Ident)
	args, aok := call.Args[1].(*ast.Ident)
	if !fok || !aok || !f.variadic || f.name == "" || indexOf(f.params, args.Name) != len(f.params)-1 {
		return nil, 0, 0
	}
	at := indexOf(f.params, format.Name)
	if at < 0 {
		return nil, 0, 0
	}
	return f, at, len(f.params) - 1
}

// maxVariants bounds how many texts format makes of one format.
const maxVariants = 16

// formatTexts returns the texts of a format and its arguments: for each
// text the format can be, those format renders.
func (s scope) formatTexts(format ast.Expr, args []ast.Expr, depth int) []string {
	var out []string
	for _, f := range s.texts(format, depth) {
		out = append(out, s.format(f, args, depth)...)
	}
	return out
}

// format renders the format f with args: each verb replaced by its
// argument's text when the source holds just one (%q quoted), else by a
// Hole ("\"…\"" for %q); %% is a "%". When one argument only can be
// several texts (a variable assigned several, say), and no more than
// maxVariants, it renders one text for each.
func (s scope) format(f string, args []ast.Expr, depth int) []string {
	vals := make([][]string, len(args))
	multi := -1
	for i, a := range args {
		if vals[i] = unique(s.texts(a, depth+1)); len(vals[i]) <= 1 {
			continue
		}
		ch := s.choices(a, depth+1)
		switch {
		case len(ch) < 2:
			vals[i] = nil // a Hole
		case multi == -1 && len(ch) <= maxVariants:
			multi, vals[i] = i, ch
		default:
			multi = -2 // several: each a Hole
		}
	}
	if multi < 0 {
		return []string{s.render(f, vals, -1, 0)}
	}
	out := make([]string, len(vals[multi]))
	for k := range vals[multi] {
		out[k] = s.render(f, vals, multi, k)
	}
	return out
}

// choices returns the texts of the variable or parameter e when each of
// its values is text of the source's own, made where it is given (a
// literal, a constant, fmt.Sprintf: no call of another function, no
// value the source does not hold); else nil. A variable that takes a
// call's error, say, is no choice of texts: one of them would show a
// value it never takes with the others.
func (s scope) choices(e ast.Expr, depth int) []string {
	id, ok := e.(*ast.Ident)
	if !ok || depth > maxDepth {
		return nil
	}
	var vals []ast.Expr
	in := []scope{}
	for i := len(s.fns) - 1; i >= 0 && vals == nil; i-- {
		f := s.fns[i]
		if at := indexOf(f.params, id.Name); at >= 0 {
			if f.name == "" || f.variadic && at == len(f.params)-1 {
				return nil
			}
			for _, c := range s.p.calls[f.name] {
				if at >= len(c.call.Args) {
					return nil
				}
				vals, in = append(vals, c.call.Args[at]), append(in, c.in)
			}
			break
		}
		for _, v := range assigned(f.node, id.Name) {
			vals, in = append(vals, v), append(in, s)
		}
	}
	var out []string
	for i, v := range vals {
		direct := in[i]
		direct.direct = true
		ts := direct.texts(v, depth+1)
		if v == nil || len(ts) == 0 || slices.ContainsFunc(ts, func(t string) bool { return ownWords(t) == 0 }) {
			return nil
		}
		out = append(out, ts...)
	}
	return unique(out)
}

// unique is ts without repeats, in order.
func unique(ts []string) []string {
	var out []string
	for _, t := range ts {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// render writes the format f with the texts vals of its arguments: the
// one text of each, or of the argument multi its text pick; any other a
// Hole.
func (s scope) render(f string, vals [][]string, multi, pick int) string {
	var b strings.Builder
	arg := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("+-# 0123456789.*[]", f[j]) >= 0 {
			j++
		}
		if j == len(f) {
			b.WriteString(f[i:])
			break
		}
		verb := f[j]
		i = j
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		v := Hole
		if arg < len(vals) {
			switch {
			case arg == multi:
				v = vals[arg][pick]
			case len(vals[arg]) == 1:
				v = vals[arg][0]
			}
			arg++
		}
		switch {
		case verb == 'q':
			b.WriteString(`"` + v + `"`)
		case verb == 's' || verb == 'v' || verb == 'w':
			b.WriteString(v)
		default:
			b.WriteString(Hole)
		}
	}
	return b.String()
}

// qualifiedConst is the value of pkg.Name, a string constant of a package
// of the module.
func (s scope) qualifiedConst(e *ast.SelectorExpr) (string, bool) {
	x, ok := e.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	if p := s.m.pkg(s.imports[x.Name]); p != nil {
		v, ok := p.consts[e.Sel.Name]
		return v, ok
	}
	return "", false
}

// callee names the function call calls as "pkgpath.Name" when it is a
// function of an imported package ("fmt.Errorf", "log/slog.Warn"), else
// "".
func (s scope) callee(call *ast.CallExpr) string {
	return s.qualified(call.Fun)
}

// qualified names e as "pkgpath.Name" when it is a name of an imported
// package (pkg.Name), else "".
func (s scope) qualified(e ast.Expr) string {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	if p, ok := s.imports[x.Name]; ok {
		return p + "." + sel.Sel.Name
	}
	return ""
}

// assigned returns the values the function node assigns to the variable
// name (with =, := or var), in the source's order: nil for a value it
// cannot tell (one of several results of a call, a range's, an operator's
// such as +=), which texts reads as none.
func assigned(node ast.Node, name string) []ast.Expr {
	var vals []ast.Expr
	is := func(e ast.Expr) bool { id, ok := e.(*ast.Ident); return ok && id.Name == name }
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.RangeStmt:
			if n.Key != nil && is(n.Key) || n.Value != nil && is(n.Value) {
				vals = append(vals, nil)
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				switch {
				case !is(l):
				case len(n.Lhs) == len(n.Rhs) && (n.Tok == token.ASSIGN || n.Tok == token.DEFINE):
					vals = append(vals, n.Rhs[i])
				default:
					vals = append(vals, nil)
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				switch {
				case id.Name != name || len(n.Values) == 0: // var x T: the zero value, no text
				case len(n.Names) == len(n.Values):
					vals = append(vals, n.Values[i])
				default:
					vals = append(vals, nil)
				}
			}
		}
		return true
	})
	return vals
}

// tidy writes a message on one line, its spaces single, the Holes side by
// side joined into one.
func tidy(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for strings.Contains(s, Hole+Hole) {
		s = strings.ReplaceAll(s, Hole+Hole, Hole)
	}
	return s
}
