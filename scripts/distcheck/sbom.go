package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// sbom is the part of a CycloneDX document that the check reads.
type sbom struct {
	BOMFormat    string `json:"bomFormat"`
	SerialNumber string `json:"serialNumber"`
	Metadata     struct {
		Timestamp  string     `json:"timestamp"`
		Component  component  `json:"component"`
		Properties []property `json:"properties"`
	} `json:"metadata"`
	Components []component `json:"components"`
}

// component is a CycloneDX component: the binary's module or a dependency.
type component struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
}

// property is a CycloneDX name-value pair.
type property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// binaryHashProperty is the metadata property in which cyclonedx-gomod
// gives the SHA-256 of the binary it read.
const binaryHashProperty = "cdx:gomod:binary:hash:SHA-256"

// want is what an SBOM must describe: the relay at version for target
// (os-arch), built by Go goVersion (go1.26.8) into the binary whose
// SHA-256 is binaryHash (hex).
type want struct {
	version, target, goVersion, binaryHash string
}

// checkSBOMFile reads the SBOM s and says what is wrong with it, given
// the Go version of the build and the SHA-256 of the binary archived for
// its target ("" if there is none, which the archive's check reports).
func checkSBOMFile(s artifact, goVersion, binaryHash string) []string {
	data, err := os.ReadFile(s.path)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, p := range checkSBOM(data, want{s.version, s.target, goVersion, binaryHash}) {
		problems = append(problems, fmt.Sprintf("%s: %s", s.path, p))
	}
	return problems
}

// checkSBOM says what is wrong unless data is a CycloneDX document of the
// relay that w describes, that names the sbomModules and the standard
// library at w.goVersion, gives w.binaryHash as the binary's SHA-256, and
// holds no serial number (which would differ by build).
func checkSBOM(data []byte, w want) []string {
	var doc sbom
	if err := json.Unmarshal(data, &doc); err != nil {
		return []string{fmt.Sprintf("not JSON: %v", err)}
	}
	var problems []string
	main := doc.Metadata.Component
	version := w.version
	goos, goarch, _ := strings.Cut(w.target, "-")
	platform := "goarch=" + goarch + "&goos=" + goos
	switch {
	case doc.BOMFormat != "CycloneDX":
		problems = append(problems, fmt.Sprintf("bomFormat %q, want CycloneDX", doc.BOMFormat))
	case doc.SerialNumber != "":
		problems = append(problems, "has a serial number, which differs by build")
	case main.Name != "github.com/cdc-relay/cdc-relay" || main.Version != version:
		problems = append(problems, fmt.Sprintf("describes %s %s, want github.com/cdc-relay/cdc-relay %s", main.Name, main.Version, version))
	case !strings.Contains(main.PURL, platform):
		problems = append(problems, fmt.Sprintf("describes %s, want %s", main.PURL, platform))
	}
	problems = append(problems, missingModules(doc.Components, platform)...)
	if err := checkStd(doc.Components, platform, w.goVersion); err != nil {
		problems = append(problems, err.Error())
	}
	if err := checkBinaryHash(doc.Metadata.Properties, w.binaryHash); err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}

// checkStd says what is wrong unless components hold the Go standard
// library (std) at goVersion for the platform: without it a scanner misses
// Go's own advisories. cyclonedx-gomod writes it with -std.
func checkStd(components []component, platform, goVersion string) error {
	for _, c := range components {
		if c.Name != "std" {
			continue
		}
		if c.Version != goVersion || !strings.Contains(c.PURL, platform) {
			return fmt.Errorf("names std %s (%s), want %s for %s: build with the toolchain go.mod names", c.Version, c.PURL, goVersion, platform)
		}
		return nil
	}
	return fmt.Errorf("names no std (the Go standard library): run cyclonedx-gomod with -std")
}

// checkBinaryHash says what is wrong unless props give hash (hex) as the
// binary's SHA-256: the SBOM must describe the binary the archive holds.
// An empty hash (no binary archived) is reported by the archive's check.
func checkBinaryHash(props []property, hash string) error {
	if hash == "" {
		return nil
	}
	for _, p := range props {
		if p.Name == binaryHashProperty {
			if p.Value != hash {
				return fmt.Errorf("describes the binary %s, but the archive's has SHA-256 %s", p.Value, hash)
			}
			return nil
		}
	}
	return fmt.Errorf("gives no %s, want the archived binary's %s", binaryHashProperty, hash)
}

// missingModules says which sbomModules are not among components for the
// platform (purl qualifiers goarch and goos).
func missingModules(components []component, platform string) []string {
	var problems []string
	for _, want := range sbomModules {
		found := false
		for _, c := range components {
			found = found || (c.Name == want && strings.Contains(c.PURL, platform))
		}
		if !found {
			problems = append(problems, fmt.Sprintf("names no %s built for %s", want, platform))
		}
	}
	return problems
}
