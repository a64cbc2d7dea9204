// Package licenses reports the licenses of the modules linked into the
// cdc-relay binary: which modules they are, what license each carries, and
// whether Apache-2.0 distribution of the binary allows it.
//
// [List] names every module that `go list -deps` reaches from a main
// package for each release target (the union; test-only dependencies are
// not reached), and the Go standard library, with the directories of the
// packages linked. [Find] reads each one's license files (every LICENSE,
// LICENCE and COPYING file of its root, and the license and NOTICE files
// of each directory from a linked package up to the root) and its root's
// NOTICE and PATENTS files, in the module cache; the module's license is
// all of them, refused when any one is. [Classify] recognises a license by the distinctive clauses of its
// normalized text: Apache-2.0, MIT, BSD-2-Clause, BSD-3-Clause, ISC and
// MPL-2.0 are allowed; the GNU licenses (GPL, LGPL, AGPL), SSPL and BUSL
// are recognised to be refused; any other text is "unknown", and refused
// too, until a person has read it and taught the classifier. A text
// found to hold only allowed licenses must also be theirs: it is compared
// word by word, copyright lines left out, with the canonical text of each
// (templates/), and refused when more than a few of its words are in none
// of them or one of them is not nearly all there; the known add-on clauses
// (the Commons Clause, "Good, not Evil") refuse it by name. A file that
// carries several licenses (one per part of the module) is every license
// found in it, and must be covered by their union; the paragraphs of
// templates/scope-notes.txt, read by a person and saying only which files
// a license covers, may stand beside them.
//
// [WriteReport] writes docs/DEPENDENCIES.md and [WriteNotices] the
// THIRD_PARTY_NOTICES file shipped with the binaries; both are
// deterministic (sorted, no timestamps), so two runs give identical bytes.
// [Check] returns an error naming each module whose license is refused.
//
// Limits: a dual license ("MIT OR GPL") is refused, for a person to
// decide; a few words beside the licenses (a name, a heading) pass
// unread.
package licenses
