package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeBuildStampsTheTag does what a release does: in a clone of this
// repository's HEAD, `git tag v0.5.0`, `make build`, then
// `./bin/cdc-relay --version` says v0.5.0 and the commit: the Makefile's
// LDFLAGS reach this package, whatever Go's own VCS stamp (off in CI,
// GOFLAGS=-buildvcs=false) records.
func TestMakeBuildStampsTheTag(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: building the binary takes up to a minute")
	}
	needGit(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: this test runs `make build`")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if top, err := exec.Command("git", "-C", root, "rev-parse", "--show-toplevel").Output(); err != nil || !sameDir(strings.TrimSpace(string(top)), root) {
		t.Skip("the source is not a git checkout: nothing to clone and tag")
	}
	clone := filepath.Join(t.TempDir(), "cdc-relay")
	git(t, root, "clone", "-q", root, clone)
	git(t, clone, "tag", "v0.5.0")
	commit := git(t, clone, "rev-parse", "HEAD")

	build := exec.CommandContext(t.Context(), "make", "build")
	build.Dir, build.Env = clone, makeEnv()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(clone, "bin", "cdc-relay"), "--version").Output()
	if err != nil {
		t.Fatalf("cdc-relay --version: %v\n%s", err, exitStderr(err))
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[0] != "cdc-relay" || fields[1] != "v0.5.0" || !strings.Contains(string(out), "commit "+commit+",") {
		t.Errorf("cdc-relay --version said %q, want \"cdc-relay v0.5.0 (commit %s, …)\"", out, commit)
	}
}

// makeEnv is the environment without the make variables a caller may have
// set (`make unit` passes its own to this test), so that the Makefile
// computes the version itself.
func makeEnv() []string {
	var env []string
	for _, kv := range gitEnv() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "VERSION", "COMMIT", "DIRTY", "LDFLAGS", "BIN", "MAKEFLAGS", "MFLAGS", "MAKELEVEL":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// sameDir says a and b name one directory.
func sameDir(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}
