package replication

import "testing"

func TestRetained(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{16 << 20, "16.0 MiB"},
		{3 << 30 / 2, "1.5 GiB"},
	} {
		if got := (Slot{RetainedBytes: tc.n}).Retained(); got != tc.want {
			t.Errorf("Retained(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
