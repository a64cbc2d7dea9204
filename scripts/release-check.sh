#!/usr/bin/env bash
# Proves that make release gives the same bytes twice, and files as they
# should be: it runs make release here, then again in a fresh git clone of
# the same commit at another path, under a deliberately different
# environment (env -i: only PATH, a fresh HOME, an empty GOCACHE, the same
# GOMODCACHE, umask 0077, LC_ALL=C, TZ=Pacific/Kiritimati and a junk
# SOURCE_DATE_EPOCH=1), so that neither the path, a cached object, the go
# env -w settings, the locale, the time zone, the umask nor the
# environment's time can leak into the bytes unseen. It requires the same
# SHA256SUMS, that sha256sum -c passes, and that scripts/distcheck accepts
# dist/ (one archive and one SBOM per target, each binary static, for its
# target and stamped with the version, each SBOM naming its modules, the
# standard library and the archived binary's hash; the container image of
# the linux targets, non-root, holding those binaries and SBOMs byte for
# byte). Last, it runs scripts/image's tests, whose TestUnpackedLayerRuns
# then runs the release's linux binary from an image's unpacked layer.
#
# RELEASE_TARGETS (the Makefile's; unset, all four) names the targets both
# builds make and distcheck requires: CI builds linux/amd64 alone on a
# change (so an image of that platform alone, whose bytes are compared
# all the same), and all four at a tag.
#
# Both runs compile every target, the second from nothing: the cold one is
# the honest one, and the first, warm from the tests, costs little. The
# second run shares the module cache, whose contents go.sum fixes (a
# module that differed would fail verification, not change the bytes),
# and reuses the first one's cyclonedx-gomod: the tool's bytes are in no
# file of the release (release.sh drops its hashes from the SBOMs).
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
  echo "release-check: $*" >&2
  exit 1
}

# require_clean stops unless the work tree is the commit: the clone can
# only rebuild what is committed.
require_clean() {
  if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    die "the work tree has changes that are not committed; commit or stash them first, the second build is of the commit"
  fi
}

# build_twice leaves dist/ from here and $1/src/dist/ from a fresh clone
# built by build_elsewhere.
build_twice() {
  local tmp=$1 start=$SECONDS
  make -s release RELEASE_TARGETS="$RELEASE_TARGETS"
  echo "release-check: first build took $((SECONDS - start)) s" >&2
  start=$SECONDS
  git clone -q --no-hardlinks . "$tmp/src"
  git -C "$tmp/src" checkout -q --detach "$(git rev-parse HEAD)"
  mkdir -p "$tmp/src/bin"
  cp -a bin/tools "$tmp/src/bin/"
  build_elsewhere "$tmp"
  echo "release-check: second build, from a clone in another environment with an empty build cache, took $((SECONDS - start)) s" >&2
}

# build_elsewhere runs make release in $1/src under an environment unlike
# any developer's: nothing but PATH, a fresh HOME, the empty GOCACHE
# $1/gocache, the shared GOMODCACHE, umask 0077, the C locale, a time zone
# 14 hours ahead of UTC and a junk SOURCE_DATE_EPOCH.
build_elsewhere() {
  local tmp=$1 modcache
  modcache=$(go env GOMODCACHE)
  mkdir "$tmp/gocache" "$tmp/home"
  (umask 0077 && env -i PATH="$PATH" HOME="$tmp/home" GOCACHE="$tmp/gocache" GOMODCACHE="$modcache" \
    LC_ALL=C TZ=Pacific/Kiritimati SOURCE_DATE_EPOCH=1 make -s -C "$tmp/src" release RELEASE_TARGETS="$RELEASE_TARGETS")
}

# same_sums stops unless both builds wrote the same SHA256SUMS.
same_sums() {
  if ! cmp -s dist/SHA256SUMS "$1/src/dist/SHA256SUMS"; then
    diff dist/SHA256SUMS "$1/src/dist/SHA256SUMS" >&2 || true
    die "two builds of $(git rev-parse --short HEAD) differ (above): something of the machine, the path, the environment (locale, time zone, umask, go env), the time or the build cache leaks into those files"
  fi
}

# sums_verify stops unless every file's checksum in SHA256SUMS holds.
sums_verify() {
  (cd dist && sha256sum -c --quiet SHA256SUMS) || die "dist/SHA256SUMS does not verify"
}

main() {
  RELEASE_TARGETS=${RELEASE_TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
  require_clean
  tmp=$(mktemp -d)
  # Go's module and build caches are read-only to rm; chmod them first.
  # tmp is global: the trap runs after main has returned.
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
  build_twice "$tmp"
  same_sums "$tmp"
  sums_verify
  go run ./scripts/distcheck -targets "$RELEASE_TARGETS" dist
  (cd scripts/image && go vet ./... && go test -count=1 ./...) ||
    die "scripts/image's tests failed (above)"
  echo "release-check: two builds, the same $(wc -l <dist/SHA256SUMS) checksums" >&2
}

main "$@"
