package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// VersionCommand is `cdc-relay version` (or --version): print the version.
type VersionCommand struct {
	stdout io.Writer
}

const versionUsage = `Usage: cdc-relay version

Prints the version of this binary, as "cdc-relay <version>". Also
cdc-relay --version, -version or -v.
`

// Run prints the version.
func (c *VersionCommand) Run(ctx context.Context, args []string) error {
	if err := parseFlags(flag.NewFlagSet("version", flag.ContinueOnError), args); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "cdc-relay", Version)
	return nil
}

// Usage writes the command's help.
func (c *VersionCommand) Usage(w io.Writer) { fmt.Fprint(w, versionUsage) }
