package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testCreated is the commit time the tests' images are dated.
var testCreated = time.Date(2026, 11, 29, 12, 34, 56, 0, time.UTC)

// testSpec is a spec of both platforms with stand-ins for the binaries and
// SBOMs, distinct per platform.
func testSpec() Spec {
	return Spec{
		Version:    "v0.5.0",
		Revision:   strings.Repeat("ab", 20),
		Created:    testCreated,
		Repository: defaultRepository,
		Docs: []File{
			{Name: "LICENSE", Data: []byte("Apache License\n")},
			{Name: "NOTICE", Data: []byte("cdc-relay\n")},
			{Name: "THIRD_PARTY_NOTICES", Data: []byte("pgx: MIT\n")},
		},
		Platforms: []Platform{
			{OS: "linux", Arch: "arm64", Binary: []byte("\x7fELF arm64 binary"), SBOM: []byte(`{"bomFormat":"CycloneDX","arch":"arm64"}`)},
			{OS: "linux", Arch: "amd64", Binary: []byte("\x7fELF amd64 binary"), SBOM: []byte(`{"bomFormat":"CycloneDX","arch":"amd64"}`)},
		},
	}
}

// platformOf returns the spec's platform os/arch.
func platformOf(t *testing.T, s Spec, target string) Platform {
	t.Helper()
	for _, p := range s.Platforms {
		if p.String() == target {
			return p
		}
	}
	t.Fatalf("no platform %s in the spec", target)
	return Platform{}
}

// buildTestIndex builds s's index, failing the test on an error.
func buildTestIndex(t *testing.T, s Spec) v1.ImageIndex {
	t.Helper()
	idx, err := BuildIndex(s)
	if err != nil {
		t.Fatalf("BuildIndex: %v", err)
	}
	return idx
}

// imageOf returns the image of platform target (os/arch) in idx.
func imageOf(t *testing.T, idx v1.ImageIndex, target string) v1.Image {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS+"/"+d.Platform.Architecture == target {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("no image for %s in the index", target)
	return nil
}

func TestIndexHasOneImagePerPlatform(t *testing.T) {
	tests := []struct {
		name      string
		platforms []string
	}{
		{"both, as make release builds them", []string{"linux/amd64", "linux/arm64"}},
		{"linux/amd64 alone, as CI's release-check builds it", []string{"linux/amd64"}},
		{"linux/arm64 alone", []string{"linux/arm64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSpec()
			s.Platforms = nil
			for _, target := range tt.platforms {
				s.Platforms = append(s.Platforms, platformOf(t, testSpec(), target))
			}
			idx := buildTestIndex(t, s)
			im, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if im.MediaType != types.OCIImageIndex || im.SchemaVersion != 2 {
				t.Errorf("index: media type %s, schema %d; want %s, 2", im.MediaType, im.SchemaVersion, types.OCIImageIndex)
			}
			var got []string
			for _, d := range im.Manifests {
				got = append(got, d.Platform.OS+"/"+d.Platform.Architecture)
				if d.MediaType != types.OCIManifestSchema1 || d.ArtifactType != "" {
					t.Errorf("%s: media type %s, artifact type %q; want %s and none", d.Platform, d.MediaType, d.ArtifactType, types.OCIManifestSchema1)
				}
			}
			if !slices.Equal(got, tt.platforms) {
				t.Errorf("platforms %v, want %v", got, tt.platforms)
			}
			if !reflect.DeepEqual(im.Annotations, s.Labels()) {
				t.Errorf("index annotations %v, want the labels %v", im.Annotations, s.Labels())
			}
		})
	}
}

func TestBuildIndexRefuses(t *testing.T) {
	s := testSpec()
	s.Platforms = append(s.Platforms, s.Platforms[0])
	if _, err := BuildIndex(s); err == nil || !strings.Contains(err.Error(), "linux/arm64 given twice") {
		t.Errorf("a platform twice: %v", err)
	}
	s.Platforms = nil
	if _, err := BuildIndex(s); err == nil || !strings.Contains(err.Error(), "no platform") {
		t.Errorf("no platform: %v", err)
	}
}

func TestImageConfig(t *testing.T) {
	s := testSpec()
	idx := buildTestIndex(t, s)
	for _, target := range []string{"linux/amd64", "linux/arm64"} {
		t.Run(target, func(t *testing.T) {
			img := imageOf(t, idx, target)
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			want := v1.Config{
				User:       "65534:65534",
				Entrypoint: []string{"/cdc-relay"},
				Cmd:        []string{"run"},
				Env:        []string{"PATH=/"},
				WorkingDir: "/",
				Labels: map[string]string{
					"org.opencontainers.image.created":     "2026-11-29T12:34:56Z",
					"org.opencontainers.image.description": "Relays transactional-outbox events from PostgreSQL to Kafka",
					"org.opencontainers.image.licenses":    "Apache-2.0",
					"org.opencontainers.image.revision":    s.Revision,
					"org.opencontainers.image.source":      "https://github.com/cdc-relay/cdc-relay",
					"org.opencontainers.image.title":       "cdc-relay",
					"org.opencontainers.image.version":     "v0.5.0",
				},
			}
			if !reflect.DeepEqual(cf.Config, want) {
				t.Errorf("config:\n got %+v\nwant %+v", cf.Config, want)
			}
			if cf.OS+"/"+cf.Architecture != target {
				t.Errorf("config's platform %s/%s, want %s", cf.OS, cf.Architecture, target)
			}
			if !cf.Created.Time.Equal(testCreated) || len(cf.History) != 1 || !cf.History[0].Created.Time.Equal(testCreated) {
				t.Errorf("created %v, history %+v: want the commit's time %v", cf.Created, cf.History, testCreated)
			}
			mt, err := img.MediaType()
			if err != nil || mt != types.OCIManifestSchema1 {
				t.Errorf("manifest media type %s (%v), want %s", mt, err, types.OCIManifestSchema1)
			}
		})
	}
}

// layerEntry is what a test reads of one entry of a layer.
type layerEntry struct {
	header tar.Header
	data   []byte
}

// readLayer returns img's one layer's entries in order, checking that the
// layer's diff ID is the SHA-256 of its tar.
func readLayer(t *testing.T, img v1.Image) []layerEntry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one", len(layers), err)
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip header: name %q, time %v; want neither", zr.Name, zr.ModTime)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	diffID, err := layers[0].DiffID()
	if sum := sha256.Sum256(raw); err != nil || diffID.Hex != hex.EncodeToString(sum[:]) {
		t.Errorf("diff ID %s (%v), want the tar's sha256:%x", diffID, err, sum)
	}
	return readTar(t, raw)
}

// readTar returns the entries of the tar data, in order.
func readTar(t *testing.T, data []byte) []layerEntry {
	t.Helper()
	var entries []layerEntry
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, layerEntry{*h, b})
	}
}

func TestLayerFiles(t *testing.T) {
	s := testSpec()
	idx := buildTestIndex(t, s)
	for _, target := range []string{"linux/amd64", "linux/arm64"} {
		t.Run(target, func(t *testing.T) {
			p := platformOf(t, s, target)
			want := []struct {
				name string
				mode int64
				data []byte
			}{
				{"cdc-relay", 0o755, p.Binary},
				{"usr/", 0o755, nil},
				{"usr/share/", 0o755, nil},
				{"usr/share/doc/", 0o755, nil},
				{"usr/share/doc/cdc-relay/", 0o755, nil},
				{"usr/share/doc/cdc-relay/LICENSE", 0o644, s.Docs[0].Data},
				{"usr/share/doc/cdc-relay/NOTICE", 0o644, s.Docs[1].Data},
				{"usr/share/doc/cdc-relay/THIRD_PARTY_NOTICES", 0o644, s.Docs[2].Data},
				{"usr/share/doc/cdc-relay/sbom.cdx.json", 0o644, p.SBOM},
			}
			got := readLayer(t, imageOf(t, idx, target))
			if len(got) != len(want) {
				t.Fatalf("%d entries, want %d: %v", len(got), len(want), got)
			}
			for i, w := range want {
				h := got[i].header
				typ := byte(tar.TypeReg)
				if strings.HasSuffix(w.name, "/") {
					typ = tar.TypeDir
				}
				if h.Name != w.name || h.Mode != w.mode || h.Typeflag != typ || !bytes.Equal(got[i].data, w.data) {
					t.Errorf("entry %d: %s mode %o type %c (%d bytes), want %s mode %o type %c (%d bytes)",
						i, h.Name, h.Mode, h.Typeflag, len(got[i].data), w.name, w.mode, typ, len(w.data))
				}
				if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(testCreated) {
					t.Errorf("%s: owner %d:%d (%q:%q), mtime %v; want 0:0 unnamed, %v", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, testCreated)
				}
			}
		})
	}
}

// testLayout returns the layout tar of s, failing the test on an error.
func testLayout(t *testing.T, s Spec) []byte {
	t.Helper()
	ref, err := s.Ref()
	if err != nil {
		t.Fatal(err)
	}
	data, err := Layout(buildTestIndex(t, s), ref, Tag(s.Version), s.Created)
	if err != nil {
		t.Fatalf("Layout: %v", err)
	}
	return data
}

func TestLayoutIsReproducible(t *testing.T) {
	s := testSpec()
	first := testLayout(t, s)
	slices.Reverse(s.Platforms)
	if second := testLayout(t, s); !bytes.Equal(first, second) {
		t.Fatalf("two builds of the same inputs differ: sha256 %x and %x", sha256.Sum256(first), sha256.Sum256(second))
	}
	s.Platforms[0].Binary = append(slices.Clone(s.Platforms[0].Binary), '!')
	if third := testLayout(t, s); bytes.Equal(first, third) {
		t.Errorf("another binary gave the same bytes")
	}
}

func TestLayoutTar(t *testing.T) {
	s := testSpec()
	entries := readTar(t, testLayout(t, s))
	files := map[string][]byte{}
	var names []string
	for _, e := range entries {
		names = append(names, e.header.Name)
		h := e.header
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(testCreated) || (h.Typeflag == tar.TypeDir) != (h.Mode == 0o755) || (h.Typeflag == tar.TypeReg) != (h.Mode == 0o644) {
			t.Errorf("%s: owner %d:%d, mode %o, mtime %v; want 0:0, 0755 for a directory and 0644 for a file, %v", h.Name, h.Uid, h.Gid, h.Mode, h.ModTime, testCreated)
		}
		if h.Typeflag == tar.TypeReg {
			files[h.Name] = e.data
		}
	}
	if !slices.IsSorted(names) || names[0] != "blobs/" || names[1] != "blobs/sha256/" {
		t.Errorf("entries %v: want them sorted, the directories first", names)
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout: %s", files["oci-layout"])
	}
	blobs := 0
	for name, data := range files {
		if hexName, ok := strings.CutPrefix(name, "blobs/sha256/"); ok {
			blobs++
			if sum := sha256.Sum256(data); hexName != hex.EncodeToString(sum[:]) {
				t.Errorf("%s holds a blob of sha256:%x", name, sum)
			}
		}
	}
	// The index, and per image its manifest, its config and its layer.
	if blobs != 1+3*len(s.Platforms) {
		t.Errorf("%d blobs, want %d", blobs, 1+3*len(s.Platforms))
	}
	var top v1.IndexManifest
	if err := json.Unmarshal(files["index.json"], &top); err != nil {
		t.Fatal(err)
	}
	wantNames := map[string]string{annotationRefName: "v0.5.0", annotationContainerdRef: "ghcr.io/cdc-relay/cdc-relay:v0.5.0"}
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != types.OCIImageIndex || !reflect.DeepEqual(top.Manifests[0].Annotations, wantNames) {
		t.Errorf("index.json: %s; want one image index named %v", files["index.json"], wantNames)
	}
	if _, ok := files["blobs/sha256/"+top.Manifests[0].Digest.Hex]; !ok {
		t.Errorf("index.json names %s, which is not among the blobs", top.Manifests[0].Digest)
	}
}

func TestTag(t *testing.T) {
	for version, want := range map[string]string{
		"v0.5.0":                            "v0.5.0",
		"v0.5.0-rc.1":                       "v0.5.0-rc.1",
		"v0.4.1-dev.3+g8d66468ba558":        "v0.4.1-dev.3_g8d66468ba558",
		"v0.5.0+g8d66468ba558.dirty":        "v0.5.0_g8d66468ba558.dirty",
		"v0.5.0-rc.1.dev.3+g8d66468ba558":   "v0.5.0-rc.1.dev.3_g8d66468ba558",
		"v0.0.0-dev.1044+gd8509c8ea3f4":     "v0.0.0-dev.1044_gd8509c8ea3f4",
		"v1.2.3-" + strings.Repeat("x", 10): "v1.2.3-xxxxxxxxxx",
	} {
		if got := Tag(version); got != want {
			t.Errorf("Tag(%q) = %q, want %q", version, got, want)
		}
		s := testSpec()
		s.Version = version
		if ref, err := s.Ref(); err != nil || ref != defaultRepository+":"+want {
			t.Errorf("Ref of %s: %q, %v", version, ref, err)
		}
	}
	s := testSpec()
	s.Repository = "Not/Valid"
	if _, err := s.Ref(); err == nil {
		t.Errorf("Ref of repository Not/Valid: no error")
	}
}
