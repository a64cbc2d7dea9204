// Package licenses reports the licenses of the modules linked into the
// cdc-relay binary: which modules they are, what license each carries, and
// whether Apache-2.0 distribution of the binary allows it.
//
// [List] names every module that `go list -deps` reaches from a main
// package for each release target (the union; test-only dependencies are
// not reached), and the Go standard library. [Find] locates each one's
// LICENSE (and NOTICE and PATENTS files) in its directory of the module
// cache. [Classify] recognises a license by the distinctive clauses of its
// normalized text: Apache-2.0, MIT, BSD-2-Clause, BSD-3-Clause, ISC and
// MPL-2.0 are allowed; the GNU licenses (GPL, LGPL, AGPL), SSPL and BUSL
// are recognised to be refused; any other text is "unknown", and refused
// too, until a person has read it and taught the classifier. A file that
// carries several licenses (one per part of the module) is every license
// found in it.
//
// [WriteReport] writes docs/DEPENDENCIES.md and [WriteNotices] the
// THIRD_PARTY_NOTICES file shipped with the binaries; both are
// deterministic (sorted, no timestamps), so two runs give identical bytes.
// [Check] returns an error naming each module whose license is refused.
//
// Limits: a file is classified by the licenses whose clauses appear in it,
// so an unrecognised license beside a recognised one in the same file goes
// unnoticed unless it is a refused one; a dual license ("MIT OR GPL") is
// refused, for a person to decide.
package licenses
