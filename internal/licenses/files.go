package licenses

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Entry is one module with its license files' texts and their
// classification.
type Entry struct {
	Module
	// License is the text of the module's license file.
	License string
	// Notice is the text of its NOTICE file, empty when it has none.
	Notice string
	// Patents is the text of its PATENTS file (an additional patent grant,
	// as the Go project's), empty when it has none.
	Patents string
	// Classification is what Classify found in License and Others
	// together: every license found, refused when any file is.
	Classification Classification
	// Others are the module root's license files after the first
	// (LICENSE-MIT beside LICENSE-APACHE, COPYING beside LICENSE), in name
	// order, then the license and NOTICE files of the directories from each
	// linked package up to the root, by path.
	Others []LicenseFile
}

// LicenseFile is one more license file of a module.
type LicenseFile struct {
	// Name is the file's slash path from the module's root directory.
	Name string
	// Text is its text.
	Text string
}

// Find reads each module's license files (LICENSE, LICENCE or COPYING,
// with any extension or a suffix after - or _, such as LICENSE-MIT, in the
// module's root directory), every one of them, its NOTICE and PATENTS
// files when it has them, and classifies the license. A module without a
// license file is an error naming it.
func Find(mods []Module) ([]Entry, error) {
	entries := make([]Entry, 0, len(mods))
	for _, m := range mods {
		e, err := find(m)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func find(m Module) (Entry, error) {
	names, err := os.ReadDir(m.Dir)
	if err != nil {
		return Entry{}, fmt.Errorf("reading the files of %s %s: %w", m.Path, m.Version, err)
	}
	var files []string
	for _, n := range names {
		if !n.IsDir() {
			files = append(files, n.Name())
		}
	}
	sort.Strings(files)
	e := Entry{Module: m}
	licenseFiles := allLicenseFiles(files)
	if len(licenseFiles) == 0 {
		return Entry{}, fmt.Errorf("module %s %s has no LICENSE file in %s: a module without a license may not be redistributed; remove the dependency or ask its authors for a license", m.Path, m.Version, m.Dir)
	}
	if e.License, err = readText(m.Dir, licenseFiles[0]); err != nil {
		return Entry{}, err
	}
	classes := []Classification{Classify(e.License)}
	for _, name := range licenseFiles[1:] {
		text, err := readText(m.Dir, name)
		if err != nil {
			return Entry{}, err
		}
		e.Others = append(e.Others, LicenseFile{Name: name, Text: text})
		classes = append(classes, Classify(text))
	}
	if e.Notice, err = readText(m.Dir, firstNamed(files, "NOTICE")); err != nil {
		return Entry{}, err
	}
	if e.Patents, err = readText(m.Dir, firstNamed(files, "PATENTS")); err != nil {
		return Entry{}, err
	}
	below, err := packageLicenseFiles(m)
	if err != nil {
		return Entry{}, err
	}
	for _, f := range below {
		e.Others = append(e.Others, f)
		if !isNotice(f.Name) {
			classes = append(classes, Classify(f.Text))
		}
	}
	e.Classification = combine(classes)
	return e, nil
}

// packageLicenseFiles returns the license and NOTICE files of the
// directories between each of m's linked packages and m's root (the root
// left out), named by their slash path from the root, sorted.
func packageLicenseFiles(m Module) ([]LicenseFile, error) {
	dirs := map[string]bool{}
	for _, d := range m.PackageDirs {
		for rel, err := filepath.Rel(m.Dir, d); err == nil && rel != "." && !strings.HasPrefix(rel, ".."); rel = filepath.Dir(rel) {
			dirs[rel] = true
		}
	}
	var out []LicenseFile
	for _, rel := range sortedKeys(dirs) {
		names, err := os.ReadDir(filepath.Join(m.Dir, rel))
		if err != nil {
			return nil, fmt.Errorf("reading the files of %s %s: %w", m.Path, m.Version, err)
		}
		var files []string
		for _, n := range names {
			if !n.IsDir() {
				files = append(files, n.Name())
			}
		}
		sort.Strings(files)
		for _, name := range append(allLicenseFiles(files), allNamed(files, "NOTICE")...) {
			text, err := readText(filepath.Join(m.Dir, rel), name)
			if err != nil {
				return nil, err
			}
			out = append(out, LicenseFile{Name: filepath.ToSlash(filepath.Join(rel, name)), Text: text})
		}
	}
	return out, nil
}

// sortedKeys returns the keys of set, sorted.
func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// allNamed returns the files whose name, without its extension and
// ignoring case, is base.
func allNamed(files []string, base string) []string {
	var out []string
	for _, f := range files {
		if strings.EqualFold(strings.TrimSuffix(f, filepath.Ext(f)), base) {
			out = append(out, f)
		}
	}
	return out
}

// isNotice reports whether a file's path names a NOTICE file.
func isNotice(path string) bool {
	base := filepath.Base(path)
	return strings.EqualFold(strings.TrimSuffix(base, filepath.Ext(base)), "NOTICE")
}

// allLicenseFiles returns the license files among files (sorted): those
// whose name, without its extension and ignoring case, is LICENSE, LICENCE
// or COPYING, or begins with one of them and - or _.
func allLicenseFiles(files []string) []string {
	var out []string
	for _, f := range files {
		stem := strings.ToUpper(strings.TrimSuffix(f, filepath.Ext(f)))
		for _, b := range []string{"LICENSE", "LICENCE", "COPYING"} {
			if stem == b || strings.HasPrefix(stem, b+"-") || strings.HasPrefix(stem, b+"_") {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// combine returns the classification of a module with several license
// files: every license found, in licenseKinds' order; refused (the first
// reason) when any file is refused or unknown.
func combine(cs []Classification) Classification {
	found := map[string]bool{}
	for _, c := range cs {
		if c.Reason != "" {
			return c
		}
		if len(c.IDs) == 0 {
			return Classification{Reason: Unknown}
		}
		for _, id := range c.IDs {
			found[id] = true
		}
	}
	var out Classification
	for _, k := range licenseKinds() {
		if found[k.id] {
			out.IDs = append(out.IDs, k.id)
		}
	}
	return out
}

// firstNamed returns the first of files (sorted) whose name, without its
// extension and ignoring case, is one of bases; "" when none is.
func firstNamed(files []string, bases ...string) string {
	for _, f := range files {
		stem := strings.TrimSuffix(f, filepath.Ext(f))
		for _, b := range bases {
			if strings.EqualFold(stem, b) {
				return f
			}
		}
	}
	return ""
}

// readText returns the text of dir/name with CRLF line ends made LF and
// exactly one final newline; "" when name is "".
func readText(dir, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", fmt.Errorf("reading a license file: %w", err)
	}
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	return strings.TrimRight(text, "\n \t") + "\n", nil
}

// Check returns an error naming every module whose license does not allow
// distributing the binary under Apache-2.0 (refused or unknown), with what
// to do; nil when every license is allowed.
func Check(entries []Entry) error {
	var bad []string
	for _, e := range entries {
		if refused := e.Classification.Refused(); len(refused) > 0 {
			bad = append(bad, fmt.Sprintf("%s %s: %s", e.Path, e.Version, strings.Join(refused, ", ")))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("these modules' licenses do not allow distributing cdc-relay under the Apache License 2.0:\n  %s\n"+
		"remove or replace the dependency; if a license is \"unknown\", read it, and if it allows distribution teach internal/licenses to recognise it",
		strings.Join(bad, "\n  "))
}
