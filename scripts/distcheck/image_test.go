package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeImage describes an image tar that the tests write as scripts/image
// would, with the faults a test puts in.
type fakeImage struct {
	version, name, user string
	entrypoint          []string
	targets             []string
	// binary and sbom are the layer's files by target.
	binary, sbom map[string][]byte
	// noDocs leaves the license files out; badBlob changes a layer's
	// bytes after they were named.
	noDocs, badBlob bool
}

// goodImage is an image of both linux targets as make release builds it.
func goodImage() fakeImage {
	return fakeImage{
		version: "v0.5.0", name: "ghcr.io/cdc-relay/cdc-relay:v0.5.0", user: "65534:65534",
		entrypoint: []string{"/cdc-relay"}, targets: []string{"linux-amd64", "linux-arm64"},
		binary: map[string][]byte{"linux-amd64": []byte("amd64 binary"), "linux-arm64": []byte("arm64 binary")},
		sbom:   map[string][]byte{"linux-amd64": []byte(`{"a":1}`), "linux-arm64": []byte(`{"a":2}`)},
	}
}

// want is what checkImage requires of a release whose files are those of
// goodImage, for targets.
func wantOf(targets ...string) wantImage {
	g := goodImage()
	w := wantImage{version: "v0.5.0", targets: targets, binaryHash: map[string]string{}, sbomHash: map[string]string{}}
	for t, b := range g.binary {
		w.binaryHash[t] = sha256Hex(b)
		w.sbomHash[t] = sha256Hex(g.sbom[t])
	}
	return w
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// tarOf returns a tar of files (name to contents), sorted, owned by 0:0;
// cdc-relay is 0755.
func tarOf(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		mode := int64(0o644)
		if name == "cdc-relay" {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(files[name])
	}
	tw.Close()
	return buf.Bytes()
}

// write returns the path of the image tar f describes, in a temporary
// directory.
func (f fakeImage) write(t *testing.T) string {
	t.Helper()
	blobs := map[string][]byte{}
	add := func(mediaType string, data []byte) map[string]any {
		d := sha256Hex(data)
		blobs["blobs/sha256/"+d] = data
		return map[string]any{"mediaType": mediaType, "digest": "sha256:" + d, "size": len(data)}
	}
	mustJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var manifests []any
	for _, target := range f.targets {
		files := map[string][]byte{"cdc-relay": f.binary[target], "usr/share/doc/cdc-relay/sbom.cdx.json": f.sbom[target]}
		if !f.noDocs {
			for _, d := range []string{"LICENSE", "NOTICE", "THIRD_PARTY_NOTICES"} {
				files["usr/share/doc/cdc-relay/"+d] = []byte(d)
			}
		}
		raw := tarOf(t, files)
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(raw)
		zw.Close()
		layer := add(mediaLayer, gz.Bytes())
		if f.badBlob {
			gz.Bytes()[len(gz.Bytes())-1] ^= 1
		}
		os, arch, _ := strings.Cut(target, "-")
		config := add(mediaConfig, mustJSON(map[string]any{"os": os, "architecture": arch, "created": "2026-11-29T12:00:00Z",
			"config": map[string]any{"User": f.user, "Entrypoint": f.entrypoint, "Labels": map[string]string{"org.opencontainers.image.version": f.version}},
			"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + sha256Hex(raw)}}}))
		m := add(mediaManifest, mustJSON(map[string]any{"schemaVersion": 2, "mediaType": mediaManifest, "config": config, "layers": []any{layer}}))
		m["platform"] = map[string]string{"os": os, "architecture": arch}
		manifests = append(manifests, m)
	}
	index := add(mediaIndex, mustJSON(map[string]any{"schemaVersion": 2, "mediaType": mediaIndex, "manifests": manifests}))
	_, tag, _ := strings.Cut(f.name, "cdc-relay:")
	index["annotations"] = map[string]string{"io.containerd.image.name": f.name, "org.opencontainers.image.ref.name": tag}
	blobs["index.json"] = mustJSON(map[string]any{"schemaVersion": 2, "manifests": []any{index}})
	blobs["oci-layout"] = []byte(`{"imageLayoutVersion":"1.0.0"}`)
	path := filepath.Join(t.TempDir(), fmt.Sprintf("cdc-relay-%s-oci.tar", f.version))
	if err := os.WriteFile(path, tarOf(t, blobs), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckImage(t *testing.T) {
	with := func(change func(*fakeImage)) fakeImage { f := goodImage(); change(&f); return f }
	both := wantOf("linux-amd64", "linux-arm64")
	tests := []struct {
		name string
		f    fakeImage
		w    wantImage
		want string
	}{
		{"good", goodImage(), both, ""},
		{"one platform, as CI builds it", with(func(f *fakeImage) { f.targets = f.targets[:1] }), wantOf("linux-amd64"), ""},
		{"a platform missing", with(func(f *fakeImage) { f.targets = f.targets[:1] }), both, "images for [linux-amd64], want exactly one for each of [linux-amd64 linux-arm64]"},
		{"root", with(func(f *fakeImage) { f.user = "0:0" }), both, `runs as user "0:0", want a numeric uid:gid that is not root`},
		{"a user by name", with(func(f *fakeImage) { f.user = "nobody" }), both, `runs as user "nobody"`},
		{"no user", with(func(f *fakeImage) { f.user = "" }), both, `runs as user ""`},
		{"another entrypoint", with(func(f *fakeImage) { f.entrypoint = []string{"/bin/sh"} }), both, `entrypoint ["/bin/sh"], want [/cdc-relay]`},
		{"another version", with(func(f *fakeImage) { f.version = "v0.4.0" }), both, `labelled version "v0.4.0"`},
		{"another name", with(func(f *fakeImage) { f.name = "cdc-relay:latest" }), both, `index.json names the image "cdc-relay:latest"`},
		{"another binary", with(func(f *fakeImage) {
			f.binary = map[string][]byte{"linux-amd64": []byte("x"), "linux-arm64": f.binary["linux-arm64"]}
		}), both,
			"linux-amd64: /cdc-relay has SHA-256 " + sha256Hex([]byte("x")) + ", but the archive's binary " + both.binaryHash["linux-amd64"]},
		{"another SBOM", with(func(f *fakeImage) {
			f.sbom = map[string][]byte{"linux-amd64": f.sbom["linux-amd64"], "linux-arm64": []byte("{}")}
		}), both,
			"linux-arm64: /usr/share/doc/cdc-relay/sbom.cdx.json has SHA-256"},
		{"no license files", with(func(f *fakeImage) { f.noDocs = true }), both, "the layer has no /usr/share/doc/cdc-relay/THIRD_PARTY_NOTICES"},
		{"a blob not its digest", with(func(f *fakeImage) { f.badBlob = true }), both, "holds a blob of SHA-256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.f.write(t)
			got := strings.Join(checkImage(artifact{path: path, version: "v0.5.0"}, tt.w), "; ")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("checkImage: %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckImages(t *testing.T) {
	img := artifact{path: "dist/cdc-relay-v0.5.0-oci.tar", version: "v0.5.0"}
	tests := []struct {
		name   string
		images []artifact
		w      wantImage
		want   string
	}{
		{"darwin alone, no image", nil, wantImage{version: "v0.5.0"}, ""},
		{"darwin alone, an image", []artifact{img}, wantImage{version: "v0.5.0"}, "an image, but no linux target"},
		{"linux, no image", nil, wantImage{version: "v0.5.0", targets: []string{"linux-amd64"}}, "0 container images"},
		{"linux, two images", []artifact{img, img}, wantImage{version: "v0.5.0", targets: []string{"linux-amd64"}}, "2 container images"},
		{"another version", []artifact{img}, wantImage{version: "v0.5.1", targets: []string{"linux-amd64"}}, "of version v0.5.0, but the archives are of v0.5.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(checkImages(tt.images, tt.w), "; ")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("checkImages: %q, want %q", got, tt.want)
			}
		})
	}
	if got := linuxTargets([]string{"darwin-amd64", "linux-amd64", "linux-arm64"}); !slices.Equal(got, []string{"linux-amd64", "linux-arm64"}) {
		t.Errorf("linuxTargets: %v", got)
	}
}
