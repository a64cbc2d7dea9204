package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// script is scripts/version.sh, from this package's directory.
const script = "../../scripts/version.sh"

// TestVersionScript runs scripts/version.sh in throwaway git repositories:
// a tag at HEAD, commits after one, pre-release tags, tags that are not
// versions, no tag, uncommitted changes, no checkout. In want, {hash} is
// HEAD's 12-digit hash.
func TestVersionScript(t *testing.T) {
	needGit(t)
	tests := []struct {
		name  string
		steps []string // "commit", "tag NAME", "atag NAME" (annotated), "branch NAME", "switch NAME", "merge NAME", "modify", "untracked"
		want  string
	}{
		{"tagged and clean", []string{"commit", "tag v0.5.0"}, "v0.5.0"},
		{"an annotated tag", []string{"commit", "atag v0.5.0"}, "v0.5.0"},
		{"commits after a tag", []string{"commit", "tag v0.4.0", "commit", "commit", "commit"}, "v0.4.1-dev.3+g{hash}"},
		{"a pre-release tag", []string{"commit", "tag v0.5.0-rc.1"}, "v0.5.0-rc.1"},
		{"commits after a pre-release tag", []string{"commit", "tag v0.5.0-rc.1", "commit", "commit"}, "v0.5.0-rc.1.dev.2+g{hash}"},
		{"a release and its pre-release on one commit", []string{"commit", "tag v0.5.0-rc.2", "tag v0.5.0", "tag v0.5.0-rc.10"}, "v0.5.0"},
		{"pre-releases on one commit: the highest", []string{"commit", "tag v0.5.0-rc.2", "tag v0.5.0-rc.10"}, "v0.5.0-rc.10"},
		{"a release and the next's pre-release on one commit", []string{"commit", "tag v0.5.0", "tag v0.5.1-rc.1", "tag v0.4.9"}, "v0.5.1-rc.1"},
		{"versions on one commit compare by number", []string{"commit", "tag v0.9.0", "tag v0.10.0"}, "v0.10.0"},
		{"the highest tag, also the nearest", []string{"commit", "tag v0.3.0", "commit", "tag v0.4.0", "commit"}, "v0.4.1-dev.1+g{hash}"},
		{"a lower tag nearer than the highest", []string{"commit", "tag v0.5.0", "commit", "tag v0.4.3", "commit"}, "v0.5.1-dev.2+g{hash}"},
		{"a maintenance branch merged after the release",
			[]string{"commit", "tag v0.4.2", "branch maint", "commit", "tag v0.5.0",
				"switch maint", "commit", "commit", "commit", "tag v0.4.3", "switch main", "merge maint"},
			"v0.5.1-dev.4+g{hash}"},
		{"tags that are not versions are ignored",
			[]string{"commit", "tag v0.4.0", "commit", "tag v0.5", "tag v0.5.0.1", "tag release-1", "tag v01.5.0", "tag 0.5.0", "tag v0.5.0+build"},
			"v0.4.1-dev.1+g{hash}"},
		{"no tag", []string{"commit", "commit"}, "v0.0.0-dev.2+g{hash}"},
		{"only tags that are not versions", []string{"commit", "tag latest"}, "v0.0.0-dev.1+g{hash}"},
		{"modified at a tag", []string{"commit", "tag v0.5.0", "modify"}, "v0.5.0+g{hash}.dirty"},
		{"modified after a tag", []string{"commit", "tag v0.4.0", "commit", "modify"}, "v0.4.1-dev.1+g{hash}.dirty"},
		{"modified, no tag", []string{"commit", "modify"}, "v0.0.0-dev.1+g{hash}.dirty"},
		{"an untracked file is not a change", []string{"commit", "tag v0.5.0", "untracked"}, "v0.5.0"},
		{"no commit yet", nil, "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			initRepo(t, dir)
			for i, step := range tt.steps {
				runStep(t, dir, i, step)
			}
			want := tt.want
			if strings.Contains(want, "{hash}") {
				want = strings.ReplaceAll(want, "{hash}", git(t, dir, "rev-parse", "--short=12", "HEAD"))
			}
			got, warning := runScript(t, dir)
			if got != want {
				t.Errorf("after %v: %q, want %q", tt.steps, got, want)
			}
			if warning != "" {
				t.Errorf("after %v: warned %q, want no warning", tt.steps, warning)
			}
		})
	}
}

// TestVersionScriptOutsideACheckout: a directory that is not the top of a
// git checkout is "dev", even inside another checkout.
func TestVersionScriptOutsideACheckout(t *testing.T) {
	needGit(t)
	plain := t.TempDir()
	repo := t.TempDir()
	initRepo(t, repo)
	runStep(t, repo, 0, "commit")
	runStep(t, repo, 1, "tag v0.5.0")
	sub := filepath.Join(repo, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{plain, sub, filepath.Join(plain, "missing")} {
		if got := versionOf(t, dir); got != "dev" {
			t.Errorf("in %s: %q, want dev", dir, got)
		}
	}
}

// TestVersionScriptWarns: where the version may be wrong, stdout is still
// the version only, and stderr one line saying what to do: a shallow
// clone lacks the tags before its depth; a checkout git refuses (another
// user's: "dubious ownership", or broken) is dev.
func TestVersionScriptWarns(t *testing.T) {
	needGit(t)
	repo := t.TempDir()
	initRepo(t, repo)
	for i, step := range []string{"commit", "tag v0.5.0", "commit"} {
		runStep(t, repo, i, step)
	}
	shallow := filepath.Join(t.TempDir(), "shallow")
	git(t, repo, "clone", "-q", "--depth", "1", "file://"+repo, shallow)
	broken := t.TempDir()
	writeFile(t, filepath.Join(broken, ".git"), "gitdir: "+filepath.Join(broken, "missing")+"\n")
	tests := []struct {
		name, dir   string
		env         []string
		wantVersion string // {hash} is the shallow clone's HEAD
		wantWarning string
	}{
		{"a shallow clone", shallow, nil, "v0.0.0-dev.1+g{hash}", "git fetch --tags --unshallow"},
		{"another user's checkout", repo, []string{"GIT_TEST_ASSUME_DIFFERENT_OWNER=1"}, "dev", "git config --global --add safe.directory " + realPath(t, repo)},
		{"a .git that git cannot read", broken, nil, "dev", "git config --global --add safe.directory " + realPath(t, broken)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := strings.ReplaceAll(tt.wantVersion, "{hash}", git(t, shallow, "rev-parse", "--short=12", "HEAD"))
			version, warning := runScript(t, tt.dir, tt.env...)
			if version != want {
				t.Errorf("version %q, want %q", version, want)
			}
			if !strings.Contains(warning, tt.wantWarning) || strings.Count(warning, "\n") != 0 {
				t.Errorf("warning %q, want one line saying %q", warning, tt.wantWarning)
			}
		})
	}
}

// realPath is path with its symbolic links resolved, as pwd -P says it.
func realPath(t *testing.T, path string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// TestVersionScriptWithoutGit: with no git on $PATH, "dev".
func TestVersionScriptWithoutGit(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: scripts/version.sh needs it")
	}
	// A $PATH of the tools the script uses, without git.
	bin := t.TempDir()
	for _, tool := range []string{"dirname", "grep", "sort", "head"} {
		if p, err := exec.LookPath(tool); err == nil {
			if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command(bash, script, t.TempDir())
	cmd.Env = append(os.Environ(), "PATH="+bin)
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "dev" {
		t.Errorf("without git: %q, %v; want dev", out, err)
	}
}

// runStep does one step of a repository's history in dir; i numbers its
// commits' contents.
func runStep(t *testing.T, dir string, i int, step string) {
	t.Helper()
	verb, arg, _ := strings.Cut(step, " ")
	switch verb {
	case "commit":
		writeFile(t, filepath.Join(dir, "file"), strings.Repeat("x", i+1))
		git(t, dir, "add", "file")
		git(t, dir, "commit", "-q", "-m", "commit "+step)
	case "tag":
		git(t, dir, "tag", arg)
	case "branch":
		git(t, dir, "branch", arg)
	case "switch":
		git(t, dir, "checkout", "-q", arg)
	case "merge":
		git(t, dir, "merge", "-q", "--no-ff", "-s", "ours", "-m", "merge "+arg, arg) // history only: keep this branch's file
	case "atag":
		git(t, dir, "tag", "-a", "-m", "release "+arg, arg)
	case "modify":
		writeFile(t, filepath.Join(dir, "file"), "modified")
	case "untracked":
		writeFile(t, filepath.Join(dir, "new"), "new")
	default:
		t.Fatalf("unknown step %q", step)
	}
}

// versionOf runs the script on dir and returns its stdout.
func versionOf(t *testing.T, dir string) string {
	t.Helper()
	version, _ := runScript(t, dir)
	return version
}

// runScript runs the script on dir and returns its stdout and stderr.
func runScript(t *testing.T, dir string, env ...string) (version, warning string) {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd := exec.Command(script, dir)
	cmd.Env = append(gitEnv(), env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", script, dir, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String())
}

// initRepo makes dir an empty git repository whose branch is main.
func initRepo(t *testing.T, dir string) {
	t.Helper()
	git(t, dir, "init", "-q")
	git(t, dir, "symbolic-ref", "HEAD", "refs/heads/main")
}

// git runs git in dir, with no user or system configuration, and returns
// its output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, gitEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, exitStderr(err))
	}
	return strings.TrimSpace(string(out))
}

// gitEnv is the environment without the user's or the system's git
// configuration, with an author for commits.
func gitEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com")
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: scripts/version.sh reads the version from git")
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exitStderr is what a failed command wrote to stderr.
func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
