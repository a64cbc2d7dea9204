package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// checkArchive says what is wrong with archive a: it must hold the
// archiveFiles at its top (more is allowed only as further files there,
// and the manual under docs/), owned by 0:0, every page of docs/ the
// README links to, and its binary must be for its target and carry its
// version. It returns the binary's SHA-256 in hex, or "" if there is
// none.
func checkArchive(a artifact) (binaryHash string, problems []string) {
	files, err := readArchive(a.path)
	if err != nil {
		return "", []string{fmt.Sprintf("%s: %v", a.path, err)}
	}
	for _, name := range archiveFiles {
		if _, ok := files[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s: no %s in it", a.path, name))
		}
	}
	for _, page := range linkedDocs(files["README.md"]) {
		if _, ok := files[page]; !ok {
			problems = append(problems, fmt.Sprintf("%s: README.md links to %s, which is not in it", a.path, page))
		}
	}
	bin, ok := files["cdc-relay"]
	if !ok {
		return "", problems
	}
	if err := checkBinary(bin, a.target); err != nil {
		problems = append(problems, fmt.Sprintf("%s: cdc-relay: %v", a.path, err))
	}
	if err := checkStamp(bin, a.version); err != nil {
		problems = append(problems, fmt.Sprintf("%s: cdc-relay: %v", a.path, err))
	}
	sum := sha256.Sum256(bin)
	return hex.EncodeToString(sum[:]), problems
}

// readArchive returns the contents of the regular files of a .tar.gz by
// name, or an error if any entry is not a regular file owned by 0:0, or
// the binary is not executable.
func readArchive(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		return nil, fmt.Errorf("gzip header holds a name (%q) or a time (%v): compress with gzip -n", zr.Name, zr.ModTime)
	}
	return readTarFiles(zr, func(h *tar.Header) (bool, error) { return h.Typeflag == tar.TypeDir, checkHeader(h) })
}

// docsLink finds the relative links of a Markdown text into docs/, up to
// an anchor.
var docsLink = regexp.MustCompile(`\]\((docs/[^)#\s]+)`)

// linkedDocs returns the files under docs/ that readme links to, each
// once, in the order of their first link; a link to a directory is left
// out.
func linkedDocs(readme []byte) []string {
	var pages []string
	seen := map[string]bool{}
	for _, m := range docsLink.FindAllSubmatch(readme, -1) {
		page := string(m[1])
		if strings.HasSuffix(page, "/") || seen[page] {
			continue
		}
		seen[page] = true
		pages = append(pages, page)
	}
	return pages
}

// readTarFiles returns the contents of the entries of the tar r by name,
// but those check skips, or the first error check returns.
func readTarFiles(r io.Reader, check func(*tar.Header) (skip bool, err error)) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		skip, err := check(h)
		if err != nil {
			return nil, err
		}
		if skip {
			continue
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			return nil, err
		}
	}
}

// checkHeader says what is wrong with one archive entry: it must be a
// regular file at the top, or a regular file or a directory under docs/
// (the manual), owned by 0:0, 0755 for the binary and a directory and
// 0644 else.
func checkHeader(h *tar.Header) error {
	want := int64(0o644)
	if h.Name == "cdc-relay" || h.Typeflag == tar.TypeDir {
		want = 0o755
	}
	inDocs := strings.HasPrefix(h.Name, "docs/") && !strings.Contains(h.Name, "..")
	switch {
	case h.Typeflag == tar.TypeDir && !inDocs:
		return fmt.Errorf("%s: a directory, and only docs/ may be one", h.Name)
	case h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir:
		return fmt.Errorf("%s: not a regular file", h.Name)
	case h.Typeflag == tar.TypeReg && strings.Contains(h.Name, "/") && !inDocs:
		return fmt.Errorf("%s: not at the top of the archive, nor under docs/", h.Name)
	case h.Uid != 0 || h.Gid != 0:
		return fmt.Errorf("%s: owned by %d:%d, want 0:0", h.Name, h.Uid, h.Gid)
	case h.Mode != want:
		return fmt.Errorf("%s: mode %o, want %o", h.Name, h.Mode, want)
	}
	return nil
}
