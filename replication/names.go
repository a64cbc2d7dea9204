package replication

import (
	"fmt"
	"strings"
)

// maxNameBytes is PostgreSQL's limit on a name (NAMEDATALEN - 1).
const maxNameBytes = 63

// ValidSlotName returns nil if name can name a replication slot, else an
// error that says what is wrong and what to use. PostgreSQL allows 1 to 63
// bytes of lower-case letters, digits and underscores. A name with
// capitals must be refused before it reaches PostgreSQL: the replication
// commands fold it to lower case, so the slot would be created as one name
// and looked up as another.
func ValidSlotName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the replication slot name is empty")
	case len(name) > maxNameBytes:
		return fmt.Errorf("replication slot name %q is %d bytes long; PostgreSQL allows at most %d", name, len(name), maxNameBytes)
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			msg := fmt.Sprintf("replication slot name %q has %q; PostgreSQL allows only lower-case letters, digits and underscores", name, r)
			if lower := strings.ToLower(name); lower != name && ValidSlotName(lower) == nil {
				msg += fmt.Sprintf(" (use %q)", lower)
			}
			return fmt.Errorf("%s", msg)
		}
	}
	return nil
}

// publicationNamesOption is pgoutput's publication_names option for
// publication. pgoutput reads the option's value as a list of SQL
// identifiers, which folds an unquoted name to lower case and splits it at
// commas, so the name is written as a quoted identifier (which keeps it
// exactly as `cdc-relay migrate` created it), inside a string literal.
func publicationNamesOption(publication string) string {
	ident := `"` + strings.ReplaceAll(publication, `"`, `""`) + `"`
	return "publication_names '" + strings.ReplaceAll(ident, `'`, `''`) + "'"
}

// pluginArgs are pgoutput's options for opts: protocol version 1, the
// publication, and the messages when opts asks for them.
func pluginArgs(opts Options) []string {
	args := []string{"proto_version '1'", publicationNamesOption(opts.Publication)}
	if opts.Messages {
		args = append(args, "messages 'true'")
	}
	return args
}
