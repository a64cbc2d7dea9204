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
		Timestamp string    `json:"timestamp"`
		Component component `json:"component"`
	} `json:"metadata"`
	Components []component `json:"components"`
}

// component is a CycloneDX component: the binary's module or a dependency.
type component struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
}

// checkSBOMFile reads the SBOM s and says what is wrong with it.
func checkSBOMFile(s artifact) []string {
	data, err := os.ReadFile(s.path)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, p := range checkSBOM(data, s.version, s.target) {
		problems = append(problems, fmt.Sprintf("%s: %s", s.path, p))
	}
	return problems
}

// checkSBOM says what is wrong unless data is a CycloneDX document of the
// relay at version, built for target (os-arch), that names the sbomModules
// and holds no serial number (which would differ by build).
func checkSBOM(data []byte, version, target string) []string {
	var doc sbom
	if err := json.Unmarshal(data, &doc); err != nil {
		return []string{fmt.Sprintf("not JSON: %v", err)}
	}
	var problems []string
	main := doc.Metadata.Component
	goos, goarch, _ := strings.Cut(target, "-")
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
	return append(problems, missingModules(doc.Components, platform)...)
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
