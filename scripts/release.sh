#!/usr/bin/env bash
# Builds the release into dist/ (DIST names another directory): for each
# target of RELEASE_TARGETS (os/arch words; unset, the four of a release:
# linux/amd64 linux/arm64 darwin/amd64 darwin/arm64), a static binary in cdc-relay-<version>-<os>-<arch>.tar.gz (with
# the files of archive_extras), its SBOM cdc-relay-<version>-<os>-<arch>.cdx.json
# (CycloneDX, from the module graph embedded in that binary); of the linux
# targets among them, the container image cdc-relay-<version>-oci.tar (a
# tar of an OCI image layout: one image per linux target, of the binary
# archived for it, its SBOM and the license files, under one index named
# ghcr.io/cdc-relay/cdc-relay:<version>; scripts/image); and SHA256SUMS
# over all of them, in sha256sum's format.
#
# The same commit gives the same bytes anywhere on Linux with GNU tar and
# gzip: the binaries are built with -trimpath by the Go toolchain go.mod
# names (GOTOOLCHAIN), the archives hold fixed names, owners, modes and the
# commit's time, gzip writes no name or time, and the SBOMs hold the
# commit's time, no serial number and no hash of the tool that wrote them,
# and the image's tar and layers hold sorted entries owned by 0:0 dated the
# commit's time, compressed by the pinned Go's gzip without name or time.
# make release-check proves it (scripts/release-check.sh).
#
# Nothing of the environment reaches the bytes: the time is always the
# stamped commit's (a SOURCE_DATE_EPOCH of the environment is ignored), and go
# runs with GOENV=off (no go env -w setting), GOFLAGS fixed, and
# GOEXPERIMENT and GOFIPS140 unset.
#
# The Makefile passes VERSION and LDFLAGS (make release), which stamp the
# version and the commit; CYCLONEDX_GOMOD names an executable of
# cyclonedx-gomod to use instead of building the pinned one.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
read -r -a TARGETS <<<"${RELEASE_TARGETS:-$ALL_TARGETS}"
CYCLONEDX_GOMOD_MODULE=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
DIST=${DIST:-dist}

die() {
  echo "release: $*" >&2
  exit 1
}

# archive_extras copies into $1 the files every archive holds besides the
# binary, with fixed modes: the license files, the README and the manual
# it links to (docs/, its files git tracks, so that no stray file of the
# work tree reaches the bytes). This is the one list of them.
archive_extras() {
  local f
  install -m 0644 LICENSE NOTICE README.md "$DIST/.stage/THIRD_PARTY_NOTICES" "$1/"
  while IFS= read -r f; do
    install -d -m 0755 "$1/$(dirname "$f")"
    install -m 0644 "$f" "$1/$f"
  done < <(git ls-files docs)
}

# write_notices leaves DIST/.stage/THIRD_PARTY_NOTICES: the license texts
# and NOTICE files of the modules the binaries link, which their licenses
# ask a binary to carry.
write_notices() {
  mkdir -p "$DIST/.stage"
  go run ./scripts/licenses -notices "$DIST/.stage/THIRD_PARTY_NOTICES" ||
    die "could not write THIRD_PARTY_NOTICES (the error is above); make licenses checks the licenses alone"
}

# require_inputs leaves VERSION a release version (v<digit>…), LDFLAGS set,
# and COMMIT the full hash LDFLAGS stamps, or stops.
require_inputs() {
  local fix="run make release in a git checkout of the repository with its tags (git fetch --tags)"
  [ -n "${LDFLAGS:-}" ] || die "LDFLAGS is not set: run make release, which sets it"
  [[ ${VERSION:-} =~ ^v[0-9] ]] || die "VERSION=${VERSION:-} is not a version (v0.5.0): $fix"
  COMMIT=$(sed -n 's/.*buildinfo\.commit=\([^ ]*\).*/\1/p' <<<"$LDFLAGS")
  [[ $COMMIT =~ ^([0-9a-f]{40}|[0-9a-f]{64})$ ]] ||
    die "the commit stamped into the binary (${COMMIT:-none}) is not a full commit hash: $fix"
}

# pin_go_env leaves go unable to take anything from the environment or from
# go env -w that would change the bytes: GOENV=off, GOFLAGS fixed (the
# version and commit come from LDFLAGS, not from the VCS), no experiment,
# no FIPS module, no cgo.
pin_go_env() {
  unset GOEXPERIMENT GOFIPS140
  export GOENV=off GOFLAGS=-buildvcs=false CGO_ENABLED=0
}

# find_tools leaves TAR naming GNU tar and SHA256 a sha256sum-compatible
# command, and checks that gzip, jq and git are there.
find_tools() {
  local t
  TAR=
  for t in gtar tar; do
    if command -v "$t" >/dev/null 2>&1 && "$t" --version 2>/dev/null | grep -q 'GNU tar'; then
      TAR=$t
      break
    fi
  done
  [ -n "$TAR" ] || die "GNU tar is needed for reproducible archives (--sort, --mtime): install it (Debian: tar; macOS: brew install gnu-tar)"
  if command -v sha256sum >/dev/null 2>&1; then
    SHA256=(sha256sum)
  elif command -v shasum >/dev/null 2>&1; then
    SHA256=(shasum -a 256)
  else
    die "sha256sum (coreutils) or shasum is needed: install coreutils"
  fi
  for t in gzip jq git; do
    command -v "$t" >/dev/null 2>&1 || die "$t is needed: install it (Debian: apt-get install $t; macOS: brew install $t)"
  done
}

# pin_toolchain exports GOTOOLCHAIN as the toolchain go.mod names, so that
# a newer or older local Go fetches that one instead of giving other bytes.
pin_toolchain() {
  local v
  v=$(awk '$1 == "toolchain" { print $2 }' go.mod)
  [ -n "$v" ] || v=go$(awk '$1 == "go" { print $2 }' go.mod)
  export GOTOOLCHAIN=$v
}

# pin_epoch leaves SOURCE_DATE_EPOCH the stamped commit's time, whatever
# the environment set (Debian, Nix and some CI runners export one): the
# same commit gives the same bytes.
pin_epoch() {
  local t
  t=$(git log -1 --format=%ct "$COMMIT" --) ||
    die "no commit $COMMIT to take the time from: run make release in a git checkout of the repository"
  if [ -n "${SOURCE_DATE_EPOCH:-}" ] && [ "$SOURCE_DATE_EPOCH" != "$t" ]; then
    echo "release: SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH ignored: the release takes the time of commit $COMMIT ($t)" >&2
  fi
  export SOURCE_DATE_EPOCH=$t
}

# cyclonedx_gomod leaves CYCLONEDX_GOMOD naming the pinned cyclonedx-gomod,
# built once into bin/tools/cyclonedx-gomod-<version>/ from the Go module
# proxy: bumping the pin builds the new one.
cyclonedx_gomod() {
  if [ -n "${CYCLONEDX_GOMOD:-}" ]; then
    [ -x "$CYCLONEDX_GOMOD" ] || die "CYCLONEDX_GOMOD=$CYCLONEDX_GOMOD is not an executable"
    return
  fi
  local tools
  tools=$(pwd)/bin/tools/cyclonedx-gomod-${CYCLONEDX_GOMOD_MODULE##*@}/$(go env GOHOSTOS)-$(go env GOHOSTARCH)
  CYCLONEDX_GOMOD=$tools/cyclonedx-gomod
  [ -x "$CYCLONEDX_GOMOD" ] && return
  GOBIN=$tools GOFLAGS=-trimpath go install "$CYCLONEDX_GOMOD_MODULE" ||
    die "could not build $CYCLONEDX_GOMOD_MODULE: the Go module proxy must be reachable (GOPROXY)"
}

# build_binary leaves a static binary for $1/$2 at $3/cdc-relay, in the
# environment pin_go_env left.
build_binary() {
  local goos=$1 goarch=$2 out=$3
  GOOS=$goos GOARCH=$goarch GOAMD64=v1 GOARM64=v8.0 \
    go build -trimpath -ldflags "$LDFLAGS" -o "$out/cdc-relay" ./cmd/cdc-relay
  chmod 0755 "$out/cdc-relay"
}

# write_archive leaves $2.tar.gz holding the files of directory $1, sorted,
# owned by 0:0, dated SOURCE_DATE_EPOCH, gzip-compressed without name or time.
write_archive() {
  local dir=$1 out=$2 files
  files=$(cd "$dir" && LC_ALL=C ls | LC_ALL=C sort)
  # shellcheck disable=SC2086 # the names have no spaces
  (cd "$dir" && "$TAR" --format=gnu --sort=name --mtime="@$SOURCE_DATE_EPOCH" \
    --owner=0 --group=0 --numeric-owner -cf - $files) | gzip -9 -n >"$out.tar.gz"
}

# write_sbom leaves $2.cdx.json describing the modules built into binary $1
# for its GOOS/GOARCH ($3/$4), the Go standard library among them (std,
# at the toolchain's version, so that a scanner sees Go's own advisories),
# timestamped SOURCE_DATE_EPOCH, without a
# serial number or the hashes of the cyclonedx-gomod executable (which
# differ by the machine that built it).
write_sbom() {
  local bin=$1 out=$2 goos=$3 goarch=$4 when
  when=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null ||
    date -u -r "$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
  GOOS=$goos GOARCH=$goarch "$CYCLONEDX_GOMOD" bin -json -noserial -notimestamp -std \
    -version "$VERSION" "$bin" >"$out.cdx.tmp"
  jq --arg when "$when" '.metadata.timestamp = $when | del(.metadata.tools[]?.hashes)' \
    "$out.cdx.tmp" >"$out.cdx.json"
  rm "$out.cdx.tmp"
}

# release_target leaves the archive and the SBOM of target $1 (os/arch) in DIST.
release_target() {
  local goos=${1%/*} goarch=${1#*/} name stage
  name=cdc-relay-$VERSION-$goos-$goarch
  stage=$DIST/.stage/$goos-$goarch
  mkdir -p "$stage"
  echo "release: $name" >&2
  build_binary "$goos" "$goarch" "$stage"
  archive_extras "$stage"
  write_archive "$stage" "$DIST/$name"
  write_sbom "$stage/cdc-relay" "$DIST/$name" "$goos" "$goarch"
}

# write_image leaves DIST/cdc-relay-<version>-oci.tar, the container image
# of the linux targets built (scripts/image build): per target, the binary
# archived for it at /cdc-relay, its SBOM and the license files of
# archive_extras (not README.md) in /usr/share/doc/cdc-relay/, run as
# 65534:65534; all dated the commit's time. CI's release-check builds
# linux/amd64 alone, so its image has that platform alone, and its bytes
# are checked all the same. Without a linux target there is no image.
write_image() {
  local t dist root platforms=()
  dist=$(cd "$DIST" && pwd)
  root=$(pwd)
  for t in "${TARGETS[@]}"; do
    [[ $t == linux/* ]] || continue
    platforms+=("$t=$dist/.stage/${t/\//-}/cdc-relay,$dist/cdc-relay-$VERSION-${t/\//-}.cdx.json")
  done
  if [ ${#platforms[@]} -eq 0 ]; then
    echo "release: no linux target in RELEASE_TARGETS, so no container image" >&2
    return
  fi
  echo "release: cdc-relay-$VERSION-oci.tar" >&2
  (cd scripts/image && go run . build -version "$VERSION" -revision "$COMMIT" -created "$SOURCE_DATE_EPOCH" \
    -doc "$root/LICENSE" -doc "$root/NOTICE" -doc "$dist/.stage/THIRD_PARTY_NOTICES" \
    -o "$dist/cdc-relay-$VERSION-oci.tar" "${platforms[@]}") ||
    die "could not build the container image (the error is above); cd scripts/image && go test ./... tests the builder"
}

# write_sums leaves DIST/SHA256SUMS over every archive, SBOM and image,
# sorted.
write_sums() {
  (cd "$DIST" && shopt -s nullglob && files=(*.tar.gz *.cdx.json *-oci.tar) &&
    printf '%s\n' "${files[@]}" | LC_ALL=C sort | xargs "${SHA256[@]}" >SHA256SUMS)
}

# require_targets stops unless TARGETS are release targets, each once.
require_targets() {
  local t seen=" "
  [ ${#TARGETS[@]} -gt 0 ] || die "RELEASE_TARGETS names no target: name some of $ALL_TARGETS, or unset it for all"
  for t in "${TARGETS[@]}"; do
    [[ " $ALL_TARGETS " == *" $t "* ]] || die "RELEASE_TARGETS: $t is not a release target: name some of $ALL_TARGETS"
    [[ $seen != *" $t "* ]] || die "RELEASE_TARGETS names $t twice"
    seen+="$t "
  done
}

main() {
  require_targets
  require_inputs
  find_tools
  pin_go_env
  pin_toolchain
  pin_epoch
  cyclonedx_gomod
  rm -rf "$DIST"
  mkdir -p "$DIST"
  write_notices
  local t
  for t in "${TARGETS[@]}"; do
    release_target "$t"
  done
  write_image
  rm -rf "$DIST/.stage"
  write_sums
  local image=
  [ -e "$DIST/cdc-relay-$VERSION-oci.tar" ] && image=", the container image"
  echo "release: $DIST/ holds ${#TARGETS[@]} archives, ${#TARGETS[@]} SBOMs$image and SHA256SUMS of $VERSION" >&2
}

main "$@"
