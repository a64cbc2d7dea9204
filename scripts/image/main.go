// Command image builds the release's container image and pushes it to a
// registry, with no container engine: `make release` runs its build, which
// writes, from the release's static linux binaries, their SBOMs and the
// license files the archives carry, one OCI image per platform under one
// image index, as a tar of an OCI image layout, the same bytes from the
// same inputs; push copies that index to a registry.
//
// It is a Go module of its own, as deploy/kubernetes/validate is, so that
// go-containerregistry (which computes the manifests and digests, and
// speaks the registry protocol) stays out of the relay's module. Run it
// from its directory:
//
//	cd scripts/image
//	go run . build -version v0.5.0 -revision COMMIT -created UNIXTIME \
//	    -doc ../../LICENSE -doc ../../NOTICE -doc THIRD_PARTY_NOTICES \
//	    -o ../../dist/cdc-relay-v0.5.0-oci.tar linux/amd64=BINARY,SBOM linux/arm64=BINARY,SBOM
//	go run . push ../../dist/cdc-relay-v0.5.0-oci.tar ghcr.io/OWNER/cdc-relay:v0.5.0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// usageText is the help of the command as a whole.
const usageText = `Usage: go run . <command> [flags] [arguments]   (in scripts/image)

The release's container image, built and pushed without a container engine.

Commands:
  build   write the image index of the release's linux binaries as a tar of
          an OCI image layout (make release runs it)
  push    copy such a tar's image index to a registry, with the credentials
          of docker login (podman: podman login --authfile
          ~/.docker/config.json)

Run 'go run . <command> -h' for a command's flags and arguments.
`

// usageError is a mistake on the command line: main prints it with a hint
// at -h and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command of args and returns the exit code: 0, 1 for a
// failure, 2 for a mistake on the command line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	var err error
	switch args[0] {
	case "build":
		err = runBuild(args[1:], stdout, stderr)
	case "push":
		err = runPush(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return 0
	default:
		err = usageError{fmt.Sprintf("no command %q: the commands are build and push", args[0])}
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "image: %v\n%s\n", err, helpHint(args[0]))
		return 2
	default:
		fmt.Fprintf(stderr, "image %s: %v\n", args[0], err)
		return 1
	}
}

// helpHint says where the help is for a usage error of command cmd: the
// command's own, or the commands' for one that does not exist.
func helpHint(cmd string) string {
	if cmd == "build" || cmd == "push" {
		return "Run 'go run . " + cmd + " -h' for its flags and arguments."
	}
	return "Run 'go run . -h' for the commands."
}

// newFlagSet returns a flag set for the command name whose help, usage
// and then its flags, parseFlags writes to w.
func newFlagSet(name, usage string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	helps[fs] = func() {
		fmt.Fprint(w, usage)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nFlags:")
			fs.SetOutput(w)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
		}
	}
	return fs
}

// helps are the help writers of the flag sets newFlagSet made.
var helps = map[*flag.FlagSet]func(){}

// parseFlags parses args into fs; -h writes the help and returns
// flag.ErrHelp, any other mistake is a usageError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		helps[fs]()
		return flag.ErrHelp
	default:
		return usageError{err.Error()}
	}
}
