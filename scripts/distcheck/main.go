// Command distcheck checks a release directory that make release wrote:
// exactly one archive and one SBOM per target; each archive holds the
// binary, LICENSE, NOTICE, README.md and THIRD_PARTY_NOTICES, owned by
// 0:0; each binary is for its archive's OS and architecture and
// statically linked (an ELF binary has no interpreter and needs no shared
// library; a Mach-O binary links only the system's own libraries, as every
// Go binary for macOS does) and carries the version of the archive's
// name; each SBOM is CycloneDX for that version, OS and architecture,
// names the modules the relay is built on and the Go standard library at
// the toolchain go.mod names, and gives the SHA-256 of the archived
// binary. With linux targets, the container image
// cdc-relay-<version>-oci.tar (scripts/image) is a tar of an OCI image
// layout whose blobs are named by their digests, whose index.json names
// one image index ghcr.io/cdc-relay/cdc-relay:<version> with exactly one
// image per linux target, each of which runs /cdc-relay as a numeric user
// that is not root, is labelled with the version, and has one layer
// holding the binary archived for its target byte for byte, that target's
// SBOM byte for byte, and the license files. It exits 1 with one line per
// problem. Run it from the repository's top, where it reads go.mod.
//
// The targets are the release's four, or exactly those -targets names
// (os/arch words, as make release's RELEASE_TARGETS: CI builds one).
//
//	go run ./scripts/distcheck [-targets 'linux/amd64 ...'] dist
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// allTargets are the release's operating systems and architectures.
const allTargets = "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"

// archiveFiles are the files every archive must hold.
var archiveFiles = []string{"LICENSE", "NOTICE", "README.md", "THIRD_PARTY_NOTICES", "cdc-relay"}

// sbomModules are modules every binary is built on, so every SBOM names them.
var sbomModules = []string{"github.com/jackc/pgx/v5", "github.com/twmb/franz-go"}

var artifactName = regexp.MustCompile(`^cdc-relay-(.+)-(linux|darwin)-(amd64|arm64)\.(tar\.gz|cdx\.json)$`)

// imageName is the name of the release's container image.
var imageName = regexp.MustCompile(`^cdc-relay-(.+)-oci\.tar$`)

func main() {
	targetList := flag.String("targets", allTargets, "the targets the release holds, os/arch words")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/distcheck [-targets 'linux/amd64 ...'] DIR (the directory make release wrote, dist)")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	targets, err := parseTargets(*targetList)
	if err == nil {
		var goVersion string
		goVersion, err = toolchainVersion("go.mod")
		if err == nil {
			report(dir, checkDist(dir, goVersion, targets), len(targets))
			return
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "distcheck:", err)
		os.Exit(2)
	}
}

// parseTargets returns the targets of words like "linux/amd64
// darwin/arm64" as distcheck names them (darwin-arm64, linux-amd64),
// sorted; each must be one of the release's, once.
func parseTargets(words string) ([]string, error) {
	var ts []string
	seen := map[string]bool{}
	for _, w := range strings.Fields(words) {
		if !strings.Contains(" "+allTargets+" ", " "+w+" ") || seen[w] {
			return nil, fmt.Errorf("-targets %q: %s is not one of %s, or is named twice", words, w, allTargets)
		}
		seen[w] = true
		ts = append(ts, strings.Replace(w, "/", "-", 1))
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("-targets names no target: name some of %s", allTargets)
	}
	sort.Strings(ts)
	return ts, nil
}

// report prints each problem and exits 1 if there is any, else says what
// was checked; n is the number of targets.
func report(dir string, problems []string, n int) {
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "distcheck:", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "distcheck: %s: %d archives and %d SBOMs, each binary static, for its target and stamped, each SBOM naming std and the archived binary; the image of the linux targets, non-root, of those binaries and SBOMs\n",
		dir, n, n)
}

// artifact is one archive or SBOM of a release, named by its target.
type artifact struct {
	path, version, target string
}

// checkDist returns every problem of the release in dir, built by Go
// goVersion (go1.26.8); none means it is whole, each file is what its
// name says, and each SBOM describes the binary archived for its target.
func checkDist(dir, goVersion string, targets []string) []string {
	archives, sboms, images, problems := listArtifacts(dir)
	problems = append(problems, checkTargets("archives", archives, targets)...)
	problems = append(problems, checkTargets("SBOMs", sboms, targets)...)
	binaryHashes := map[string]string{}
	for _, a := range archives {
		hash, ps := checkArchive(a)
		binaryHashes[a.target] = hash
		problems = append(problems, ps...)
	}
	sbomHashes := map[string]string{}
	for _, s := range sboms {
		problems = append(problems, checkSBOMFile(s, goVersion, binaryHashes[s.target])...)
		if data, err := os.ReadFile(s.path); err == nil {
			sum := sha256.Sum256(data)
			sbomHashes[s.target] = hex.EncodeToString(sum[:])
		}
	}
	w := wantImage{targets: linuxTargets(targets), binaryHash: binaryHashes, sbomHash: sbomHashes}
	if len(archives) > 0 {
		w.version = archives[0].version
	}
	return append(problems, checkImages(images, w)...)
}

// linuxTargets are the targets of targets that the image has a platform
// for: the linux ones.
func linuxTargets(targets []string) []string {
	var linux []string
	for _, t := range targets {
		if strings.HasPrefix(t, "linux-") {
			linux = append(linux, t)
		}
	}
	return linux
}

// checkImages says what is wrong unless images is the one image of the
// release, of its version, when w has linux targets, and nothing when
// it has none; then what checkImage finds.
func checkImages(images []artifact, w wantImage) []string {
	switch {
	case len(w.targets) == 0 && len(images) > 0:
		return []string{fmt.Sprintf("%s: an image, but no linux target to make it of", images[0].path)}
	case len(w.targets) == 0:
		return nil
	case len(images) != 1:
		return []string{fmt.Sprintf("%d container images (cdc-relay-<version>-oci.tar), want one for %v", len(images), w.targets)}
	case images[0].version != w.version:
		return []string{fmt.Sprintf("%s: of version %s, but the archives are of %s", images[0].path, images[0].version, w.version)}
	}
	return checkImage(images[0], w)
}

// listArtifacts sorts the files of dir into archives, SBOMs and images by
// name; any other file but SHA256SUMS is a problem.
func listArtifacts(dir string) (archives, sboms, images []artifact, problems []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil, []string{fmt.Sprintf("%v: run make release first", err)}
	}
	for _, e := range entries {
		m := artifactName.FindStringSubmatch(e.Name())
		switch {
		case e.Name() == "SHA256SUMS":
		case imageName.MatchString(e.Name()):
			version := imageName.FindStringSubmatch(e.Name())[1]
			images = append(images, artifact{path: filepath.Join(dir, e.Name()), version: version})
		case m == nil:
			problems = append(problems, fmt.Sprintf("%s: not a file of the release", e.Name()))
		case m[4] == "tar.gz":
			archives = append(archives, artifact{filepath.Join(dir, e.Name()), m[1], m[2] + "-" + m[3]})
		default:
			sboms = append(sboms, artifact{filepath.Join(dir, e.Name()), m[1], m[2] + "-" + m[3]})
		}
	}
	return archives, sboms, images, problems
}

// checkTargets says what is wrong unless there is exactly one of kind per
// target of targets (sorted, as parseTargets returns them), all of one
// version.
func checkTargets(kind string, as []artifact, targets []string) []string {
	var got []string
	versions := map[string]bool{}
	for _, a := range as {
		got = append(got, a.target)
		versions[a.version] = true
	}
	sort.Strings(got)
	var problems []string
	if fmt.Sprint(got) != fmt.Sprint(targets) {
		problems = append(problems, fmt.Sprintf("%s for %v, want exactly one for each of %v", kind, got, targets))
	}
	if len(versions) > 1 {
		problems = append(problems, fmt.Sprintf("%s of %d versions, want one", kind, len(versions)))
	}
	return problems
}
