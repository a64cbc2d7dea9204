#!/usr/bin/env bash
# Builds the Debezium harness once, into a cache outside the repository, and
# runs it: run.sh --config FILE [--config FILE ...] [--max N] [--timeout SECONDS] [key=value ...]
# run.sh --build-only builds it (when its sources changed) and exits.
# stdout carries the records alone; Maven's and Debezium's output go to stderr.
#
# DEBEZIUM_HARNESS_CACHE  where the build goes (default
#                         ${XDG_CACHE_HOME:-$HOME/.cache}/cdc-relay/debezium-harness)
# MAVEN_REPO              a Maven local repository other than ~/.m2/repository
# JAVA_HOME               the Java to build and run with (17 or newer)
# HARNESS_LOG_LEVEL       slf4j-simple's level for Debezium's log (default warn)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${DEBEZIUM_HARNESS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdc-relay/debezium-harness}
build=$cache/build
java=${JAVA_HOME:+$JAVA_HOME/bin/}java

mkdir -p "$cache"
sum=$(cd "$here" && find pom.xml src -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)

build() {
	if [[ -f $build/debezium-harness.jar && -f $cache/stamp && $(cat "$cache/stamp") == "$sum" ]]; then
		return
	fi
	echo "debezium-harness: building into $build" >&2
	rm -rf "$build" "$cache/stamp"
	mvn -B -q -f "$here/pom.xml" -Dharness.build.dir="$build" \
		${MAVEN_REPO:+-Dmaven.repo.local="$MAVEN_REPO"} package >&2
	echo "$sum" >"$cache/stamp"
}

# One build at a time: tests may start several harnesses at once.
exec 9>"$cache/lock"
flock 9
build
flock -u 9
exec 9>&-

if [[ ${1:-} == --build-only ]]; then
	exit 0
fi
exec "$java" ${HARNESS_JAVA_OPTS:-} -cp "$build/debezium-harness.jar:$build/lib/*" io.cdcrelay.harness.Harness "$@"
