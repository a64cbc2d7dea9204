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
// binary. It exits 1 with one line per problem. Run it from the
// repository's top, where it reads go.mod.
//
// The targets are the release's four, or exactly those -targets names
// (os/arch words, as make release's RELEASE_TARGETS: CI builds one).
//
//	go run ./scripts/distcheck [-targets 'linux/amd64 ...'] dist
package main

import (
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
	fmt.Fprintf(os.Stderr, "distcheck: %s: %d archives and %d SBOMs, each binary static, for its target and stamped, each SBOM naming std and the archived binary\n",
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
	archives, sboms, problems := listArtifacts(dir)
	problems = append(problems, checkTargets("archives", archives, targets)...)
	problems = append(problems, checkTargets("SBOMs", sboms, targets)...)
	binaryHashes := map[string]string{}
	for _, a := range archives {
		hash, ps := checkArchive(a)
		binaryHashes[a.target] = hash
		problems = append(problems, ps...)
	}
	for _, s := range sboms {
		problems = append(problems, checkSBOMFile(s, goVersion, binaryHashes[s.target])...)
	}
	return problems
}

// listArtifacts sorts the files of dir into archives and SBOMs by name;
// any other file but SHA256SUMS is a problem.
func listArtifacts(dir string) (archives, sboms []artifact, problems []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, []string{fmt.Sprintf("%v: run make release first", err)}
	}
	for _, e := range entries {
		m := artifactName.FindStringSubmatch(e.Name())
		switch {
		case e.Name() == "SHA256SUMS":
		case m == nil:
			problems = append(problems, fmt.Sprintf("%s: not a file of the release", e.Name()))
		case m[4] == "tar.gz":
			archives = append(archives, artifact{filepath.Join(dir, e.Name()), m[1], m[2] + "-" + m[3]})
		default:
			sboms = append(sboms, artifact{filepath.Join(dir, e.Name()), m[1], m[2] + "-" + m[3]})
		}
	}
	return archives, sboms, problems
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
