package replication

import "testing"

func TestParseServerVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"15.14 (Debian 15.14-0+deb12u1)", 150014},
		{"18.6", 180006},
		{"13.22", 130022},
		{"17.0", 170000},
		{"19devel", 190000},
		{"17beta2", 170000},
		{"9.6.24", 0},
		{"", 0},
		{"abc", 0},
	} {
		if got := parseServerVersion(tc.in); got != tc.want {
			t.Errorf("parseServerVersion(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
