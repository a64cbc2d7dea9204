package main

import (
	"fmt"
	"os"
	"strings"
)

// toolchainVersion returns the Go toolchain that the go.mod at path names,
// the one release.sh builds with (GOTOOLCHAIN): its toolchain line, else
// go followed by its go line (go1.26.8).
func toolchainVersion(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%v: run distcheck from the repository's top", err)
	}
	return parseToolchain(string(data))
}

// parseToolchain returns the toolchain that the go.mod text names, as
// toolchainVersion says.
func parseToolchain(gomod string) (string, error) {
	var goLine string
	for _, line := range strings.Split(gomod, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "toolchain":
			return f[1], nil
		case len(f) == 2 && f[0] == "go":
			goLine = "go" + f[1]
		}
	}
	if goLine == "" {
		return "", fmt.Errorf("go.mod has neither a toolchain nor a go line")
	}
	return goLine, nil
}
