package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// writeInputs writes s's docs, binaries and SBOMs into dir and returns
// build's arguments for them, the output being out.
func writeInputs(t *testing.T, s Spec, dir, out string) []string {
	t.Helper()
	args := []string{"-version", s.Version, "-revision", s.Revision, "-created", strconv.FormatInt(testCreated.Unix(), 10), "-o", out}
	for _, d := range s.Docs {
		path := filepath.Join(dir, d.Name)
		if err := os.WriteFile(path, d.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-doc", path)
	}
	for _, p := range s.Platforms {
		bin := filepath.Join(dir, p.Arch+".bin")
		sbom := filepath.Join(dir, p.Arch+".cdx.json")
		if err := os.WriteFile(bin, p.Binary, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sbom, p.SBOM, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p.String()+"="+bin+","+sbom)
	}
	return args
}

// runCmd runs the command line args and returns its exit code, stdout and
// stderr.
func runCmd(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestBuildCommandIsReproducible: build twice, into two directories, from
// inputs in two others, gives the same bytes, which are Layout's of the
// same spec.
func TestBuildCommandIsReproducible(t *testing.T) {
	s := testSpec()
	var outs [][]byte
	for range 2 {
		dir := t.TempDir()
		out := filepath.Join(t.TempDir(), "cdc-relay-v0.5.0-oci.tar")
		if code, _, stderr := runCmd(append([]string{"build"}, writeInputs(t, s, dir, out)...)...); code != 0 {
			t.Fatalf("build: exit %d: %s", code, stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, data)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatalf("two builds differ: sha256 %x and %x", sha256.Sum256(outs[0]), sha256.Sum256(outs[1]))
	}
	if !bytes.Equal(outs[0], testLayout(t, s)) {
		t.Errorf("the command's tar is not Layout's of the same spec")
	}
}

func TestBuildCommandErrors(t *testing.T) {
	s := testSpec()
	dir := t.TempDir()
	good := writeInputs(t, s, dir, filepath.Join(dir, "out.tar"))
	with := func(flag, value string) []string {
		args := slices.Clone(good)
		i := slices.Index(args, flag)
		args[i+1] = value
		return args
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no version", with("-version", "0.5.0"), 2, "want the release's version"},
		{"short commit", with("-revision", "abc123"), 2, "want a full commit hash"},
		{"no output", with("-o", ""), 2, "-o: name the tar to write"},
		{"time not a number", with("-created", "2026-11-29"), 2, "seconds since 1970"},
		{"one platform", good[:len(good)-1], 0, ""},
		{"no platform at all", slices.DeleteFunc(slices.Clone(good), func(a string) bool { return strings.Contains(a, "=") }), 2, "name at least one platform"},
		{"darwin", append(slices.Clone(good), "darwin/arm64=a,b"), 2, "darwin/arm64 is not one of linux/amd64, linux/arm64"},
		{"no SBOM", append(slices.Clone(good[:len(good)-1]), "linux/amd64="+filepath.Join(dir, "amd64.bin")), 2, "want OS/ARCH=BINARY,SBOM"},
		{"twice", append(slices.Clone(good), good[len(good)-1]), 2, "named twice"},
		{"missing binary", append(slices.Clone(good[:len(good)-2]), "linux/amd64=/nonexistent,/nonexistent"), 1, "linux/amd64's binary: open /nonexistent"},
		{"missing doc", with("-doc", "/nonexistent/LICENSE"), 1, "-doc: open /nonexistent/LICENSE"},
		{"unknown flag", append([]string{"-x"}, good...), 2, "flag provided but not defined: -x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCmd(append([]string{"build"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.want)
			}
			if tt.code == 2 && !strings.Contains(stderr, "Run 'go run . build -h'") {
				t.Errorf("stderr %q: want the hint at build -h", stderr)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	tests := []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{[]string{"-h"}, 0, "Commands:", ""},
		{nil, 2, "", "Commands:"},
		{[]string{"pull"}, 2, "", `no command "pull": the commands are build and push`},
		{[]string{"build", "-h"}, 0, "Usage: go run . build", ""},
		{[]string{"build", "--help"}, 0, "-repository NAME", ""},
		{[]string{"push", "-h"}, 0, "credential helper", ""},
		{[]string{"push", "x.tar"}, 2, "", "at least one name"},
		{[]string{"push", "x.tar", "cdc-relay:v0.5.0"}, 2, "", "want a whole name with its registry and tag"},
		{[]string{"push", "x.tar", "ghcr.io/o/cdc-relay"}, 2, "", `"ghcr.io/o/cdc-relay" has no tag`},
		{[]string{"push", "/nonexistent.tar", "ghcr.io/o/cdc-relay:v1"}, 1, "", "no such file or directory: build it with make release"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCmd(tt.args...)
		if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.errs) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, stdout, stderr, tt.code, tt.stdout, tt.errs)
		}
	}
}

// TestPushToARegistry pushes a layout to a registry served in the test on
// loopback, with two tags, and reads the index back by each.
func TestPushToARegistry(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no docker config: anonymous
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("REGISTRY_AUTH_FILE", "")
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	s := testSpec()
	tarPath := filepath.Join(t.TempDir(), "oci.tar")
	if err := os.WriteFile(tarPath, testLayout(t, s), 0o644); err != nil {
		t.Fatal(err)
	}
	refs := []string{host + "/team/cdc-relay:v0.5.0", host + "/team/cdc-relay:latest"}
	code, stdout, stderr := runCmd(append([]string{"push", tarPath}, refs...)...)
	if code != 0 {
		t.Fatalf("push: exit %d: %s", code, stderr)
	}
	want := buildTestIndex(t, s)
	wantDigest, err := want.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "pushed "+refs[0]) || !strings.Contains(stdout, "tagged "+refs[1]) ||
		!strings.Contains(stdout, host+"/team/cdc-relay@"+wantDigest.String()) {
		t.Errorf("push printed %q", stdout)
	}
	for _, ref := range refs {
		tag, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(tag)
		if err != nil {
			t.Fatalf("reading %s back: %v", ref, err)
		}
		if d, _ := idx.Digest(); d != wantDigest {
			t.Errorf("%s: index %s, want %s", ref, d, wantDigest)
		}
		got := readLayer(t, imageOf(t, idx, "linux/arm64"))
		if got[0].header.Name != "cdc-relay" || !bytes.Equal(got[0].data, platformOf(t, s, "linux/arm64").Binary) {
			t.Errorf("%s: linux/arm64's layer does not hold its binary first", ref)
		}
	}
}

func TestUntarLayoutRefuses(t *testing.T) {
	tests := []struct {
		name string
		h    tar.Header
	}{
		{"a path out of the directory", tar.Header{Name: "../index.json", Typeflag: tar.TypeReg}},
		{"an absolute path", tar.Header{Name: "/etc/passwd", Typeflag: tar.TypeReg}},
		{"a link", tar.Header{Name: "index.json", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}},
		{"another file", tar.Header{Name: "manifest.json", Typeflag: tar.TypeReg}},
		{"a blob not named by its digest", tar.Header{Name: "blobs/sha256/abc", Typeflag: tar.TypeReg}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			if err := tw.WriteHeader(&tt.h); err != nil {
				t.Fatal(err)
			}
			tw.Close()
			path := filepath.Join(t.TempDir(), "x.tar")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			err := untarLayout(path, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), "not a file of an OCI image layout") {
				t.Errorf("untarLayout: %v", err)
			}
		})
	}
}

// TestPushRefusedSaysToLogIn: a registry that wants credentials makes push
// say to log in, naming the registry.
func TestPushRefusedSaysToLogIn(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("REGISTRY_AUTH_FILE", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	tarPath := filepath.Join(t.TempDir(), "oci.tar")
	if err := os.WriteFile(tarPath, testLayout(t, testSpec()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd("push", tarPath, host+"/team/cdc-relay:v0.5.0")
	if want := "log in to " + host + " first (docker login " + host + ", or podman login --authfile ~/.docker/config.json " + host + ")"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	t.Logf("push said: %s", stderr)
}
