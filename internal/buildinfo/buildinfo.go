package buildinfo

import (
	"regexp"
	"runtime"
	"runtime/debug"
)

// The values the linker stamps (see the package's doc); they are never
// written at run time.
var (
	version string
	commit  string
	dirty   string // "true" or "false"
)

// Unknown is the version of a binary that was given none and whose main
// module has none: a development build.
const Unknown = "dev"

// Info is what a binary says of its build.
type Info struct {
	// Version is a semantic version, "v0.5.0" or
	// "v0.4.1-dev.3+g8d66468ba558" (scripts/version.sh), or Unknown.
	Version string `json:"version"`
	// Commit is the git commit: its full hash when stamped, 12 hex digits
	// when read from a pseudo-version, empty when not known.
	Commit string `json:"commit,omitempty"`
	// Dirty says the tree had uncommitted changes to tracked files.
	Dirty bool `json:"dirty,omitempty"`
	// GoVersion is runtime.Version(), as "go1.26.8".
	GoVersion string `json:"go_version"`
	// Platform is GOOS/GOARCH, as "linux/amd64".
	Platform string `json:"platform"`
}

// Get returns the running binary's Info: the stamped values, else what Go
// recorded in the binary. It never fails.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(stamp{version: version, commit: commit, dirty: dirty}, bi)
}

// stamp is what the linker was given.
type stamp struct{ version, commit, dirty string }

// resolve returns the Info of a binary stamped with s and carrying bi (nil
// when it carries none).
func resolve(s stamp, bi *debug.BuildInfo) Info {
	info := Info{Version: s.version, Commit: s.commit, Dirty: s.dirty == "true",
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		bi = &debug.BuildInfo{}
	}
	if info.Version == "" {
		info.Version = moduleVersion(bi)
	}
	if info.Commit == "" {
		info.Commit, info.Dirty = recordedCommit(bi)
	}
	return info
}

// moduleVersion is the main module's version, or Unknown for a module
// built from its own source tree ("(devel)").
func moduleVersion(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return Unknown
}

// pseudoRevision matches a pseudo-version's commit: the 12 hex digits after
// its UTC time, as in v0.0.0-20261125030616-2b7a81f3da8a (a "+dirty" or
// "+incompatible" may follow).
var pseudoRevision = regexp.MustCompile(`[-.][0-9]{14}-([0-9a-f]{12})(\+[0-9A-Za-z.-]+)?$`)

// recordedCommit is the commit Go recorded, and whether its tree was
// modified: vcs.revision and vcs.modified, else a pseudo-version's commit.
func recordedCommit(bi *debug.BuildInfo) (commit string, modified bool) {
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if commit == "" {
		if m := pseudoRevision.FindStringSubmatch(bi.Main.Version); m != nil {
			commit = m[1]
		}
	}
	return commit, modified
}
