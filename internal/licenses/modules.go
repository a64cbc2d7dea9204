package licenses

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// Target is one GOOS/GOARCH pair a release is built for.
type Target struct {
	OS, Arch string
}

// ReleaseTargets are the platforms `make release` builds.
func ReleaseTargets() []Target {
	return []Target{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}
}

// StdPath is the path under which [List] names the Go standard library.
const StdPath = "std"

// Module is one module linked into the binary, and where its files are.
type Module struct {
	Path    string
	Version string
	// Dir is the module's directory: in the module cache, or GOROOT/src's
	// parent for the standard library.
	Dir string
	// PackageDirs are the directories of the module's packages the binary
	// links, for any target, sorted; their license files are the module's
	// too.
	PackageDirs []string
}

// List returns, sorted by path, every module that `go list -deps` reaches
// from pkg (run in dir, with cgo off as the release builds it) for any of
// targets, other than the main module, and the Go standard library, whose
// version is the go line of the main module's go.mod (the oldest Go that
// builds it) and whose directory is GOROOT.
func List(ctx context.Context, dir, pkg string, targets []Target) ([]Module, error) {
	seen := map[string]Module{}
	for _, t := range targets {
		mods, err := listTarget(ctx, dir, pkg, t)
		if err != nil {
			return nil, err
		}
		for _, m := range mods {
			m.PackageDirs = append(seen[m.Path].PackageDirs, m.PackageDirs...)
			seen[m.Path] = m
		}
	}
	std, err := standardLibrary(ctx, dir)
	if err != nil {
		return nil, err
	}
	seen[std.Path] = std
	mods := make([]Module, 0, len(seen))
	for _, m := range seen {
		m.PackageDirs = sortedUnique(m.PackageDirs)
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods, nil
}

// sortedUnique returns s sorted, without repeats.
func sortedUnique(s []string) []string {
	sort.Strings(s)
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// listFormat prints, for each package of a non-main module, the module's
// path, version and directory (a replacement's, when it is replaced), and
// the package's directory.
const listFormat = `{{with .Module}}{{if not .Main}}{{.Path}}	` +
	`{{with .Replace}}{{.Version}}	{{.Dir}}{{else}}{{.Version}}	{{.Dir}}{{end}}	{{$.Dir}}{{end}}{{end}}`

// listTarget returns the modules of pkg's dependencies for one target,
// with repeats.
func listTarget(ctx context.Context, dir, pkg string, t Target) ([]Module, error) {
	out, err := goCommand(ctx, dir, []string{"GOOS=" + t.OS, "GOARCH=" + t.Arch},
		"list", "-deps", "-f", listFormat, pkg)
	if err != nil {
		return nil, fmt.Errorf("listing the modules of %s for %s/%s: %w", pkg, t.OS, t.Arch, err)
	}
	var mods []Module
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 || f[2] == "" || f[3] == "" {
			return nil, fmt.Errorf("module %q of %s for %s/%s has no directory: run `go mod download` and try again", f[0], pkg, t.OS, t.Arch)
		}
		mods = append(mods, Module{Path: f[0], Version: f[1], Dir: f[2], PackageDirs: []string{f[3]}})
	}
	return mods, sc.Err()
}

// standardLibrary returns the Go standard library as a module: GOROOT, at
// the main module's go line.
func standardLibrary(ctx context.Context, dir string) (Module, error) {
	root, err := goCommand(ctx, dir, nil, "env", "GOROOT")
	if err != nil {
		return Module{}, fmt.Errorf("finding GOROOT: %w", err)
	}
	goLine, err := goCommand(ctx, dir, nil, "list", "-m", "-f", "{{.GoVersion}}")
	if err != nil {
		return Module{}, fmt.Errorf("reading go.mod's go line: %w", err)
	}
	return Module{
		Path:    StdPath,
		Version: "go" + strings.TrimSpace(string(goLine)),
		Dir:     strings.TrimSpace(string(root)),
	}, nil
}

// goCommand runs the go command in dir with cgo off and env added, and
// returns its standard output; its error carries the command's stderr.
func goCommand(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
