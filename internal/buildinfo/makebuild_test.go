package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeBuildStampsTheTag does what a release does: in a clone of this
// repository's HEAD without its tags (so that neither an existing v0.5.0
// nor a higher tag on HEAD interferes), `git tag v0.5.0`, `make build`,
// then `./bin/cdc-relay --version` says v0.5.0 and the commit: the
// Makefile's LDFLAGS reach this package, whatever Go's own VCS stamp (off
// in CI, GOFLAGS=-buildvcs=false) records, and a VERSION or COMMIT in the
// environment does not win.
func TestMakeBuildStampsTheTag(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: building the binary takes up to a minute")
	}
	clone := cloneWithoutTags(t)
	git(t, clone, "tag", "v0.5.0")
	commit := git(t, clone, "rev-parse", "HEAD")

	build := exec.CommandContext(t.Context(), "make", "build")
	build.Dir, build.Env = clone, append(makeEnv(), "VERSION=v9.9.9-stale", "COMMIT=stale")
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

// TestMakefileStamps reads, with make -n, the stamps `make build` would
// pass: only the command line overrides VERSION and COMMIT, and whether
// the tree is modified comes from git, not from the version's suffix.
func TestMakefileStamps(t *testing.T) {
	clone := cloneWithoutTags(t)
	git(t, clone, "tag", "v0.5.0")
	commit := git(t, clone, "rev-parse", "HEAD")
	tests := []struct {
		name   string
		env    []string // in the environment
		args   []string // on the command line
		modify bool     // a tracked file modified
		want   [3]string
	}{
		{"computed", nil, nil, false, [3]string{"v0.5.0", commit, "false"}},
		{"the environment is ignored", []string{"VERSION=v9.9.9", "COMMIT=stale"}, nil, false, [3]string{"v0.5.0", commit, "false"}},
		{"the command line wins", nil, []string{"VERSION=v0.5.1", "COMMIT=abc"}, false, [3]string{"v0.5.1", "abc", "false"}},
		{"dirty from git, not the version's suffix", nil, []string{"VERSION=v0.5.0.dirty"}, false, [3]string{"v0.5.0.dirty", commit, "false"}},
		{"a modified tree", nil, []string{"VERSION=v0.5.0"}, true, [3]string{"v0.5.0", commit, "true"}},
		{"a modified tree, computed", nil, nil, true, [3]string{"v0.5.0+g" + commit[:12] + ".dirty", commit, "true"}},
	}
	readme := filepath.Join(clone, "README.md")
	original, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := original
			if tt.modify {
				content = append(append([]byte{}, original...), "modified\n"...)
			}
			writeFile(t, readme, string(content))
			if got := makeStamps(t, clone, tt.env, tt.args); got != tt.want {
				t.Errorf("version, commit, dirty = %q, want %q", got, tt.want)
			}
		})
	}
}

// makeStamps is the version, commit and dirty flag `make -n build` in dir
// would stamp.
func makeStamps(t *testing.T, dir string, env, args []string) [3]string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "make", append([]string{"-n", "build"}, args...)...)
	cmd.Dir, cmd.Env = dir, append(makeEnv(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, exitStderr(err))
	}
	var stamps [3]string
	for _, field := range strings.Fields(string(out)) {
		for i, name := range []string{"version", "commit", "dirty"} {
			if v, ok := strings.CutPrefix(field, "github.com/cdc-relay/cdc-relay/internal/buildinfo."+name+"="); ok {
				stamps[i] = strings.TrimSuffix(v, "'")
			}
		}
	}
	return stamps
}

// cloneWithoutTags clones this repository's HEAD with no tags into a
// temporary directory, or skips the test where git, make or a checkout is
// missing.
func cloneWithoutTags(t *testing.T) string {
	t.Helper()
	needGit(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: this test runs the Makefile")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if top, err := exec.Command("git", "-C", root, "rev-parse", "--show-toplevel").Output(); err != nil || !sameDir(strings.TrimSpace(string(top)), root) {
		t.Skip("the source is not a git checkout: nothing to clone and tag")
	}
	clone := filepath.Join(t.TempDir(), "cdc-relay")
	git(t, root, "clone", "-q", "--no-tags", root, clone)
	if tags := git(t, clone, "tag", "--list"); tags != "" {
		t.Fatalf("the clone has tags %q", tags)
	}
	return clone
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
