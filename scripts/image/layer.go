package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// entry is one file or directory of a tar that writeTar writes: a name
// ending in / is a directory.
type entry struct {
	name string
	mode int64
	data []byte
}

// layerFiles are the files of platform p's layer: the binary at
// binaryPath (0755), the license files of s and the SBOM in docDir (0644),
// and the directories above them (0755).
func layerFiles(s Spec, p Platform) []entry {
	files := []entry{{name: strings.TrimPrefix(binaryPath, "/"), mode: 0o755, data: p.Binary}}
	dir := strings.TrimPrefix(docDir, "/")
	for _, d := range s.Docs {
		files = append(files, entry{name: path.Join(dir, d.Name), mode: 0o644, data: d.Data})
	}
	files = append(files, entry{name: path.Join(dir, sbomName), mode: 0o644, data: p.SBOM})
	return withDirs(files)
}

// withDirs returns files with an entry for every directory above them,
// each once.
func withDirs(files []entry) []entry {
	seen := map[string]bool{}
	out := slices.Clone(files)
	for _, f := range files {
		for d := path.Dir(f.name); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			out = append(out, entry{name: d + "/", mode: 0o755})
		}
	}
	return out
}

// writeTar returns the tar of entries, sorted by name, each owned by 0:0
// with no user or group name, dated mtime, in the ustar format: the same
// entries give the same bytes.
func writeTar(entries []entry, mtime time.Time) ([]byte, error) {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, e := range sorted {
		if i > 0 && e.name == sorted[i-1].name {
			return nil, fmt.Errorf("%s given twice", e.name)
		}
		h := &tar.Header{
			Name:     e.name,
			Mode:     e.mode,
			ModTime:  mtime.UTC().Truncate(time.Second),
			Typeflag: tar.TypeReg,
			Size:     int64(len(e.data)),
			Format:   tar.FormatUSTAR,
		}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipLayer returns the tar of files compressed by gzip at its best
// compression, with no name or time in its header: the same files give
// the same bytes with the same Go (release.sh pins the toolchain).
func gzipLayer(files []entry, mtime time.Time) ([]byte, error) {
	raw, err := writeTar(files, mtime)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
