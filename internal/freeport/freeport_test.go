package freeport

import "testing"

// TestGetNGivesDifferentPorts: GetN never returns one port twice.
func TestGetNGivesDifferentPorts(t *testing.T) {
	for range 50 {
		ports, err := GetN(5)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, p := range ports {
			if seen[p] || p == 0 {
				t.Fatalf("GetN(5) = %v: a port twice, or none", ports)
			}
			seen[p] = true
		}
	}
}
