package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

const hash = "2b7a81f3da8a5d0c1e4f6a7b8c9d0e1f2a3b4c5d"

// TestResolve: stamped values win; without them, what Go recorded: the
// module's version from `go install …@v0.5.0`, the commit from the VCS
// stamp or a pseudo-version; nothing known is "dev" and no commit.
func TestResolve(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "-trimpath", Value: "true"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name    string
		stamp   stamp
		bi      *debug.BuildInfo
		version string
		commit  string
		dirty   bool
	}{
		{"make build", stamp{"v0.5.0", hash, "false"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"v0.5.0", hash, false},
		{"make build of a modified tree", stamp{"v0.5.0+g2b7a81f3da8a.dirty", hash, "true"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0000", "false")},
			"v0.5.0+g2b7a81f3da8a.dirty", hash, true},
		{"make build outside a checkout", stamp{"dev", "", "false"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"dev", "", false},
		{"go install at a tag", stamp{}, &debug.BuildInfo{Main: debug.Module{Path: "github.com/cdc-relay/cdc-relay", Version: "v0.5.0"}},
			"v0.5.0", "", false},
		{"go install at a commit", stamp{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.5.1-0.20261125030616-2b7a81f3da8a"}},
			"v0.5.1-0.20261125030616-2b7a81f3da8a", "2b7a81f3da8a", false},
		{"go install before any tag", stamp{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125030616-2b7a81f3da8a"}},
			"v0.0.0-20261125030616-2b7a81f3da8a", "2b7a81f3da8a", false},
		{"go build in a checkout, VCS stamped", stamp{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.5.1-0.20261125030616-2b7a81f3da8a+dirty"}, Settings: vcs(hash, "true")},
			"v0.5.1-0.20261125030616-2b7a81f3da8a+dirty", hash, true},
		{"go build, -buildvcs=false", stamp{}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"dev", "", false},
		{"no build information", stamp{}, nil, "dev", "", false},
		{"a version that is not a pseudo-version", stamp{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.5.0-rc.1"}},
			"v0.5.0-rc.1", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolve(tt.stamp, tt.bi)
			if got.Version != tt.version || got.Commit != tt.commit || got.Dirty != tt.dirty {
				t.Errorf("version %q, commit %q, dirty %v; want %q, %q, %v", got.Version, got.Commit, got.Dirty, tt.version, tt.commit, tt.dirty)
			}
			if got.GoVersion != runtime.Version() || got.Platform != runtime.GOOS+"/"+runtime.GOARCH {
				t.Errorf("Go %q on %q, want %q on %s/%s", got.GoVersion, got.Platform, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			}
		})
	}
}

// TestGetUnstamped: a test binary is built without the stamps, from the
// module's own tree, so it says "dev", and the Go that built it.
func TestGetUnstamped(t *testing.T) {
	got := Get()
	if got.Version != Unknown || got.GoVersion != runtime.Version() {
		t.Errorf("Get() = %+v, want version %q and Go %s", got, Unknown, runtime.Version())
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		info Info
		want string
	}{
		{Info{Version: "v0.5.0", Commit: hash, GoVersion: "go1.26.8", Platform: "linux/amd64"},
			"v0.5.0 (commit " + hash + ", go1.26.8, linux/amd64)"},
		{Info{Version: "v0.5.0+g2b7a81f3da8a.dirty", Commit: hash, Dirty: true, GoVersion: "go1.26.8", Platform: "darwin/arm64"},
			"v0.5.0+g2b7a81f3da8a.dirty (commit " + hash + ", dirty, go1.26.8, darwin/arm64)"},
		{Info{Version: "dev", GoVersion: "go1.26.8", Platform: "linux/arm64"},
			"dev (commit unknown, go1.26.8, linux/arm64)"},
	}
	for _, tt := range tests {
		if got := tt.info.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestShortCommit(t *testing.T) {
	for in, want := range map[string]string{hash: "2b7a81f3da8a", "2b7a81f3da8a": "2b7a81f3da8a", "": ""} {
		if got := (Info{Commit: in}).ShortCommit(); got != want {
			t.Errorf("ShortCommit of %q = %q, want %q", in, got, want)
		}
	}
}
