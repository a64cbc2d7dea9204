package pgdb

import "testing"

// TestQuoteLiteral: a literal means its text whatever
// standard_conforming_strings says, and nothing in it ends it.
func TestQuoteLiteral(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"relay":                  `'relay'`,
		"a'b":                    `'a''b'`,
		`b\'; DROP TABLE x; --`:  `E'b\\''; DROP TABLE x; --'`,
		"x$$; DROP TABLE x; --":  `'x$$; DROP TABLE x; --'`,
		"nul\x00byte":            `'nulbyte'`,
		"line\nbreak":            "'line\nbreak'",
		`"quoted" and \ (alone)`: `E'"quoted" and \\ (alone)'`,
	} {
		if got := QuoteLiteral(in); got != want {
			t.Errorf("QuoteLiteral(%q) = %s, want %s", in, got, want)
		}
	}
}
