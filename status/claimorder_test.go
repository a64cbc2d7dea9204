package status

import (
	"slices"
	"testing"
)

// TestMergeByID: candidates merge in id order up to the limit, a row read
// by two queries (its topic changed between their snapshots) once.
func TestMergeByID(t *testing.T) {
	c := func(ids ...int64) []candidate {
		var out []candidate
		for _, id := range ids {
			out = append(out, candidate{id: id})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		limit int
		lists [][]candidate
		want  []int64
	}{
		{"two lists", 10, [][]candidate{c(1, 4, 5), c(2, 3, 6)}, []int64{1, 2, 3, 4, 5, 6}},
		{"the limit", 3, [][]candidate{c(1, 4, 5), c(2, 3, 6)}, []int64{1, 2, 3}},
		{"a row in two lists", 10, [][]candidate{c(1, 7), c(2, 7, 9), c(), c(7, 8)}, []int64{1, 2, 7, 8, 9}},
		{"none", 10, [][]candidate{c(), c()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			for _, x := range mergeByID(tc.limit, tc.lists...) {
				got = append(got, x.id)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("mergeByID = %v, want %v", got, tc.want)
			}
		})
	}
}
