package suggest

import "strings"

// Name returns the candidate that s, a name mistyped on the command line
// (a flag, a command, a subcommand), most likely means: s folded to lower
// case with '_' as '-', then the [Closest] candidate, else the only
// candidate that contains s when s has 3 bytes or more (--brokers for
// --kafka-brokers), else "". Candidates are compared as given.
func Name(s string, candidates []string) string {
	s = strings.ToLower(strings.ReplaceAll(s, "_", "-"))
	if best := Closest(s, candidates); best != "" {
		return best
	}
	var containing []string
	for _, c := range candidates {
		if len(s) >= 3 && strings.Contains(c, s) {
			containing = append(containing, c)
		}
	}
	if len(containing) == 1 {
		return containing[0]
	}
	return ""
}
