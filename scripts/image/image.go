package main

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed parts.
const (
	// binaryPath is the relay in the image, its entrypoint.
	binaryPath = "/cdc-relay"
	// docDir holds the license files and the SBOM.
	docDir = "/usr/share/doc/cdc-relay"
	// sbomName is the platform's SBOM in docDir.
	sbomName = "sbom.cdx.json"
	// imageUser runs the relay: nobody's uid and gid, numeric (the image
	// has no /etc/passwd), the user of docker/Dockerfile's image and the
	// one the Kubernetes manifests and the chart run the pod as.
	imageUser = "65534:65534"
	// defaultRepository is where the releases' images are published; the
	// manifests and the chart name it.
	defaultRepository = "ghcr.io/cdc-relay/cdc-relay"
	// sourceURL is the repository the image is built from.
	sourceURL = "https://github.com/cdc-relay/cdc-relay"
)

// Spec is what an image index is built from: the same inputs give the
// same bytes.
type Spec struct {
	// Version is the release's version (v0.5.0), Revision the commit the
	// binaries were built from, Created its time.
	Version, Revision string
	Created           time.Time
	// Repository names the image, with Version as its tag, in the
	// layout's index (podman load takes the name from there).
	Repository string
	// Docs are the license files every image carries in docDir.
	Docs []File
	// Platforms are the images of the index, one per platform.
	Platforms []Platform
}

// File is a file's name (without a directory) and contents.
type File struct {
	Name string
	Data []byte
}

// Platform is one image of the index: the static binary built for OS and
// Arch, and its SBOM.
type Platform struct {
	OS, Arch     string
	Binary, SBOM []byte
}

// String is the platform as os/arch.
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Tag is the image's tag for version: the version, with the build
// metadata's + (v0.5.0-dev.3+g8d66468ba558), which a tag may not hold, as
// _ (the convention Helm follows for OCI tags).
func Tag(version string) string {
	return strings.ReplaceAll(version, "+", "_")
}

// Ref is the image's name and tag, repository:Tag(version), checked.
func (s Spec) Ref() (string, error) {
	ref := s.Repository + ":" + Tag(s.Version)
	if _, err := name.NewTag(ref, name.StrictValidation); err != nil {
		return "", fmt.Errorf("the image would be named %s, which is not a valid image name and tag: %w", ref, err)
	}
	return ref, nil
}

// Labels are the OCI annotations of every image's config and of the
// index: what the image is, of which version and commit, under which
// license, from where.
func (s Spec) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.description": "Relays transactional-outbox events from PostgreSQL to Kafka",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.revision":    s.Revision,
		"org.opencontainers.image.source":      sourceURL,
		"org.opencontainers.image.title":       "cdc-relay",
		"org.opencontainers.image.version":     s.Version,
	}
}

// BuildIndex returns the OCI image index of s: one image per platform, in
// os/arch order, each of one layer (layerFiles) and the config
// imageConfig describes, all dated s.Created.
func BuildIndex(s Spec) (v1.ImageIndex, error) {
	platforms := slices.Clone(s.Platforms)
	slices.SortFunc(platforms, func(a, b Platform) int { return strings.Compare(a.String(), b.String()) })
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, p := range platforms {
		if i > 0 && p.String() == platforms[i-1].String() {
			return nil, fmt.Errorf("platform %s given twice", p)
		}
		img, err := buildImage(s, p)
		if err != nil {
			return nil, fmt.Errorf("the image for %s: %w", p, err)
		}
		desc, err := imageDescriptor(img)
		if err != nil {
			return nil, fmt.Errorf("the image for %s: %w", p, err)
		}
		desc.Platform = &v1.Platform{OS: p.OS, Architecture: p.Arch}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: described{img, desc}})
	}
	if len(platforms) == 0 {
		return nil, fmt.Errorf("no platform to build an image for")
	}
	return mutate.Annotations(idx, s.Labels()).(v1.ImageIndex), nil
}

// described is an image with the descriptor the index lists it by.
type described struct {
	v1.Image
	desc v1.Descriptor
}

// Descriptor is the image's descriptor in the index.
func (d described) Descriptor() (*v1.Descriptor, error) { return &d.desc, nil }

// imageDescriptor returns img's descriptor in an index: its media type,
// size and digest, without the artifactType go-containerregistry would add
// (the config's media type), which the OCI specification keeps for
// artifacts that are not images.
func imageDescriptor(img v1.Image) (v1.Descriptor, error) {
	var d v1.Descriptor
	var err error
	if d.MediaType, err = img.MediaType(); err != nil {
		return d, err
	}
	if d.Size, err = img.Size(); err != nil {
		return d, err
	}
	d.Digest, err = img.Digest()
	return d, err
}

// buildImage returns the image of platform p: its one layer, and the
// config imageConfig describes.
func buildImage(s Spec, p Platform) (v1.Image, error) {
	files := layerFiles(s, p)
	gz, err := gzipLayer(files, s.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("the layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: s.Created.UTC()},
			CreatedBy: "cdc-relay scripts/image build",
			Comment:   "the release's static binary, its SBOM and the license files",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("the config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Arch
	cf.Created = v1.Time{Time: s.Created.UTC()}
	cf.Config = imageConfig(s)
	return mutate.ConfigFile(img, cf)
}

// imageConfig is how the image runs: /cdc-relay run as nobody (65534, not
// root) from /, with PATH=/ so that `kubectl exec POD -- cdc-relay status`
// finds the binary, and nothing else in the environment (the settings
// and secrets come from the container's own). Cmd is run, as in
// docker/Dockerfile's image: `podman run IMAGE` starts the relay, and
// `podman run IMAGE --version` or `status` replaces it; the manifests and
// the chart pass args ["run"] all the same.
func imageConfig(s Spec) v1.Config {
	return v1.Config{
		User:       imageUser,
		Entrypoint: []string{binaryPath},
		Cmd:        []string{"run"},
		Env:        []string{"PATH=/"},
		WorkingDir: "/",
		Labels:     s.Labels(),
	}
}
