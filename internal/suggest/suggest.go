// Package suggest finds what a mistyped name most likely meant: a flag,
// a subcommand, a key of the config file.
package suggest

// Closest returns the candidate nearest to s by edit distance, if it is
// within about a third of s's length, else "". s is compared as given:
// the caller folds case or separators first.
func Closest(s string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		if d := Distance(s, c); best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	if best != "" && bestDist <= max(1, len(s)/3) {
		return best
	}
	return ""
}

// Distance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent bytes.
func Distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
