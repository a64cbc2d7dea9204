package main

import (
	"archive/tar"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestCheckSBOM(t *testing.T) {
	const good = `{"bomFormat":"CycloneDX","metadata":{"component":{"name":"github.com/cdc-relay/cdc-relay","version":"v0.5.0",
		"purl":"pkg:golang/github.com/cdc-relay/cdc-relay@v0.5.0?goarch=arm64&goos=darwin&type=module"},
		"properties":[{"name":"cdx:gomod:binary:hash:SHA-1","value":"ab"},{"name":"cdx:gomod:binary:hash:SHA-256","value":"cd"}]},
		"components":[{"name":"github.com/jackc/pgx/v5","purl":"pkg:golang/github.com/jackc/pgx/v5@v5.12.0?goarch=arm64&goos=darwin&type=module"},
		{"name":"github.com/twmb/franz-go","purl":"pkg:golang/github.com/twmb/franz-go@v1.22.2?goarch=arm64&goos=darwin&type=module"},
		{"name":"std","version":"go1.26.8","purl":"pkg:golang/std@go1.26.8?goarch=arm64&goos=darwin&type=module"}]}`
	ok := want{"v0.5.0", "darwin-arm64", "go1.26.8", "cd"}
	with := func(f func(*want)) want { w := ok; f(&w); return w }
	tests := []struct {
		name, doc string
		w         want
		want      string
	}{
		{"good", good, ok, ""},
		{"other version", good, with(func(w *want) { w.version = "v0.5.1" }), "want github.com/cdc-relay/cdc-relay v0.5.1"},
		{"other platform", good, with(func(w *want) { w.target = "linux-arm64" }), "want goarch=arm64&goos=linux"},
		{"serial number", strings.Replace(good, `"bomFormat"`, `"serialNumber":"urn:uuid:1","bomFormat"`, 1), ok, "serial number"},
		{"no franz-go", strings.Replace(good, `"github.com/twmb/franz-go"`, `"github.com/twmb/other"`, 1), ok, "names no github.com/twmb/franz-go"},
		{"not CycloneDX", strings.Replace(good, "CycloneDX", "SPDX", 1), ok, "want CycloneDX"},
		{"not JSON", "{", ok, "not JSON"},
		{"no std", strings.Replace(good, `"name":"std"`, `"name":"other"`, 1), ok, "names no std"},
		{"std of another Go", good, with(func(w *want) { w.goVersion = "go1.26.9" }), "want go1.26.9"},
		{"another binary", good, with(func(w *want) { w.binaryHash = "ef" }), "describes the binary cd, but the archive's has SHA-256 ef"},
		{"no binary hash", strings.Replace(good, "hash:SHA-256", "hash:SHA-512", 1), ok, "gives no cdx:gomod:binary:hash:SHA-256"},
		{"no binary archived", good, with(func(w *want) { w.binaryHash = "" }), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(checkSBOM([]byte(tt.doc), tt.w), "; ")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("checkSBOM: %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckHeader(t *testing.T) {
	tests := []struct {
		name string
		h    tar.Header
		want string
	}{
		{"binary", tar.Header{Name: "cdc-relay", Typeflag: tar.TypeReg, Mode: 0o755}, ""},
		{"license", tar.Header{Name: "LICENSE", Typeflag: tar.TypeReg, Mode: 0o644}, ""},
		{"binary not executable", tar.Header{Name: "cdc-relay", Typeflag: tar.TypeReg, Mode: 0o644}, "mode 644, want 755"},
		{"group-writable", tar.Header{Name: "README.md", Typeflag: tar.TypeReg, Mode: 0o664}, "mode 664"},
		{"builder's owner", tar.Header{Name: "LICENSE", Typeflag: tar.TypeReg, Mode: 0o644, Uid: 1000, Gid: 1000}, "owned by 1000:1000"},
		{"directory", tar.Header{Name: "cdc-relay-v0.5.0/", Typeflag: tar.TypeDir, Mode: 0o755}, "only docs/ may be one"},
		{"the manual", tar.Header{Name: "docs/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
		{"a page", tar.Header{Name: "docs/reference/cli.md", Typeflag: tar.TypeReg, Mode: 0o644}, ""},
		{"a page's directory group-writable", tar.Header{Name: "docs/reference/", Typeflag: tar.TypeDir, Mode: 0o775}, "mode 775, want 755"},
		{"a file in a directory", tar.Header{Name: "bin/cdc-relay", Typeflag: tar.TypeReg, Mode: 0o755}, "not at the top"},
		{"out of docs", tar.Header{Name: "docs/../x", Typeflag: tar.TypeReg, Mode: 0o644}, "not at the top"},
		{"a link", tar.Header{Name: "docs/x.md", Typeflag: tar.TypeSymlink, Mode: 0o644}, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := checkHeader(&tt.h); err != nil {
				got = err.Error()
			}
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("checkHeader: %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLinkedDocs: the pages the README links to, each once, without
// anchors, directories or links elsewhere.
func TestLinkedDocs(t *testing.T) {
	readme := "See [a](docs/a.md), [b](docs/b.md#x), [a again](docs/a.md#y), [the folder](docs/),\n" +
		"[ref](docs/reference/cli.md) and [elsewhere](examples/README.md), [web](https://x/docs/c.md)."
	got := strings.Join(linkedDocs([]byte(readme)), " ")
	if want := "docs/a.md docs/b.md docs/reference/cli.md"; got != want {
		t.Errorf("linkedDocs = %q, want %q", got, want)
	}
}

// TestCheckTargetsAcceptsExactlyTheTargetsBuilt: one target built is
// whole when only it is asked for, and short when all four are.
func TestCheckTargetsAcceptsExactlyTheTargetsBuilt(t *testing.T) {
	one := []artifact{{version: "v1", target: "linux-amd64"}}
	asked, err := parseTargets("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	if got := checkTargets("archives", one, asked); len(got) != 0 {
		t.Errorf("linux/amd64 asked and built: %q", got)
	}
	all, err := parseTargets(allTargets)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(checkTargets("archives", one, all), "; "); !strings.Contains(got, "want exactly one for each of [darwin-amd64 darwin-arm64 linux-amd64 linux-arm64]") {
		t.Errorf("all four asked, one built: %q", got)
	}
	for _, bad := range []string{"", "linux/386", "linux/amd64 linux/amd64"} {
		if _, err := parseTargets(bad); err == nil {
			t.Errorf("parseTargets(%q) accepted", bad)
		}
	}
}

func TestCheckTargets(t *testing.T) {
	all := []artifact{{version: "v1", target: "linux-amd64"}, {version: "v1", target: "linux-arm64"},
		{version: "v1", target: "darwin-amd64"}, {version: "v1", target: "darwin-arm64"}}
	tests := []struct {
		name string
		as   []artifact
		want string
	}{
		{"all four", all, ""},
		{"one of four", all[:1], "want exactly one for each"},
		{"one missing", all[1:], "want exactly one for each"},
		{"one twice", append(all[1:], all[1]), "want exactly one for each"},
		{"two versions", append(all[1:], artifact{version: "v2", target: "linux-amd64"}), "2 versions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(checkTargets("archives", tt.as, []string{"darwin-amd64", "darwin-arm64", "linux-amd64", "linux-arm64"}), "; ")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("checkTargets: %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCheckBinaryRefusesOtherTargets feeds the test's own executable, an
// ELF for linux/amd64, as each other target's binary.
func TestCheckBinaryRefusesOtherTargets(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the test's own executable is the linux/amd64 example")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]string{
		"linux-arm64":  "built for EM_X86_64, want EM_AARCH64",
		"darwin-amd64": "not a Mach-O executable",
		"darwin-arm64": "not a Mach-O executable",
	} {
		if err := checkBinary(bin, target); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkBinary(own executable, %s): %v, want %q", target, err, want)
		}
	}
	if err := checkBinary([]byte("#!/bin/sh\n"), "linux-amd64"); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("checkBinary(a shell script): %v, want not an ELF", err)
	}
}

func TestParseToolchain(t *testing.T) {
	tests := []struct {
		name, gomod, want, err string
	}{
		{"toolchain line", "module m\n\ngo 1.26.0\n\ntoolchain go1.26.8\n", "go1.26.8", ""},
		{"go line only", "module m\n\ngo 1.26.8\n", "go1.26.8", ""},
		{"neither", "module m\n", "", "neither a toolchain nor a go line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseToolchain(tt.gomod)
			if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseToolchain: %q, %v; want %q, %q", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestCheckStamp(t *testing.T) {
	bin := []byte("\x7fELF...v0.5.0\x00...")
	if err := checkStamp(bin, "v0.5.0"); err != nil {
		t.Errorf("checkStamp(binary with v0.5.0, v0.5.0): %v", err)
	}
	if err := checkStamp(bin, "v0.5.1"); err == nil || !strings.Contains(err.Error(), "does not carry its version v0.5.1") {
		t.Errorf("checkStamp(binary with v0.5.0, v0.5.1): %v, want does not carry", err)
	}
}
