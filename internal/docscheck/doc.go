// Package docscheck reads the repository's Markdown as GitHub renders it:
// the anchors a file's headings and <a id> tags make ([Anchors], with
// GitHub's rule: lower case, spaces as '-', punctuation other than '-' and
// '_' dropped, a repeated anchor suffixed -1, -2, …) and the relative links
// and images a file holds ([Links]), outside code. Its test checks that
// every relative link of every *.md file resolves to a file and, into a
// Markdown file, to an anchor it has; and that each line `make help`
// prints from the Makefile is the whole of its comment. It imports only
// the standard library.
package docscheck
