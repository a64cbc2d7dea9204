package outbox

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/cdc-relay/cdc-relay/status"
)

// TestKafkaPublisherIsTheStatusTables requires KafkaPublisher to be the
// status package's name of Kafka's publisher, declared as that constant
// and not as a literal of its own: the config file's name of the
// publisher and the status table's publisher column must not drift apart.
func TestKafkaPublisherIsTheStatusTables(t *testing.T) {
	if KafkaPublisher != status.KafkaPublisher {
		t.Fatalf("outbox.KafkaPublisher is %q, status.KafkaPublisher %q", KafkaPublisher, status.KafkaPublisher)
	}
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range pkgs["outbox"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if name.Name != "KafkaPublisher" || i >= len(vs.Values) {
					continue
				}
				found = true
				if !isStatusKafkaPublisher(vs.Values[i]) {
					t.Errorf("outbox.KafkaPublisher is declared as %T, not as status.KafkaPublisher: status owns the name", vs.Values[i])
				}
			}
			return true
		})
	}
	if !found {
		t.Error("no declaration of KafkaPublisher among the package's files")
	}
}

// isStatusKafkaPublisher reports whether e is status.KafkaPublisher.
func isStatusKafkaPublisher(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "status" && sel.Sel.Name == "KafkaPublisher"
}
