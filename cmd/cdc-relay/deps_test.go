package main

import (
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode fails when the cdc-relay binary, built as
// `make build` builds it, depends on package testing or on one of the
// repository's test helpers: test code belongs in packages only tests
// import (such as internal/pgtemp/pgtemptest).
func TestBinaryLinksNoTestCode(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if testOnly(pkg) {
			t.Errorf("the binary depends on %s, which only tests may import", pkg)
		}
	}
}

// testOnly reports whether an import path is test code: package testing
// and its subpackages, or a helper of this module whose name starts or
// ends with "test" (pgtemptest, kafkatest, testcert).
func testOnly(pkg string) bool {
	if pkg == "testing" || strings.HasPrefix(pkg, "testing/") {
		return true
	}
	const module = "github.com/cdc-relay/cdc-relay/"
	name := path.Base(pkg)
	return strings.HasPrefix(pkg, module) && (strings.HasPrefix(name, "test") || strings.HasSuffix(name, "test"))
}
