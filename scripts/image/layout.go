package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The annotations of the layout's index.json that name the image: the tag
// (the OCI specification's ref.name), and the whole name, which podman
// load and containerd's import use for the loaded image.
const (
	annotationRefName       = "org.opencontainers.image.ref.name"
	annotationContainerdRef = "io.containerd.image.name"
)

// ociLayoutFile is the layout's oci-layout file.
const ociLayoutFile = `{"imageLayoutVersion":"1.0.0"}`

// Layout returns the tar of an OCI image layout that holds idx under the
// name ref (repository:tag): oci-layout, index.json with one entry, idx
// and its name, and every blob idx refers to under blobs/sha256/, dated
// mtime as writeTar writes.
func Layout(idx v1.ImageIndex, ref, tag string, mtime time.Time) ([]byte, error) {
	blobs, err := indexBlobs(idx)
	if err != nil {
		return nil, err
	}
	raw, err := idx.RawManifest()
	if err != nil {
		return nil, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	top, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType:   types.OCIImageIndex,
			Size:        int64(len(raw)),
			Digest:      digest,
			Annotations: map[string]string{annotationRefName: tag, annotationContainerdRef: ref},
		}},
	})
	if err != nil {
		return nil, err
	}
	entries := []entry{
		{name: "oci-layout", mode: 0o644, data: []byte(ociLayoutFile)},
		{name: "index.json", mode: 0o644, data: top},
	}
	for hex, data := range blobs {
		entries = append(entries, entry{name: "blobs/sha256/" + hex, mode: 0o644, data: data})
	}
	return writeTar(withDirs(entries), mtime)
}

// indexBlobs returns every blob of idx by the hex of its SHA-256: idx's
// manifest, and each image's manifest, config and layers.
func indexBlobs(idx v1.ImageIndex) (map[string][]byte, error) {
	blobs := map[string][]byte{}
	add := func(d v1.Hash, data []byte, err error) error {
		if err != nil {
			return err
		}
		if d.Algorithm != "sha256" {
			return fmt.Errorf("blob %s: only sha256 digests are written", d)
		}
		blobs[d.Hex] = data
		return nil
	}
	raw, err := idx.RawManifest()
	d, derr := idx.Digest()
	if err := add(d, raw, firstErr(err, derr)); err != nil {
		return nil, fmt.Errorf("the index: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("the index: %w", err)
	}
	for _, desc := range im.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", desc.Digest, err)
		}
		if err := imageBlobs(img, add); err != nil {
			return nil, fmt.Errorf("image %s: %w", desc.Digest, err)
		}
	}
	return blobs, nil
}

// imageBlobs passes to add each blob of img with its digest: its
// manifest, its config and its compressed layers.
func imageBlobs(img v1.Image, add func(v1.Hash, []byte, error) error) error {
	raw, err := img.RawManifest()
	d, derr := img.Digest()
	if err := add(d, raw, firstErr(err, derr)); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	cfg, err := img.RawConfigFile()
	cd, cerr := img.ConfigName()
	if err := add(cd, cfg, firstErr(err, cerr)); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("layers: %w", err)
	}
	for _, l := range layers {
		ld, err := l.Digest()
		if err != nil {
			return fmt.Errorf("layer: %w", err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return fmt.Errorf("layer %s: %w", ld, err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err := add(ld, data, err); err != nil {
			return fmt.Errorf("layer %s: %w", ld, err)
		}
	}
	return nil
}

// firstErr returns the first error of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
