// Package buildinfo says which build of cdc-relay runs: its version, the
// commit it was built from, whether that commit's tree had uncommitted
// changes, and the Go version and platform it was built with. `cdc-relay
// --version`, the start-up log line, the cdc_relay_build_info metric and
// /status report them.
//
// `make build` stamps them with the linker (the Makefile's LDFLAGS):
//
//	-X github.com/cdc-relay/cdc-relay/internal/buildinfo.version=v0.5.0
//	-X github.com/cdc-relay/cdc-relay/internal/buildinfo.commit=<full hash>
//	-X github.com/cdc-relay/cdc-relay/internal/buildinfo.dirty=false
//
// the version being scripts/version.sh's. A binary built without them
// (`go install github.com/cdc-relay/cdc-relay/cmd/cdc-relay@v0.5.0`, or a
// plain `go build`) falls back to what Go recorded in it
// ([runtime/debug.ReadBuildInfo]): the main module's version unless it is
// "(devel)", and the commit from vcs.revision (stamped by `go build` in a
// git checkout unless -buildvcs=false) or from a pseudo-version. What
// neither gives is "dev" for the version and empty for the commit.
package buildinfo
