package docscheck

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Link is a link or image of a Markdown file.
type Link struct {
	Line   int    // 1-based
	Target string // as written: path, path#anchor or #anchor
}

// Path and Anchor split the target at its first '#'.
func (l Link) Path() string   { p, _, _ := strings.Cut(l.Target, "#"); return p }
func (l Link) Anchor() string { _, a, _ := strings.Cut(l.Target, "#"); return a }

// External says the target names a scheme (https:, mailto:, …) or a host
// (//host/…): nothing in the repository to resolve.
func (l Link) External() bool {
	return strings.HasPrefix(l.Target, "//") || scheme.MatchString(l.Target)
}

func (l Link) String() string { return fmt.Sprintf("line %d: %s", l.Line, l.Target) }

var (
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// An inline link or image, [text](target) or [text](target "title"):
	// the target is the first group. Text with a nested pair of brackets
	// (`[a [b] c](x)`) is matched too.
	inline = regexp.MustCompile(`\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// A link reference definition, [label]: target.
	definition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s<>]+)>?`)
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:[^>]*\s)?(?:id|name)\s*=\s*"([^"]*)"`)
	htmlTag    = regexp.MustCompile(`<[^>]*>`)
	// Inline markup GitHub drops from a heading's text before it makes the
	// anchor: a link or image keeps its text, emphasis loses its markers.
	linkText = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)`)
)

// lines returns src's lines with what is code blanked out: fenced code
// blocks (``` or ~~~) whole, and code spans and HTML comments within
// lines. fenced[i] says line i is in a fenced block (or a fence).
func lines(src string) (text []string, fenced []bool) {
	raw := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	text, fenced = make([]string, len(raw)), make([]bool, len(raw))
	fence := "" // the open fence's marker, "" outside a block
	comment := false
	for i, line := range raw {
		trimmed := strings.TrimLeft(line, " \t>")
		if fence != "" {
			fenced[i] = true
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		}
		if m := fenceMarker(trimmed); m != "" {
			fence, fenced[i] = m, true
			continue
		}
		line, comment = dropComments(line, comment)
		text[i] = dropCodeSpans(line)
	}
	return text, fenced
}

// fenceMarker is the marker of a fence that opens a code block (three or
// more backticks or tildes), or "".
func fenceMarker(s string) string {
	for _, c := range "`~" {
		n := 0
		for n < len(s) && rune(s[n]) == c {
			n++
		}
		if n >= 3 {
			if c == '`' && strings.Contains(s[n:], "`") {
				return "" // an info string may not hold a backtick: a code span
			}
			return s[:n]
		}
	}
	return ""
}

// dropComments blanks what HTML comments hide in line; open says a
// comment is open at its start, and the result whether one is at its end.
func dropComments(line string, open bool) (string, bool) {
	var b strings.Builder
	for {
		if open {
			_, rest, ok := strings.Cut(line, "-->")
			if !ok {
				return b.String(), true
			}
			line, open = rest, false
			continue
		}
		before, rest, ok := strings.Cut(line, "<!--")
		b.WriteString(before)
		if !ok {
			return b.String(), false
		}
		line, open = rest, true
	}
}

// dropCodeSpans replaces each code span of line (a run of backticks to
// the next run of the same length) with a space.
func dropCodeSpans(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := run(line, i)
		end := -1
		for j := i + n; j < len(line); {
			if line[j] == '`' {
				m := run(line, j)
				if m == n {
					end = j + m
					break
				}
				j += m
				continue
			}
			j++
		}
		if end < 0 { // no closing run: literal backticks
			b.WriteString(line[i : i+n])
			i += n
			continue
		}
		b.WriteByte(' ')
		i = end
	}
	return b.String()
}

// run is the length of the run of backticks at line[i].
func run(line string, i int) int {
	n := 0
	for i+n < len(line) && line[i+n] == '`' {
		n++
	}
	return n
}

// Links returns the links and images of a Markdown file, outside code, in
// order: inline ones and the targets of link reference definitions.
func Links(src string) []Link {
	text, _ := lines(src)
	var links []Link
	for i, line := range text {
		if m := definition.FindStringSubmatch(line); m != nil {
			links = append(links, Link{Line: i + 1, Target: m[1]})
			continue
		}
		for _, m := range inline.FindAllStringSubmatch(line, -1) {
			if m[1] != "" {
				links = append(links, Link{Line: i + 1, Target: m[1]})
			}
		}
	}
	return links
}

// Anchors returns the anchors of a Markdown file as GitHub makes them:
// one per heading (outside code), numbered when repeated, and the id or
// name of each <a> tag.
func Anchors(src string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	text, fenced := lines(src)
	raw := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	for i, line := range text {
		if fenced[i] {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		if !heading.MatchString(line) {
			continue
		}
		// The heading's own text, code spans kept (as their content):
		// text[i] blanked them.
		h := heading.FindStringSubmatch(raw[i])
		if h == nil {
			continue
		}
		slug := Slug(h[2])
		n := seen[slug]
		seen[slug] = n + 1
		if n > 0 {
			slug = fmt.Sprintf("%s-%d", slug, n)
		}
		anchors[slug] = true
	}
	return anchors
}

// Slug is the anchor GitHub makes of a heading's Markdown text: the
// rendered text, lower case, each space a '-', every character dropped
// that is not a letter, a digit, a mark, '-', '_' or a space.
func Slug(heading string) string {
	s := linkText.ReplaceAllString(heading, "$1")
	s = htmlTag.ReplaceAllString(s, "")
	s = strings.NewReplacer("`", "", "*", "").Replace(s)
	s = strings.TrimSpace(strings.ToLower(s))
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
