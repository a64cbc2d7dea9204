package buildinfo

import "strings"

// String is the version, then the rest in parentheses:
//
//	v0.5.0 (commit 8d66468ba5587cfc…, go1.26.8, linux/amd64)
//	dev (commit unknown, go1.26.8, linux/amd64)
//
// with ", dirty" after the commit when the tree had uncommitted changes.
// The version is the first word, so scripts can take it with a split.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	b.WriteString(" (commit ")
	if i.Commit == "" {
		b.WriteString("unknown")
	} else {
		b.WriteString(i.Commit)
	}
	if i.Dirty {
		b.WriteString(", dirty")
	}
	b.WriteString(", " + i.GoVersion + ", " + i.Platform + ")")
	return b.String()
}

// ShortCommit is the commit's first 12 hex digits, or "" when it is not
// known: enough to name it in a line meant for a person.
func (i Info) ShortCommit() string {
	if len(i.Commit) > 12 {
		return i.Commit[:12]
	}
	return i.Commit
}
