package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// imageRepository is the name the image's layout gives it, with its tag.
const imageRepository = "ghcr.io/cdc-relay/cdc-relay"

// The OCI media types the image is made of.
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// imageDocs are the files each image's layer holds besides the binary,
// under /usr/share/doc/cdc-relay/.
var imageDocs = []string{"LICENSE", "NOTICE", "THIRD_PARTY_NOTICES", "sbom.cdx.json"}

// descriptor is an OCI descriptor: what an index or a manifest says of a
// blob.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

// manifest is an OCI image index or image manifest.
type manifest struct {
	MediaType string       `json:"mediaType"`
	Manifests []descriptor `json:"manifests"`
	Config    descriptor   `json:"config"`
	Layers    []descriptor `json:"layers"`
}

// imageConfig is the part of an OCI image config that the check reads.
type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Created      string `json:"created"`
	Config       struct {
		User       string
		Entrypoint []string
		Labels     map[string]string
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// layout is an OCI image layout's files by name, read from its tar.
type layout map[string][]byte

// blob returns the blob of digest (sha256:<hex>), or an error.
func (l layout) blob(digest string) ([]byte, error) {
	hexDigest, ok := strings.CutPrefix(digest, "sha256:")
	data, found := l["blobs/sha256/"+hexDigest]
	if !ok || !found {
		return nil, fmt.Errorf("no blob %s", digest)
	}
	return data, nil
}

// json decodes the blob of d, of media type want, into v.
func (l layout) json(d descriptor, want string, v any) error {
	if d.MediaType != want {
		return fmt.Errorf("%s is of media type %q, want %s", d.Digest, d.MediaType, want)
	}
	data, err := l.blob(d.Digest)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %v", d.Digest, err)
	}
	return nil
}

// wantImage is what the image of a release must hold: the linux targets
// (linux-amd64) among the release's, and the SHA-256 (hex) of the binary
// archived and of the SBOM written for each.
type wantImage struct {
	version              string
	targets              []string
	binaryHash, sbomHash map[string]string
}

// checkImage says what is wrong with the image tar a: every blob must be
// named by its digest; index.json must name one image index
// imageRepository:<tag>, with exactly one image per target of w; each
// image runs /cdc-relay as a user that is not root, is labelled with the
// version, and has one layer holding the binary archived for its target,
// that target's SBOM and the license files.
func checkImage(a artifact, w wantImage) []string {
	l, err := readLayout(a.path)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", a.path, err)}
	}
	problems := checkBlobs(l)
	index, err := topIndex(l, w.version)
	if err != nil {
		return append(problems, err.Error())
	}
	var got []string
	for _, d := range index.Manifests {
		if d.Platform == nil {
			problems = append(problems, fmt.Sprintf("image %s has no platform", d.Digest))
			continue
		}
		target := d.Platform.OS + "-" + d.Platform.Architecture
		got = append(got, target)
		for _, p := range checkPlatformImage(l, d, target, w) {
			problems = append(problems, target+": "+p)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, w.targets) {
		problems = append(problems, fmt.Sprintf("images for %v, want exactly one for each of %v", got, w.targets))
	}
	for i, p := range problems {
		problems[i] = a.path + ": " + p
	}
	return problems
}

// topIndex returns the image index that the layout's index.json names,
// checking it names it imageRepository:<the version's tag>.
func topIndex(l layout, version string) (manifest, error) {
	var top, index manifest
	if string(l["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		return index, fmt.Errorf("oci-layout is %q, want the OCI image layout 1.0.0's", l["oci-layout"])
	}
	if err := json.Unmarshal(l["index.json"], &top); err != nil {
		return index, fmt.Errorf("index.json: %v", err)
	}
	if len(top.Manifests) != 1 {
		return index, fmt.Errorf("index.json lists %d entries, want one image index", len(top.Manifests))
	}
	d := top.Manifests[0]
	tag := strings.ReplaceAll(version, "+", "_")
	if n := d.Annotations["io.containerd.image.name"]; n != imageRepository+":"+tag || d.Annotations["org.opencontainers.image.ref.name"] != tag {
		return index, fmt.Errorf("index.json names the image %q (tag %q), want %s:%s", n, d.Annotations["org.opencontainers.image.ref.name"], imageRepository, tag)
	}
	if err := l.json(d, mediaIndex, &index); err != nil {
		return index, fmt.Errorf("index.json: %v", err)
	}
	return index, nil
}

// checkPlatformImage says what is wrong with the image d of the index,
// for target.
func checkPlatformImage(l layout, d descriptor, target string, w wantImage) []string {
	var m manifest
	if err := l.json(d, mediaManifest, &m); err != nil {
		return []string{err.Error()}
	}
	var cfg imageConfig
	if err := l.json(m.Config, mediaConfig, &cfg); err != nil {
		return []string{"config: " + err.Error()}
	}
	problems := checkConfig(cfg, target, w.version)
	if len(m.Layers) != 1 || len(cfg.RootFS.DiffIDs) != 1 {
		return append(problems, fmt.Sprintf("%d layers and %d diff IDs, want one", len(m.Layers), len(cfg.RootFS.DiffIDs)))
	}
	files, err := readLayer(l, m.Layers[0], cfg.RootFS.DiffIDs[0])
	if err != nil {
		return append(problems, "layer: "+err.Error())
	}
	return append(problems, checkLayerFiles(files, target, w)...)
}

// checkConfig says what is wrong with the image's config for target:
// its platform, a user that is not root, the entrypoint /cdc-relay, the
// version's label and a date.
func checkConfig(cfg imageConfig, target, version string) []string {
	var problems []string
	c := cfg.Config
	if cfg.OS+"-"+cfg.Architecture != target {
		problems = append(problems, fmt.Sprintf("config for %s/%s", cfg.OS, cfg.Architecture))
	}
	if !nonRoot(c.User) {
		problems = append(problems, fmt.Sprintf("runs as user %q, want a numeric uid:gid that is not root", c.User))
	}
	if !reflect.DeepEqual(c.Entrypoint, []string{"/cdc-relay"}) {
		problems = append(problems, fmt.Sprintf("entrypoint %q, want [/cdc-relay]", c.Entrypoint))
	}
	if c.Labels["org.opencontainers.image.version"] != version || cfg.Created == "" {
		problems = append(problems, fmt.Sprintf("labelled version %q, created %q: want %s and the commit's time", c.Labels["org.opencontainers.image.version"], cfg.Created, version))
	}
	return problems
}

// nonRoot reports whether user is uid:gid, both numbers, the uid not 0:
// a runtime then needs no /etc/passwd, and Kubernetes' runAsNonRoot can
// tell that it is not root.
func nonRoot(user string) bool {
	uid, gid, ok := strings.Cut(user, ":")
	u, err1 := strconv.ParseUint(uid, 10, 32)
	_, err2 := strconv.ParseUint(gid, 10, 32)
	return ok && err1 == nil && err2 == nil && u != 0
}

// checkLayerFiles says what is wrong unless the layer's files are the
// binary archived for target at cdc-relay, that target's SBOM and the
// license files.
func checkLayerFiles(files map[string][]byte, target string, w wantImage) []string {
	var problems []string
	for _, name := range append([]string{"cdc-relay"}, imageDocs...) {
		path := name
		if name != "cdc-relay" {
			path = "usr/share/doc/cdc-relay/" + name
		}
		data, ok := files[path]
		sum := sha256.Sum256(data)
		switch {
		case !ok:
			problems = append(problems, "the layer has no /"+path)
		case name == "cdc-relay" && hex.EncodeToString(sum[:]) != w.binaryHash[target]:
			problems = append(problems, fmt.Sprintf("/cdc-relay has SHA-256 %x, but the archive's binary %s", sum, w.binaryHash[target]))
		case name == "sbom.cdx.json" && hex.EncodeToString(sum[:]) != w.sbomHash[target]:
			problems = append(problems, fmt.Sprintf("/%s has SHA-256 %x, but the release's SBOM %s", path, sum, w.sbomHash[target]))
		}
	}
	return problems
}

// checkBlobs says which blobs of l are not named by their SHA-256.
func checkBlobs(l layout) []string {
	var problems []string
	for name, data := range l {
		if hexDigest, ok := strings.CutPrefix(name, "blobs/sha256/"); ok {
			if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hexDigest {
				problems = append(problems, fmt.Sprintf("%s holds a blob of SHA-256 %x", name, sum))
			}
		}
	}
	slices.Sort(problems)
	return problems
}

// readLayout returns the regular files of the tar at path, or an error if
// an entry is neither a file nor a directory, or is not owned by 0:0.
func readLayout(path string) (layout, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files, err := readTar(f)
	return layout(files), err
}

// readLayer returns the files of the gzip layer d, checking that its tar's
// SHA-256 is diffID.
func readLayer(l layout, d descriptor, diffID string) (map[string][]byte, error) {
	if d.MediaType != mediaLayer {
		return nil, fmt.Errorf("of media type %q, want %s", d.MediaType, mediaLayer)
	}
	gz, err := l.blob(d.Digest)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != diffID {
		return nil, fmt.Errorf("its tar has SHA-256 %x, but the config's diff ID is %s", sum, diffID)
	}
	return readTar(bytes.NewReader(raw))
}

// readTar returns the regular files of the tar r by name, or an error if
// an entry is neither a file nor a directory, or is not owned by 0:0.
func readTar(r io.Reader) (map[string][]byte, error) {
	return readTarFiles(r, func(h *tar.Header) (bool, error) {
		switch {
		case h.Uid != 0 || h.Gid != 0:
			return false, fmt.Errorf("%s: owned by %d:%d, want 0:0", h.Name, h.Uid, h.Gid)
		case h.Typeflag == tar.TypeDir:
			return true, nil
		case h.Typeflag != tar.TypeReg:
			return false, fmt.Errorf("%s: neither a file nor a directory", h.Name)
		case h.Name == "cdc-relay" && h.Mode != 0o755:
			return false, fmt.Errorf("%s: mode %o, want 755", h.Name, h.Mode)
		}
		return false, nil
	})
}
