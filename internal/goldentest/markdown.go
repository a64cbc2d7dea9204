package goldentest

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Cell returns s as the text of a cell of a Markdown table (GitHub's):
// one line, each "|" escaped, and outside its code spans (`…`, kept as
// they are) the characters that would start emphasis, strikethrough, an
// HTML tag or an entity escaped, so that the cell reads as s. A backtick
// without its pair is escaped too.
func Cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	inCode := false
	for i, r := range s {
		switch {
		case r == '`':
			if !inCode && strings.Count(s[i+1:], "`") == 0 {
				b.WriteString("\\`") // no pair: not a code span
				continue
			}
			inCode = !inCode
			b.WriteRune(r)
		case r == '|':
			b.WriteString(`\|`)
		case inCode:
			b.WriteRune(r)
		case r == '\\' || r == '*' || r == '~' || r == '[' || r == ']':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '_' && !(wordRune(runeBefore(s, i)) && wordRune(runeAfter(s, i))):
			// Only an underscore at a word's edge can start or end
			// emphasis; snake_case within a word is left as it is.
			b.WriteString(`\_`)
		case r == '<':
			b.WriteString("&lt;")
		case r == '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Code returns s as a code span: in backticks, with a space inside each
// end when s starts or ends with a backtick, and more backticks around it
// than any run of them in s. "|" is escaped, as a table cell needs.
func Code(s string) string {
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + strings.ReplaceAll(s, "|", `\|`) + pad + fence
}

// Fence returns text as a fenced code block of language lang: between
// lines of more backticks than text has in a row (at least three), text
// ending with a newline.
func Fence(lang, text string) string {
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fence + lang + "\n" + text + fence + "\n"
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// runeBefore is the rune before byte offset i of s, or 0 at its start.
func runeBefore(s string, i int) rune {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	if r == utf8.RuneError {
		return 0
	}
	return r
}

// runeAfter is the rune after the one at byte offset i of s, or 0 at its
// end.
func runeAfter(s string, i int) rune {
	_, n := utf8.DecodeRuneInString(s[i:])
	r, _ := utf8.DecodeRuneInString(s[i+n:])
	if r == utf8.RuneError {
		return 0
	}
	return r
}

// wordRune reports whether r is a letter or a digit.
func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// Anchor is the id GitHub gives a heading of text, for a link to it:
// lower case, each space a dash, the punctuation but dashes and
// underscores dropped ("## tables[].write_back" is #tableswrite_back).
// A heading that repeats an earlier one gets -1, -2, … besides, which
// Anchor does not know.
func Anchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
