package errorsdoc

import (
	"cmp"
	"fmt"
	"go/ast"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Kind is why a message is in the reference.
type Kind int

// The kinds, in the order of their weight: a message found as more than
// one is the first.
const (
	// Stop is a fatal.Error's: the relay stops, or refuses to start.
	Stop Kind = iota
	// Check is a preflight.Problem's: check-config reports it, and run
	// --config refuses to start.
	Check
	// Act is an error that says what to do: a command's end, a session's,
	// a check's refusal.
	Act
	// Error is a line logged at error level.
	Error
	// Warn is a line logged at warn level.
	Warn
)

// String is the kind as the reference names it.
func (k Kind) String() string {
	switch k {
	case Stop:
		return "stops"
	case Check:
		return "check"
	case Act:
		return "fails"
	case Error:
		return "error"
	case Warn:
		return "warn"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Message is a message the relay can stop or warn with, as [Extract]
// finds it in the source.
type Message struct {
	// Package is its package's path in the module: "slot",
	// "relay/delivery/atleastonce".
	Package string
	// Kind is why it is in the reference.
	Kind Kind
	// Text is the message as the operator reads it, each value the source
	// does not hold a Hole.
	Text string
	// Pos is where the source makes it first, as file:line from the
	// module's root.
	Pos string
}

// mainPackage is the binary's package, whose imports Extract follows.
const mainPackage = "cmd/cdc-relay"

// MinActWords is how many words of its own (Holes aside) an error that
// says what to do needs to be in the reference: fewer ("--topic: …")
// prefix an error made elsewhere, which is taken where it is made.
const MinActWords = 4

// acts matches the text of an error that says what to do: a GRANT, an
// ALTER ROLE, a flag, a command of the relay.
var acts = regexp.MustCompile(`\bGRANT\b|\bALTER ROLE\b|(^|[\s(` + "`" + `'"])--[a-z][a-z0-9-]+|\bcdc-relay [a-z][a-z-]+`)

// found is a message found, where the source makes it.
type found struct {
	kind Kind
	at   ast.Node
	text string
}

// Extract returns the messages of the module at root (the directory of
// its go.mod), as the package's doc says which: sorted by package, then
// by where the source makes them, each package's text once.
func Extract(root string) ([]Message, error) {
	m, err := load(root, mainPackage)
	if err != nil {
		return nil, err
	}
	type item struct {
		n ast.Node
		s scope
	}
	var out []Message
	for _, p := range m.pkgs {
		var items []item
		for _, f := range p.files {
			m.walk(p, f, func(n ast.Node, s scope) { items = append(items, item{n, s}) })
		}
		for _, it := range items {
			for _, f := range it.s.visit(it.n) {
				at := m.fset.Position(f.at.Pos())
				rel, err := filepath.Rel(root, at.Filename)
				if err != nil {
					rel = at.Filename
				}
				pos := fmt.Sprintf("%s:%d", filepath.ToSlash(rel), at.Line)
				out = append(out, Message{Package: p.rel, Kind: f.kind, Text: tidy(f.text), Pos: pos})
			}
		}
	}
	return dedupe(out), nil
}

// visit returns the messages node n makes: a fatal.Error's, a
// preflight.Problem's, a log line's, an error's that says what to do.
func (s scope) visit(n ast.Node) []found {
	var out []found
	add := func(k Kind, texts []string) {
		for _, t := range texts {
			if ownWords(t) > 0 {
				out = append(out, found{kind: k, at: n, text: t})
			}
		}
	}
	switch n := n.(type) {
	case *ast.CompositeLit:
		if e := s.fatalErr(n); e != nil {
			add(Stop, s.stops(e))
		}
		if e := s.problemMsg(n); e != nil {
			add(Check, s.texts(e, 0))
		}
		if arr, ok := n.Type.(*ast.ArrayType); ok && s.isProblem(arr.Elt) {
			for _, elt := range n.Elts { // []Problem{{Msg: …}}: each its type elided
				if lit, ok := elt.(*ast.CompositeLit); ok && lit.Type == nil {
					add(Check, s.texts(msgOf(lit), 0))
				}
			}
		}
	case *ast.AssignStmt:
		for i, l := range n.Lhs {
			if i < len(n.Rhs) && s.isProblemMsg(l) {
				add(Check, s.texts(n.Rhs[i], 0))
			}
		}
	case *ast.CallExpr:
		if k, msg := s.logCall(n); msg != nil {
			add(k, s.texts(msg, 0))
			break
		}
		switch s.callee(n) {
		case "fmt.Errorf", "errors.New":
			for _, t := range s.texts(n, 0) {
				if acts.MatchString(t) && ownWords(t) >= MinActWords {
					add(Act, []string{t})
				}
			}
		}
	}
	return out
}

// ownWords counts the words of t that hold a letter, Holes aside.
func ownWords(t string) int {
	n := 0
	for _, w := range strings.Fields(strings.ReplaceAll(t, Hole, " ")) {
		if strings.IndexFunc(w, unicode.IsLetter) >= 0 {
			n++
		}
	}
	return n
}

// fatalErr is the error a fatal.Error literal marks, or nil when lit is
// not one.
func (s scope) fatalErr(lit *ast.CompositeLit) ast.Expr {
	if s.qualified(lit.Type) != s.m.path+"/internal/fatal.Error" || len(lit.Elts) != 1 {
		return nil
	}
	if kv, ok := lit.Elts[0].(*ast.KeyValueExpr); ok {
		return kv.Value
	}
	return lit.Elts[0]
}

// isProblem reports whether typ names preflight's Problem.
func (s scope) isProblem(typ ast.Expr) bool {
	if id, ok := typ.(*ast.Ident); ok {
		return s.p.rel == "preflight" && id.Name == "Problem"
	}
	return s.qualified(typ) == s.m.path+"/preflight.Problem"
}

// problemMsg is the Msg of a preflight.Problem literal, or nil when lit
// is not one or sets none.
func (s scope) problemMsg(lit *ast.CompositeLit) ast.Expr {
	if !s.isProblem(lit.Type) {
		return nil
	}
	return msgOf(lit)
}

// msgOf is the value a literal gives its field Msg, or nil.
func msgOf(lit *ast.CompositeLit) ast.Expr {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok && exprName(kv.Key) == "Msg" {
			return kv.Value
		}
	}
	return nil
}

// isProblemMsg reports whether l is p.Msg, p a variable of the function
// around assigned a preflight.Problem literal.
func (s scope) isProblemMsg(l ast.Expr) bool {
	sel, ok := l.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Msg" || len(s.fns) == 0 {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	for _, v := range assigned(s.fns[len(s.fns)-1].node, x.Name) {
		if lit, ok := v.(*ast.CompositeLit); ok && s.isProblem(lit.Type) {
			return true
		}
	}
	return false
}

// stops returns the texts of the error e that a fatal.Error marks: an
// error made in place or by a variable or parameter (texts), or a value of
// an error type of the package: the texts its Error method returns. Of
// the errors a function of the module returns, those that say what to do.
func (s scope) stops(e ast.Expr) []string {
	direct := s
	direct.direct = true
	out := direct.made(e)
	for _, t := range s.made(e) {
		if !slices.Contains(out, t) && acts.MatchString(t) {
			out = append(out, t)
		}
	}
	return out
}

// made is stops' texts, the functions of the module followed as s says;
// a value of a variable assigned what a function returns, of an error
// type of the module, is read in the type's Error method, as is a value
// made in place.
func (s scope) made(e ast.Expr) []string {
	if u, ok := e.(*ast.UnaryExpr); ok {
		e = u.X
	}
	if lit, ok := e.(*ast.CompositeLit); ok {
		if id, ok := lit.Type.(*ast.Ident); ok {
			if m := s.p.errorMethods[id.Name]; m != nil {
				in := s
				in.fns = []*fn{newFn(m, nil)}
				return in.returned(m, 0)
			}
		}
		return nil
	}
	var out []string
	if id, ok := e.(*ast.Ident); ok {
		for _, v := range s.assignedIn(id.Name) {
			if call, ok := v.(*ast.CallExpr); ok {
				if m, in := s.errorMethodOf(call); m != nil {
					out = append(out, in.returned(m, 0)...)
				}
			}
		}
	}
	return append(out, s.texts(e, 0)...)
}

// logCall returns the level and the message of a log line at warn or
// error level, or a nil message when call is not one: X.Warn(msg, …),
// X.Error(msg, …), X.WarnContext(ctx, msg, …), X.ErrorContext(ctx, msg,
// …), or X.Log(_, slog.LevelWarn or slog.LevelError, msg, …); X a value
// or package slog.
func (s scope) logCall(call *ast.CallExpr) (Kind, ast.Expr) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return 0, nil
	}
	if x, ok := sel.X.(*ast.Ident); ok {
		if p, isPkg := s.imports[x.Name]; isPkg && p != "log/slog" {
			return 0, nil // a package's function: http.Error, …
		}
	}
	arg := func(i int) ast.Expr {
		if i < len(call.Args) {
			return call.Args[i]
		}
		return nil
	}
	switch sel.Sel.Name {
	case "Warn":
		return Warn, arg(0)
	case "Error":
		return Error, arg(0)
	case "WarnContext":
		return Warn, arg(1)
	case "ErrorContext":
		return Error, arg(1)
	case "Log":
		switch s.qualified(arg(1)) {
		case "log/slog.LevelWarn":
			return Warn, arg(2)
		case "log/slog.LevelError":
			return Error, arg(2)
		}
	}
	return 0, nil
}

// dedupe sorts found by package and position, and keeps each text once,
// of the weightiest kind it was found as, where it was first found; then
// leaves out each text that another shows with a Hole where it has text
// (covered).
func dedupe(found []Message) []Message {
	slices.SortStableFunc(found, func(a, b Message) int {
		return cmp.Or(strings.Compare(a.Package, b.Package), comparePos(a.Pos, b.Pos))
	})
	var once []Message
	at := map[string]int{}
	for _, f := range found {
		if i, ok := at[f.Text]; ok {
			once[i].Kind = min(once[i].Kind, f.Kind)
			continue
		}
		at[f.Text] = len(once)
		once = append(once, f)
	}
	type general struct {
		text string
		re   *regexp.Regexp
	}
	var generals []general
	for _, m := range once {
		if re := shows(m.Text); re != nil {
			generals = append(generals, general{m.Text, re})
		}
	}
	var out []Message
	for _, m := range once {
		if !slices.ContainsFunc(generals, func(g general) bool { return g.text != m.Text && g.re.MatchString(m.Text) }) {
			out = append(out, m)
		}
	}
	return out
}

// shows returns the expression of the texts general shows, a text with
// Holes: each Hole stands for any text; nil for a text without a Hole.
func shows(general string) *regexp.Regexp {
	if !strings.Contains(general, Hole) {
		return nil
	}
	parts := strings.Split(general, Hole)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// covered reports whether general, a text with Holes, shows specific, a
// text it is not: each of its Holes stands for some text of specific's.
func covered(specific, general string) bool {
	re := shows(general)
	return re != nil && specific != general && re.MatchString(specific)
}

// comparePos orders positions file:line by file, then by line.
func comparePos(a, b string) int {
	af, al, _ := strings.Cut(a, ":")
	bf, bl, _ := strings.Cut(b, ":")
	return cmp.Or(strings.Compare(af, bf), cmp.Compare(len(al), len(bl)), strings.Compare(al, bl))
}
