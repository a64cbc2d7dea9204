package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// buildUsage is build's help, before its flags.
const buildUsage = `Usage: go run . build -version V -revision COMMIT -created UNIXTIME -o OUT.tar
         [-doc FILE]... [-repository NAME] OS/ARCH=BINARY,SBOM...

Writes OUT.tar, a tar of an OCI image layout: one image index with one
image per OS/ARCH (linux/amd64, linux/arm64), named NAME:V (a + of V as _).
Each image has one layer, dated -created, owned by 0:0:

  /cdc-relay                                 BINARY, 0755
  /usr/share/doc/cdc-relay/<FILE>            each -doc FILE, 0644
  /usr/share/doc/cdc-relay/sbom.cdx.json     SBOM, 0644

and runs /cdc-relay run as user 65534:65534, from /. The same inputs give
the same bytes. make release runs it with the release's binaries, SBOMs,
LICENSE, NOTICE and THIRD_PARTY_NOTICES; load the tar with
'podman load -i OUT.tar', or push it with 'go run . push'.
`

// buildTargets are the platforms build makes images for.
var buildTargets = []string{"linux/amd64", "linux/arm64"}

// commitHash is a full git commit hash, SHA-1 or SHA-256.
var commitHash = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// buildArgs are build's command line.
type buildArgs struct {
	version, revision, created, out, repository string
	docs                                        []string
	platforms                                   []string
}

// runBuild is the build command: it parses args, reads the inputs, and
// writes the layout's tar.
func runBuild(args []string, stdout, stderr io.Writer) error {
	a, err := parseBuild(args, stdout)
	if err != nil {
		return err
	}
	spec, err := readSpec(a)
	if err != nil {
		return err
	}
	ref, err := spec.Ref()
	if err != nil {
		return err
	}
	idx, err := BuildIndex(spec)
	if err != nil {
		return err
	}
	data, err := Layout(idx, ref, Tag(spec.Version), spec.Created)
	if err != nil {
		return fmt.Errorf("writing the layout: %w", err)
	}
	if err := writeFileAtomic(a.out, data); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	var names []string
	for _, p := range spec.Platforms {
		names = append(names, p.String())
	}
	fmt.Fprintf(stderr, "image: %s: %s (%s), index %s\n", a.out, ref, strings.Join(names, ", "), digest)
	return nil
}

// parseBuild parses build's command line, or returns a usageError saying
// what is missing or wrong (flag.ErrHelp for -h, its help written to w).
func parseBuild(args []string, w io.Writer) (buildArgs, error) {
	var a buildArgs
	fs := newFlagSet("build", buildUsage, w)
	fs.StringVar(&a.version, "version", "", "the release's `VERSION`, v<digit>… (make release's): the image's tag and its version label")
	fs.StringVar(&a.revision, "revision", "", "the full hash of the `COMMIT` the binaries were built from: the revision label")
	fs.StringVar(&a.created, "created", "", "the commit's time as `UNIXTIME`, seconds since 1970 (make release's SOURCE_DATE_EPOCH): every date in the image")
	fs.StringVar(&a.out, "o", "", "the tar to write (`OUT.tar`), e.g. ../../dist/cdc-relay-v0.5.0-oci.tar")
	fs.StringVar(&a.repository, "repository", defaultRepository, "the image's `NAME` without its tag, which the layout gives it (podman load names the image NAME:tag)")
	fs.Func("doc", "a license `FILE` that every image carries in /usr/share/doc/cdc-relay/ (repeat it for each)", func(s string) error {
		a.docs = append(a.docs, s)
		return nil
	})
	if err := parseFlags(fs, args); err != nil {
		return a, err
	}
	a.platforms = fs.Args()
	switch {
	case !regexp.MustCompile(`^v[0-9]`).MatchString(a.version):
		return a, usageError{fmt.Sprintf("-version %q: want the release's version, v<digit>… (make release passes it)", a.version)}
	case !commitHash.MatchString(a.revision):
		return a, usageError{fmt.Sprintf("-revision %q: want a full commit hash (git rev-parse HEAD)", a.revision)}
	case a.out == "":
		return a, usageError{"-o: name the tar to write, e.g. -o ../../dist/cdc-relay-" + a.version + "-oci.tar"}
	case len(a.platforms) == 0:
		return a, usageError{"name at least one platform's binary and SBOM: linux/amd64=BINARY,SBOM"}
	}
	if _, err := strconv.ParseInt(a.created, 10, 64); err != nil {
		return a, usageError{fmt.Sprintf("-created %q: want the commit's time in seconds since 1970 (git log -1 --format=%%ct)", a.created)}
	}
	return a, nil
}

// readSpec reads the files a names into a Spec.
func readSpec(a buildArgs) (Spec, error) {
	secs, _ := strconv.ParseInt(a.created, 10, 64)
	s := Spec{Version: a.version, Revision: a.revision, Created: time.Unix(secs, 0).UTC(), Repository: a.repository}
	for _, d := range a.docs {
		data, err := os.ReadFile(d)
		if err != nil {
			return s, fmt.Errorf("-doc: %w", err)
		}
		s.Docs = append(s.Docs, File{Name: filepath.Base(d), Data: data})
	}
	seen := map[string]bool{}
	for _, arg := range a.platforms {
		p, err := readPlatform(arg)
		if err != nil {
			return s, err
		}
		if seen[p.String()] {
			return s, usageError{fmt.Sprintf("%s is named twice", p)}
		}
		seen[p.String()] = true
		s.Platforms = append(s.Platforms, p)
	}
	return s, nil
}

// readPlatform reads the binary and the SBOM of one OS/ARCH=BINARY,SBOM
// argument.
func readPlatform(arg string) (Platform, error) {
	target, files, ok := strings.Cut(arg, "=")
	bin, sbom, ok2 := strings.Cut(files, ",")
	if !ok || !ok2 || bin == "" || sbom == "" {
		return Platform{}, usageError{fmt.Sprintf("%q: want OS/ARCH=BINARY,SBOM, e.g. linux/amd64=cdc-relay,cdc-relay.cdx.json", arg)}
	}
	known := false
	for _, t := range buildTargets {
		known = known || t == target
	}
	if !known {
		return Platform{}, usageError{fmt.Sprintf("%q: the platform %s is not one of %s", arg, target, strings.Join(buildTargets, ", "))}
	}
	p := Platform{}
	p.OS, p.Arch, _ = strings.Cut(target, "/")
	var err error
	if p.Binary, err = os.ReadFile(bin); err != nil {
		return p, fmt.Errorf("%s's binary: %w", target, err)
	}
	if p.SBOM, err = os.ReadFile(sbom); err != nil {
		return p, fmt.Errorf("%s's SBOM: %w", target, err)
	}
	return p, nil
}

// writeFileAtomic writes data to path (0644) through a temporary file in
// its directory, so that path is either whole or absent.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".image-*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
