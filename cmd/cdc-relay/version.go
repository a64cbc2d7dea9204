package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/cdc-relay/cdc-relay/internal/buildinfo"
)

// VersionCommand is `cdc-relay version` (or --version): print the version.
type VersionCommand struct {
	stdout io.Writer
}

const versionUsage = `Usage: cdc-relay version

Prints the version of this binary, the commit it was built from and the Go
that built it, on one line:

  cdc-relay v0.5.0 (commit 8d66468ba558…, go1.26.8, linux/amd64)

The version is the second word. A release is its tag, as v0.5.0; a build
between releases is a pre-release of the next, as
v0.4.1-dev.3+g8d66468ba558 (3 commits after v0.4.0), with .dirty when
tracked files were modified; "dev" when the build recorded none. Also
cdc-relay --version, -version or -v.
`

// Run prints the version.
func (c *VersionCommand) Run(ctx context.Context, args []string) error {
	if err := parseFlags(flag.NewFlagSet("version", flag.ContinueOnError), args); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "cdc-relay", buildinfo.Get())
	return nil
}

// Usage writes the command's help.
func (c *VersionCommand) Usage(w io.Writer) { fmt.Fprint(w, versionUsage) }
