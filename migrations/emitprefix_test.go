package migrations

import "testing"

func TestPrefixInComment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		comment, want string
		ok            bool
	}{
		{comment: `Writes an event ... message with the prefix "outbox"; returns its LSN.`, want: "outbox", ok: true},
		{comment: `message with the prefix "a \"quoted\" \\ one"; rest`, want: `a "quoted" \ one`, ok: true},
		{comment: `an application's own comment`},
		{comment: `with the prefix outbox`},
		{comment: `with the prefix ""`},
		{comment: `with the prefix "unterminated`},
	} {
		got, ok := prefixInComment(c.comment)
		if got != c.want || ok != c.ok {
			t.Errorf("prefixInComment(%q) = %q, %v; want %q, %v", c.comment, got, ok, c.want, c.ok)
		}
	}
}
