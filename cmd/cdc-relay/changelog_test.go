package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// releaseHeading is a released version's heading in CHANGELOG.md, as Keep a
// Changelog writes it: "## [0.4.0] - 2026-11-23".
var releaseHeading = regexp.MustCompile(`^## \[(\d+)\.(\d+)\.(\d+)\] - (\d{4}-\d{2}-\d{2})$`)

// changeSections are the kinds of change Keep a Changelog names.
var changeSections = map[string]bool{
	"Added": true, "Changed": true, "Deprecated": true,
	"Removed": true, "Fixed": true, "Security": true,
}

// checkChangelog returns the first way text breaks the form CONTRIBUTING.md
// asks of CHANGELOG.md: "## [Unreleased]" first, then released versions,
// newest first, each with a valid date no later than the one above it, and
// within each only the sections Keep a Changelog names, each once.
func checkChangelog(text string) error {
	var (
		releases        int
		prev            [3]int
		prevDate        time.Time
		sections        map[string]bool
		unreleasedFound bool
	)
	for n, line := range strings.Split(text, "\n") {
		at := fmt.Sprintf("line %d %q", n+1, line)
		switch {
		case strings.HasPrefix(line, "## "):
			sections = map[string]bool{}
			if line == "## [Unreleased]" {
				if releases > 0 || unreleasedFound {
					return fmt.Errorf("%s: [Unreleased] must come once, before every release", at)
				}
				unreleasedFound = true
				continue
			}
			if !unreleasedFound {
				return fmt.Errorf("%s: the first version heading must be ## [Unreleased]", at)
			}
			version, date, err := parseReleaseHeading(line)
			if err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			if releases > 0 && !versionLess(version, prev) {
				return fmt.Errorf("%s: versions must descend, and this is not below %d.%d.%d", at, prev[0], prev[1], prev[2])
			}
			if releases > 0 && date.After(prevDate) {
				return fmt.Errorf("%s: dated after the release above it (%s)", at, prevDate.Format(time.DateOnly))
			}
			releases, prev, prevDate = releases+1, version, date
		case strings.HasPrefix(line, "### "):
			name := strings.TrimPrefix(line, "### ")
			switch {
			case sections == nil:
				return fmt.Errorf("%s: a section outside a version", at)
			case !changeSections[name]:
				return fmt.Errorf("%s: not one of Added, Changed, Deprecated, Removed, Fixed, Security", at)
			case sections[name]:
				return fmt.Errorf("%s: a second %s section in one version", at, name)
			}
			sections[name] = true
		}
	}
	if !unreleasedFound {
		return fmt.Errorf("no ## [Unreleased] heading")
	}
	return nil
}

// parseReleaseHeading returns the version and date of a released version's
// heading, or what is wrong with it.
func parseReleaseHeading(line string) ([3]int, time.Time, error) {
	m := releaseHeading.FindStringSubmatch(line)
	if m == nil {
		return [3]int{}, time.Time{}, fmt.Errorf("want ## [Unreleased] or ## [X.Y.Z] - YYYY-MM-DD")
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1]) // the pattern admits digits only
	}
	date, err := time.Parse(time.DateOnly, m[4])
	if err != nil {
		return v, date, fmt.Errorf("date: %w", err)
	}
	return v, date, nil
}

// versionLess reports whether version a comes before version b.
func versionLess(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// TestChangelogForm checks the repository's CHANGELOG.md.
func TestChangelogForm(t *testing.T) {
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkChangelog(string(b)); err != nil {
		t.Errorf("CHANGELOG.md: %v (see CONTRIBUTING.md)", err)
	}
}

// TestCheckChangelog shows checkChangelog refusing each way a changelog can
// break its form, so that TestChangelogForm's pass means something.
func TestCheckChangelog(t *testing.T) {
	for _, c := range []struct {
		name, text, wantErr string
	}{
		{"well formed", "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- x\n\n## [0.10.0] - 2026-11-24\n\n### Fixed\n\n## [0.9.1] - 2026-11-23\n\n### Added\n", ""},
		{"no unreleased", "## [0.1.0] - 2026-11-22\n", "the first version heading must be ## [Unreleased]"},
		{"empty", "# Changelog\n", "no ## [Unreleased] heading"},
		{"unreleased after a release", "## [Unreleased]\n## [0.2.0] - 2026-11-23\n## [Unreleased]\n", "must come once"},
		{"ascending", "## [Unreleased]\n## [0.1.0] - 2026-11-22\n## [0.2.0] - 2026-11-23\n", "versions must descend"},
		{"same version twice", "## [Unreleased]\n## [0.2.0] - 2026-11-23\n## [0.2.0] - 2026-11-23\n", "versions must descend"},
		{"dates out of order", "## [Unreleased]\n## [0.2.0] - 2026-11-22\n## [0.1.0] - 2026-11-23\n", "dated after"},
		{"no date", "## [Unreleased]\n## [0.2.0]\n", "want ## [Unreleased] or ## [X.Y.Z] - YYYY-MM-DD"},
		{"a v in the version", "## [Unreleased]\n## [v0.2.0] - 2026-11-23\n", "want ## [Unreleased]"},
		{"impossible date", "## [Unreleased]\n## [0.2.0] - 2026-13-01\n", "date:"},
		{"unknown section", "## [Unreleased]\n### Improved\n", "not one of Added"},
		{"section twice", "## [Unreleased]\n### Added\n### Fixed\n### Added\n", "a second Added section"},
		{"section before any version", "# Changelog\n### Added\n## [Unreleased]\n", "a section outside a version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkChangelog(c.text)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("checkChangelog: %v, want nil", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("checkChangelog: %v, want an error containing %q", err, c.wantErr)
			}
		})
	}
}
