#!/usr/bin/env bash
# Installs, from Debian's packages, what a make target needs and the machine
# lacks. Name what to check:
#
#   postgres  PostgreSQL's server binaries (initdb, pg_ctl): the demo, the tests
#   kcat      the independent Kafka client the end-to-end tests check with
#   gcc       a C compiler and libc headers: go test -race needs cgo
#   kafka     Java and Maven, for the real Apache Kafka broker (make test-kafka)
#   pgversions Java, Maven, unzip and xz: scripts/pgversion.sh fetches PostgreSQL
#             versions other than Debian's (make test-pg)
#   promtool  Prometheus's promtool, which checks docker/'s alerting rules
#   release   jq, which make release writes the SBOMs with (GNU tar, gzip
#             and sha256sum are Debian's essentials)
#   chromium  headless Chromium, which the console's browser test (e2e
#             TestConsole) drives
#
#   scripts/deps.sh postgres                   # make demo
#   scripts/deps.sh postgres kcat gcc promtool # make test
#
# As root it runs apt-get; otherwise it prints the apt-get command to run.
# Go itself must already be installed.
set -euo pipefail

usage() {
  echo "usage: scripts/deps.sh {postgres|kcat|gcc|kafka|pgversions|promtool|release|chromium}..." >&2
  sed -n '2,21s/^# \{0,1\}//p' "$0" >&2
}
if [ $# -eq 0 ]; then
  echo "deps: name what to install." >&2
  usage
  exit 2
fi

if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go is not installed; get it from https://go.dev/dl/ (go.mod says which version)" >&2
  exit 1
fi

missing=() # Debian packages
add() {
  local p
  for p in "$@"; do
    case " ${missing[*]-} " in *" $p "*) ;; *) missing+=("$p") ;; esac
  done
}
for want in "$@"; do
  case "$want" in
  postgres)
    if [ -n "${PG_BINDIR:-}" ]; then
      if [ ! -x "$PG_BINDIR/initdb" ]; then
        echo "deps: PG_BINDIR=$PG_BINDIR has no initdb: point it at PostgreSQL's bin directory, or unset it" >&2
        exit 1
      fi
    elif ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
      add postgresql
    fi
    # As root, initdb refuses to run: the throwaway clusters run as the
    # "postgres" user, which Debian's postgresql package creates.
    if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
      add postgresql
    fi
    ;;
  kcat)
    command -v kcat >/dev/null 2>&1 || add kcat
    ;;
  gcc)
    # What cgo needs: the compiler and the C library's headers.
    if ! printf '#include <stdlib.h>\nint main(void) { return 0; }\n' |
      "${CC:-gcc}" -x c -o /dev/null - >/dev/null 2>&1; then
      add gcc libc6-dev
    fi
    ;;
  kafka)
    command -v java >/dev/null 2>&1 || add default-jre-headless
    command -v mvn >/dev/null 2>&1 || add maven
    ;;
  pgversions)
    command -v java >/dev/null 2>&1 || add default-jre-headless
    command -v mvn >/dev/null 2>&1 || add maven
    command -v unzip >/dev/null 2>&1 || add unzip
    command -v xz >/dev/null 2>&1 || add xz-utils
    ;;
  promtool)
    # Debian's prometheus package (21 MiB to download with what it needs);
    # its service is not started in a container without an init system.
    command -v promtool >/dev/null 2>&1 || add prometheus
    ;;
  release)
    command -v jq >/dev/null 2>&1 || add jq
    ;;
  chromium)
    command -v chromium >/dev/null 2>&1 || add chromium
    ;;
  *)
    echo "deps: unknown dependency \"$want\"" >&2
    usage
    exit 2
    ;;
  esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: missing ${missing[*]} (Debian package names), and there is no apt-get: install their" >&2
  echo "      equivalents (for PostgreSQL, set PG_BINDIR to the directory holding initdb and pg_ctl)" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing ${missing[*]}; install them with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "deps: installing ${missing[*]} from Debian's packages" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
