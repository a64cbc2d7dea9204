#!/usr/bin/env bash
# Prints the semantic version of the git checkout DIR (by default the one
# this script is in), for `make build` to stamp into the binary:
#
#   v0.5.0                        HEAD is the tag v0.5.0, no tracked file modified
#   v0.5.0-rc.1                   the same, for a pre-release tag
#   v0.4.1-dev.3+g8d66468ba558    3 commits after the tag v0.4.0: sorts after
#                                 v0.4.0 and before v0.4.1 and v0.4.1-rc.1
#   v0.5.0-rc.1.dev.3+g8d66468ba558
#                                 3 commits after the pre-release v0.5.0-rc.1:
#                                 after it, before v0.5.0-rc.2 and v0.5.0
#   v0.0.0-dev.42+g8d66468ba558   no version tag: 42 commits in all
#   v0.5.0+g8d66468ba558.dirty    tracked files modified (untracked ones do not
#                                 count); after a tag, v0.4.1-dev.3+g….dirty
#   dev                           DIR is not the top of a git checkout with a
#                                 commit, or git is missing
#
# Only tags of the form v<major>.<minor>.<patch>[-<pre-release>] count
# ("v1.2", "v1.2.3.4", "v01.2.3", "v1.2.3+meta", "release-1" do not). Of
# the tags HEAD contains (git tag --merged HEAD), the highest is used
# by semantic versioning (v0.5.0 above v0.5.0-rc.2 above v0.5.0-rc.1
# above v0.4.3), whatever its distance: a merged maintenance branch's nearer
# v0.4.3 never takes HEAD below a released v0.5.0. The count after it is
# git rev-list --count TAG..HEAD. g<hash> is HEAD's commit, 12 hex digits.
#
# Stdout is the version only. A warning goes to stderr, one line saying
# what to do, when the version may be wrong: a shallow clone (it lacks the
# older history and tags: git fetch --tags --unshallow), or git failing in
# a checkout, e.g. one another user owns ("dubious ownership": git config
# --global --add safe.directory DIR).
set -u

dev() {
  echo dev
  exit 0
}

warn() {
  echo "scripts/version.sh: warning: $*" >&2
}

# checkout_or_dev leaves the working directory at the top of a git checkout
# with a commit, or prints dev; it warns when DIR has a .git that git
# cannot read.
checkout_or_dev() {
  cd "$1" 2>/dev/null || dev
  local top err
  if ! top=$(git rev-parse --show-toplevel 2>&1); then
    if [ -e .git ]; then
      err=$(printf '%s' "$top" | head -n 1)
      warn "git cannot read the checkout $(pwd -P) (${err:-git is missing}), so the version is dev; if git reports dubious ownership, run: git config --global --add safe.directory $(pwd -P)"
    fi
    dev
  fi
  [ "$top" = "$(pwd -P)" ] || dev
  git rev-parse -q --verify HEAD >/dev/null 2>&1 || dev
}

checkout_or_dev "${1:-$(dirname "$0")/..}"
if [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
  warn "$(pwd -P) is a shallow clone, which lacks the older history and tags, so the version may be too low: run git fetch --tags --unshallow"
fi

short=$(git rev-parse --short=12 HEAD)
dirty=
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  dirty=.dirty
fi

semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'

# highest prints "<vX.Y.Z> <2 release|1 pre-release> <tag>" for the
# highest version tag HEAD contains, or nothing: sorted by semantic-
# versioning precedence, highest first.
highest() {
  git tag --merged HEAD | grep -E "$semver" | while read -r tag; do
    kind=2
    case $tag in *-*) kind=1 ;; esac
    echo "${tag%%-*} $kind $tag"
  done | sort -k1,1Vr -k2,2nr -k3,3Vr | head -n 1
}

read -r _ _ tag <<<"$(highest)"
since=
if [ -n "${tag:-}" ]; then
  since=$(git rev-list --count "$tag..HEAD")
fi
if [ -z "${tag:-}" ]; then
  echo "v0.0.0-dev.$(git rev-list --count HEAD)+g$short$dirty"
elif [ "$since" = 0 ]; then
  echo "$tag${dirty:++g$short$dirty}"
elif [[ $tag == *-* ]]; then
  echo "$tag.dev.$since+g$short$dirty"
else
  IFS=. read -r major minor patch <<<"${tag#v}"
  echo "v$major.$minor.$((patch + 1))-dev.$since+g$short$dirty"
fi
