#!/usr/bin/env bash
# Installs what the demo and the tests need and the machine lacks:
# PostgreSQL's server binaries (initdb, pg_ctl) and kcat, from Debian's
# packages; with the argument "kafka", also Java and Maven for the real
# Apache Kafka broker (make test-kafka). Go itself must already be installed.
set -euo pipefail

missing=()
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1 && [ -z "${PG_BINDIR:-}" ]; then
  missing+=(postgresql)
fi
if ! command -v kcat >/dev/null 2>&1; then
  missing+=(kcat)
fi
if [ "${1:-}" = kafka ]; then
  command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
fi
if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go is not installed; get it from https://go.dev/dl/ (go.mod says which version)" >&2
  exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing ${missing[*]}; install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: missing ${missing[*]} and there is no apt-get: install PostgreSQL's server binaries (set PG_BINDIR to their directory) and kcat" >&2
  exit 1
fi
echo "deps: installing ${missing[*]} from Debian's packages" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
