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
	// Classification is what Classify found in License.
	Classification Classification
}

// Find reads each module's license file (LICENSE, LICENCE or COPYING, with
// any extension, in the module's root directory), its NOTICE and PATENTS
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
	licenseFile := firstNamed(files, "LICENSE", "LICENCE", "COPYING")
	if licenseFile == "" {
		return Entry{}, fmt.Errorf("module %s %s has no LICENSE file in %s: a module without a license may not be redistributed; remove the dependency or ask its authors for a license", m.Path, m.Version, m.Dir)
	}
	if e.License, err = readText(m.Dir, licenseFile); err != nil {
		return Entry{}, err
	}
	if e.Notice, err = readText(m.Dir, firstNamed(files, "NOTICE")); err != nil {
		return Entry{}, err
	}
	if e.Patents, err = readText(m.Dir, firstNamed(files, "PATENTS")); err != nil {
		return Entry{}, err
	}
	e.Classification = Classify(e.License)
	return e, nil
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
