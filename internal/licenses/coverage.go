package licenses

import (
	"embed"
	"regexp"
	"strings"
)

// templates holds the canonical text of each allowed license, without
// its copyright lines, and the reviewed scope notes (scope-notes.txt); Apache-2.0 has its full text (with the appendix)
// and the notice a source file or a short LICENSE carries.
//
//go:embed templates/*.txt
var templates embed.FS

// templateFiles names, for each allowed license, its templates; a text
// covers the license when it covers one of them.
var templateFiles = map[string][]string{
	"Apache-2.0":   {"Apache-2.0.txt", "Apache-2.0-notice.txt"},
	"MIT":          {"MIT.txt"},
	"BSD-2-Clause": {"BSD-2-Clause.txt"},
	"BSD-3-Clause": {"BSD-3-Clause.txt"},
	"ISC":          {"ISC.txt"},
	"MPL-2.0":      {"MPL-2.0.txt"},
}

const (
	// maxExtraWords is how many words of a license file may be in none of
	// its licenses' templates: the names in BSD-3-Clause's third clause,
	// a heading over each license of a compound file. A sentence added to
	// a license is more.
	maxExtraWords = 8
	// minTemplateShare is how much of a template's words a text must hold
	// in order: a license with a clause removed is not that license.
	minTemplateShare = 0.97
)

// variableLine matches the lines of a license file that vary from one
// copy to the next: the copyright lines, "All rights reserved", and the
// "Files: path/*" line naming what the next license of a compound file
// covers.
var variableLine = regexp.MustCompile(`(?im)^[\s/#*]*(copyright\s*(\(c\)|©|\[yyyy\]|[0-9]{4}).*|all rights reserved\.?\s*|files:\s+\S+\s*)$`)

// addOns are clauses known to be added to an allowed license to restrict
// it; each refuses the text whatever else it holds.
var addOns = []struct{ phrase, reason string }{
	{"commons clause", "the Commons Clause (it forbids selling the software)"},
	{"shall be used for good not evil", `"Good, not Evil" (the JSON license's use restriction)`},
}

// addOn returns the reason of the first add-on clause norm holds, or "".
func addOn(norm string) string {
	for _, a := range addOns {
		if strings.Contains(norm, " "+a.phrase+" ") {
			return a.reason
		}
	}
	return ""
}

// words returns text's words after normalization, without its variable
// lines.
func words(text string) []string {
	return strings.Fields(normalize(variableLine.ReplaceAllString(text, "")))
}

// coverage returns "" when the text's words are those of the templates of
// ids, give or take maxExtraWords, and each license's template is nearly
// all there; else what is wrong.
func coverage(text string, ids []string) string {
	file := words(text)
	covered := make([]bool, len(file))
	for _, id := range ids {
		if !coverTemplate(file, covered, id) {
			return "unknown: part of the " + id + " text is missing or changed"
		}
	}
	coverScopeNotes(file, covered)
	extra := 0
	for _, c := range covered {
		if !c {
			extra++
		}
	}
	if extra > maxExtraWords {
		return "unknown: text beyond the license"
	}
	return ""
}

// coverScopeNotes marks the words of the reviewed passages of
// templates/scope-notes.txt that file holds: each paragraph of it was read
// and says only which files of a module a license covers, so it may stand
// beside the licenses without counting as text beyond them.
func coverScopeNotes(file []string, covered []bool) {
	b, err := templates.ReadFile("templates/scope-notes.txt")
	if err != nil {
		panic("licenses: missing templates/scope-notes.txt")
	}
	for _, para := range strings.Split(string(b), "\n\n") {
		for coverOnce(file, covered, [][]string{words(para)}) {
		}
	}
}

// coverTemplate marks the words of file that id's templates align with,
// as many times as one is nearly all in the words not yet marked (a file
// may hold a license twice, for two parts of a module), and reports
// whether one was at least once.
func coverTemplate(file []string, covered []bool, id string) bool {
	names, ok := templateFiles[id]
	if !ok {
		return true
	}
	found := false
	for coverOnce(file, covered, templateWords(names)) {
		found = true
	}
	return found
}

// templateWords returns the words of each named template.
func templateWords(names []string) [][]string {
	var out [][]string
	for _, name := range names {
		b, err := templates.ReadFile("templates/" + name)
		if err != nil {
			panic("licenses: missing template " + name)
		}
		out = append(out, words(string(b)))
	}
	return out
}

// coverOnce aligns the best of tmpls with the words of file not yet
// covered and, when it is nearly all there, marks the words it aligns
// with and returns true.
func coverOnce(file []string, covered []bool, tmpls [][]string) bool {
	var rest []string
	var at []int
	for i, w := range file {
		if !covered[i] {
			rest = append(rest, w)
			at = append(at, i)
		}
	}
	var best []int
	bestShare := -1.0
	for _, tmpl := range tmpls {
		for _, start := range starts(rest, tmpl) {
			end := min(len(rest), start+len(tmpl)+2*maxExtraWords)
			matched := align(rest[start:end], tmpl)
			if share := float64(len(matched)) / float64(len(tmpl)); share > bestShare {
				best, bestShare = nil, share
				for _, i := range matched {
					best = append(best, start+i)
				}
			}
		}
	}
	if bestShare < minTemplateShare {
		return false
	}
	for _, i := range best {
		covered[at[i]] = true
	}
	return true
}

// starts returns where in rest a copy of tmpl may begin: each place
// three words of tmpl's first twelve are, moved back by their place in
// tmpl, so that each copy of a license in a file is aligned on its own.
func starts(rest, tmpl []string) []int {
	seen := map[int]bool{}
	var out []int
	for t := 0; t < 10 && t+3 <= len(tmpl); t++ {
		for k := 0; k+3 <= len(rest); k++ {
			if rest[k] == tmpl[t] && rest[k+1] == tmpl[t+1] && rest[k+2] == tmpl[t+2] {
				if s := max(0, k-t); !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// align returns the indexes in a of a longest common subsequence of a and
// b.
func align(a, b []string) []int {
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case a[i] == b[j]:
				lcs[i][j] = lcs[i+1][j+1] + 1
			case lcs[i+1][j] >= lcs[i][j+1]:
				lcs[i][j] = lcs[i+1][j]
			default:
				lcs[i][j] = lcs[i][j+1]
			}
		}
	}
	var out []int
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case a[i] == b[j]:
			out = append(out, i)
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			i++
		default:
			j++
		}
	}
	return out
}
