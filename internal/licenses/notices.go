package licenses

import (
	"fmt"
	"io"
	"strings"
)

// rule separates the modules in THIRD_PARTY_NOTICES.
const rule = "==============================================================================="

// noticesHead opens THIRD_PARTY_NOTICES.
const noticesHead = `THIRD-PARTY NOTICES

cdc-relay is licensed under the Apache License 2.0 (see LICENSE). The
cdc-relay binary includes the following modules and the Go standard
library. Each is listed below with the text of its license, and of its
NOTICE file and PATENTS file where it has one. The source of each module is
available from the Go module proxy (https://proxy.golang.org) under its path
and version.
`

// WriteNotices writes the plain-text THIRD_PARTY_NOTICES: for each entry,
// in the order given, a heading naming the module, its version and its
// license, then the license text, each other license file's under its
// name, the NOTICE file's text (Apache-2.0
// section 4(d)) and the PATENTS file's, where there are. Two calls with
// the same entries write the same bytes.
func WriteNotices(w io.Writer, entries []Entry) error {
	var b strings.Builder
	b.WriteString(noticesHead)
	for _, e := range entries {
		name := e.Path
		if name == StdPath {
			name = "Go standard library"
		}
		fmt.Fprintf(&b, "\n%s\n%s %s (%s)\n%s\n\n%s", rule, name, e.Version, e.Classification.Expression(), rule, e.License)
		for _, o := range e.Others {
			writeSection(&b, o.Name, o.Text)
		}
		writeSection(&b, "NOTICE", e.Notice)
		writeSection(&b, "PATENTS", e.Patents)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSection writes a file's text under a subheading, when there is any.
func writeSection(b *strings.Builder, title, text string) {
	if text == "" {
		return
	}
	fmt.Fprintf(b, "\n--- %s ---\n\n%s", title, text)
}
