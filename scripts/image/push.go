package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// pushUsage is push's help, before its flags.
const pushUsage = `Usage: go run . push OCI.tar REGISTRY/NAME:TAG [REGISTRY/NAME:TAG]...

Pushes the image index of OCI.tar (the tar of an OCI image layout that
build, and so make release, writes: dist/cdc-relay-<version>-oci.tar) to
the first name, every platform's image with it, and tags it with the
others. Each name is whole: its registry, repository and tag, e.g.

  go run . push ../../dist/cdc-relay-v0.5.0-oci.tar \
      ghcr.io/OWNER/cdc-relay:v0.5.0 ghcr.io/OWNER/cdc-relay:latest

The credentials are those docker login left (the docker config,
$DOCKER_CONFIG, a credential helper it names); podman's auth.json or
$REGISTRY_AUTH_FILE only where there is no docker config, so with podman
log in with podman login --authfile ~/.docker/config.json. None is
printed. It prints each name pushed and the
index's digest, to pin the image by (NAME@sha256:…).
`

// runPush is the push command.
func runPush(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("push", pushUsage, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 2 {
		return usageError{"push needs the tar and at least one name: push OCI.tar REGISTRY/NAME:TAG"}
	}
	tags, err := parseTags(fs.Args()[1:])
	if err != nil {
		return err
	}
	return Push(ctx, fs.Arg(0), tags, stdout, remote.WithAuthFromKeychain(authn.DefaultKeychain))
}

// parseTags parses whole image names (registry, repository and tag), or
// says which is not.
func parseTags(args []string) ([]name.Tag, error) {
	var tags []name.Tag
	for _, a := range args {
		const want = "want a whole name with its registry and tag, e.g. ghcr.io/OWNER/cdc-relay:v0.5.0"
		if !strings.Contains(path.Base(a), ":") {
			return nil, usageError{fmt.Sprintf("%q has no tag: %s", a, want)}
		}
		t, err := name.NewTag(a, name.StrictValidation)
		if err != nil {
			return nil, usageError{fmt.Sprintf("%q: %s (%v)", a, want, err)}
		}
		tags = append(tags, t)
	}
	return tags, nil
}

// Push pushes the image index of the layout tar at tarPath to tags[0] and
// tags it with the others, with opts (the credentials) besides the
// context; it writes what it pushed to w.
func Push(ctx context.Context, tarPath string, tags []name.Tag, w io.Writer, opts ...remote.Option) error {
	dir, err := os.MkdirTemp("", "cdc-relay-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := untarLayout(tarPath, dir); err != nil {
		return err
	}
	idx, err := layoutIndex(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", tarPath, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return fmt.Errorf("%s: %w", tarPath, err)
	}
	opts = append(opts, remote.WithContext(ctx), remote.WithUserAgent("cdc-relay-image"))
	if err := remote.WriteIndex(tags[0], idx, opts...); err != nil {
		return pushError(tags[0], err)
	}
	fmt.Fprintf(w, "pushed %s\n", tags[0])
	for _, t := range tags[1:] {
		if err := remote.Tag(t, idx, opts...); err != nil {
			return pushError(t, err)
		}
		fmt.Fprintf(w, "tagged %s\n", t)
	}
	fmt.Fprintf(w, "digest %s: pin it as %s@%s\n", digest, tags[0].Context(), digest)
	return nil
}

// pushError says what failed, and what to do when the registry refused
// the credentials or their lack.
func pushError(t name.Tag, err error) error {
	var te *transport.Error
	if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
		return fmt.Errorf("pushing %s: %w\nlog in to %s first (docker login %s, or podman login --authfile ~/.docker/config.json %s) with a token that may write to %s (on ghcr.io: a token with write:packages)",
			t, err, t.RegistryStr(), t.RegistryStr(), t.RegistryStr(), t.RepositoryStr())
	}
	return fmt.Errorf("pushing %s: %w", t, err)
}

// layoutIndex returns the one image index that the layout in dir holds:
// what build writes.
func layoutIndex(dir string) (v1.ImageIndex, error) {
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("not an OCI image layout: %w", err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	if len(im.Manifests) != 1 || !im.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("index.json must name one image index (as go run . build writes), not %d entries", len(im.Manifests))
	}
	return top.ImageIndex(im.Manifests[0].Digest)
}

// layoutName is a file an OCI image layout may hold.
var layoutName = regexp.MustCompile(`^(oci-layout|index\.json|blobs/sha256/[0-9a-f]{64})$`)

// untarLayout unpacks the layout's tar at tarPath into dir: its
// oci-layout, index.json and blobs, and nothing else (no other name, no
// link, no path out of dir).
func untarLayout(tarPath, dir string) error {
	f, err := os.Open(tarPath)
	if err != nil {
		return fmt.Errorf("%w: build it with make release (or go run . build)", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: not a tar: %w", tarPath, err)
		}
		name := strings.TrimPrefix(path.Clean(h.Name), "./")
		switch {
		case h.Typeflag == tar.TypeDir && (name == "blobs" || name == "blobs/sha256" || name == "."):
			continue
		case h.Typeflag != tar.TypeReg || !layoutName.MatchString(name):
			return fmt.Errorf("%s: %s: not a file of an OCI image layout (oci-layout, index.json, blobs/sha256/<digest>)", tarPath, h.Name)
		}
		if err := writeFrom(filepath.Join(dir, filepath.FromSlash(name)), tr); err != nil {
			return fmt.Errorf("%s: %s: %w", tarPath, h.Name, err)
		}
	}
}

// writeFrom writes r to the file path, making its directory.
func writeFrom(path string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
