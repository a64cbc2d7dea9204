package migrations

import (
	"testing"
)

// TestDoBlock: the body is dollar-quoted with $$ when it can be, else with
// a tag it does not hold.
func TestDoBlock(t *testing.T) {
	t.Parallel()
	for body, tag := range map[string]string{
		"  CREATE ROLE r;":                        "$$",
		`  CREATE ROLE "x$$; DROP TABLE v; --";`:  "$grants0$",
		`  CREATE ROLE "$$ $grants0$ $grants1$";`: "$grants2$",
	} {
		got := doBlock(body)
		want := "DO " + tag + " BEGIN\n" + body + "\nEND " + tag + ";\n"
		if got != want {
			t.Errorf("doBlock(%q) =\n%s\nwant\n%s", body, got, want)
		}
	}
}

func TestComment(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":                       "-- plain\n",
		"a \"b\nDROP TABLE v; --\" c": "-- a \"b DROP TABLE v; --\" c\n",
		"a\r\nb":                      "-- a  b\n",
	} {
		if got := Comment(in); got != want {
			t.Errorf("Comment(%q) = %q, want %q", in, got, want)
		}
	}
}
