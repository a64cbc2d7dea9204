package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// tinyMain is a stand-in for the relay when no release was built: it
// prints its arguments and its user.
const tinyMain = `package main

import (
	"fmt"
	"os"
)

func main() { fmt.Printf("cdc-relay stand-in %v uid=%d gid=%d\n", os.Args[1:], os.Getuid(), os.Getgid()) }
`

// hostBinary returns a static binary for this machine's platform and what
// its --version prints: the release's in ../../dist (make release) when
// there is one, else a stand-in built here with CGO_ENABLED=0.
func hostBinary(t *testing.T) (bin []byte, wantOutput string) {
	t.Helper()
	archives, _ := filepath.Glob("../../dist/cdc-relay-*-linux-" + runtime.GOARCH + ".tar.gz")
	if len(archives) == 1 {
		version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(archives[0]), "cdc-relay-"), "-linux-"+runtime.GOARCH+".tar.gz")
		t.Logf("the release's binary, from %s", archives[0])
		return fileInArchive(t, archives[0], "cdc-relay"), version
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module standin\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(tinyMain), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", "standin", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "standin"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("no release in ../../dist: a stand-in built here")
	return bin, "cdc-relay stand-in [--version]"
}

// fileInArchive returns the file name of the .tar.gz at path.
func fileInArchive(t *testing.T, path, name string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s holds no %s", path, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
}

// unpack writes the layer's entries under dir as a container engine
// would: directories and regular files, with their modes exactly (set
// again after creating, whatever the umask).
func unpack(t *testing.T, entries []layerEntry, dir string) {
	t.Helper()
	for _, e := range entries {
		path := filepath.Join(dir, filepath.FromSlash(e.header.Name))
		var err error
		switch e.header.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, os.FileMode(e.header.Mode))
		case tar.TypeReg:
			err = os.WriteFile(path, e.data, os.FileMode(e.header.Mode))
		default:
			t.Fatalf("%s: an entry of type %c", e.header.Name, e.header.Typeflag)
		}
		if err == nil {
			err = os.Chmod(path, os.FileMode(e.header.Mode))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestUnpackedLayerRuns unpacks this platform's layer into a directory and
// runs its /cdc-relay --version. There is no container engine to run the
// image, so this is the proof that the layer holds a binary that runs on
// its own: as root, in a chroot of the layer alone (no libc, no /etc) as
// the image's user 65534:65534; otherwise directly.
func TestUnpackedLayerRuns(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("the image's platforms are linux/amd64 and linux/arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bin, want := hostBinary(t)
	s := testSpec()
	s.Platforms = []Platform{{OS: "linux", Arch: runtime.GOARCH, Binary: bin, SBOM: []byte(`{}`)}}
	img := imageOf(t, buildTestIndex(t, s), "linux/"+runtime.GOARCH)
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil { // whatever the umask: the image's / is 0755
		t.Fatal(err)
	}
	unpack(t, readLayer(t, img), root)
	cmd := exec.Command(filepath.Join(root, "cdc-relay"), "--version")
	chroot, err := exec.LookPath("chroot")
	if os.Geteuid() == 0 && err == nil {
		cmd = exec.Command(chroot, "--userspec=65534:65534", root, "/cdc-relay", "--version")
		if strings.HasPrefix(want, "cdc-relay stand-in") {
			want += " uid=65534 gid=65534"
		}
	} else {
		t.Logf("not root, or no chroot: the binary runs outside a chroot, as this user")
	}
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "Operation not permitted") && len(cmd.Args) > 2 {
		// Root without CAP_SYS_CHROOT (a container that dropped it).
		t.Logf("%s: %s; running the binary outside a chroot", strings.Join(cmd.Args, " "), strings.TrimSpace(string(out)))
		want = strings.TrimSuffix(want, " uid=65534 gid=65534")
		cmd = exec.Command(filepath.Join(root, "cdc-relay"), "--version")
		out, err = cmd.CombinedOutput()
	}
	if err != nil || !strings.Contains(string(out), want) {
		t.Errorf("%s: %v\n%s\nwant %q", cmd, err, out, want)
	}
	t.Logf("%s: %s", strings.Join(cmd.Args, " "), strings.TrimSpace(string(out)))
}
