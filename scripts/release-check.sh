#!/usr/bin/env bash
# Proves that make release gives the same bytes twice, and files as they
# should be: it runs make release here, then again in a fresh git clone of
# the same commit at another path with an empty build cache of its own (so
# neither the path nor a cached object can leak into the bytes), and
# requires the same SHA256SUMS, that sha256sum -c passes, and that
# scripts/distcheck accepts dist/ (one archive and one SBOM per target,
# each binary static and for its target, each SBOM naming its modules).
#
# Both runs compile every target, the second from nothing: the cold one is
# the honest one, and the first, warm from the tests, costs little. The
# second run reuses the first one's cyclonedx-gomod: the tool's bytes are
# in no file of the release (release.sh drops its hashes from the SBOMs).
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
# built with the empty GOCACHE $1/gocache.
build_twice() {
  local tmp=$1 start=$SECONDS
  make -s release
  echo "release-check: first build took $((SECONDS - start)) s" >&2
  start=$SECONDS
  git clone -q --no-hardlinks . "$tmp/src"
  git -C "$tmp/src" checkout -q --detach "$(git rev-parse HEAD)"
  mkdir "$tmp/gocache"
  GOCACHE=$tmp/gocache CYCLONEDX_GOMOD=$(pwd)/bin/tools/$(go env GOHOSTOS)-$(go env GOHOSTARCH)/cyclonedx-gomod \
    make -s -C "$tmp/src" release
  echo "release-check: second build, from a clone with an empty build cache, took $((SECONDS - start)) s" >&2
}

# same_sums stops unless both builds wrote the same SHA256SUMS.
same_sums() {
  if ! cmp -s dist/SHA256SUMS "$1/src/dist/SHA256SUMS"; then
    diff dist/SHA256SUMS "$1/src/dist/SHA256SUMS" >&2 || true
    die "two builds of $(git rev-parse --short HEAD) differ (above): something of the machine, the path, the time or the build cache leaks into those files"
  fi
}

# sums_verify stops unless every file's checksum in SHA256SUMS holds.
sums_verify() {
  (cd dist && sha256sum -c --quiet SHA256SUMS) || die "dist/SHA256SUMS does not verify"
}

main() {
  require_clean
  tmp=$(mktemp -d)
  # Go's module and build caches are read-only to rm; chmod them first.
  # tmp is global: the trap runs after main has returned.
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
  build_twice "$tmp"
  same_sums "$tmp"
  sums_verify
  go run ./scripts/distcheck dist
  echo "release-check: two builds, the same $(wc -l <dist/SHA256SUMS) checksums" >&2
}

main "$@"
