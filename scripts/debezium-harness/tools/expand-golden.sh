#!/usr/bin/env bash
# Rewrites decoder/testdata/expand-json-payload.jsonl with the bytes the
# real router writes: each line's payload goes through Debezium's outbox
# event router (table.expand.json.payload=true) and Kafka Connect's
# JsonConverter, schemas off and on (tools/RouterExpand.java), in the
# harness's classpath (Debezium 3.6.1.Final, Kafka Connect 4.3.0).
#
# The lines that set emptyArray (table.json.payload.empty.array.behavior,
# which Debezium 3.7 added) are answered by the router built from 3.7's
# outbox package, compiled from a Debezium git repository: DEBEZIUM_GIT
# (a clone, bare or not) and DEBEZIUM_TAG (default v3.7.0.Alpha2). Without
# DEBEZIUM_GIT those lines keep the answers they have.
#
# The lines that set java19 (doubles whose Double.toString changed in
# Java 19, JDK-4511638) are answered once more on JAVA19_HOME's Java (19
# or later), into offJava19 and onJava19. Without JAVA19_HOME they keep
# those answers.
#
# Run from anywhere; JAVA_HOME, DEBEZIUM_HARNESS_CACHE and MAVEN_REPO as
# for run.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
golden=$repo/decoder/testdata/expand-json-payload.jsonl
cache=${DEBEZIUM_HARNESS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdc-relay/debezium-harness}
javac=${JAVA_HOME:+$JAVA_HOME/bin/}javac
java=${JAVA_HOME:+$JAVA_HOME/bin/}java

"$here/../run.sh" --build-only
cp="$cache/build/debezium-harness.jar:$cache/build/lib/*"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$javac" -nowarn -d "$tmp/tool" -cp "$cp" "$here/RouterExpand.java"

"$java" -cp "$tmp/tool:$cp" RouterExpand --skip empty-array <"$golden" >"$tmp/out.jsonl" 2>>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }

if [[ -n ${DEBEZIUM_GIT:-} ]]; then
	tag=${DEBEZIUM_TAG:-v3.7.0.Alpha2}
	pkg=debezium-connect-plugins/src/main/java/io/debezium/transforms/outbox
	mkdir -p "$tmp/src"
	for f in JsonSchemaData EventRouterConfigDefinition EventRouterDelegate; do
		git -C "$DEBEZIUM_GIT" show "$tag:$pkg/$f.java" >"$tmp/src/$f.java"
	done
	"$javac" -nowarn -d "$tmp/outbox" -cp "$cp" "$tmp"/src/*.java 2>>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
	"$java" -cp "$tmp/tool:$tmp/outbox:$cp" RouterExpand --only empty-array <"$tmp/out.jsonl" >"$tmp/out2.jsonl" 2>>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
	mv "$tmp/out2.jsonl" "$tmp/out.jsonl"
else
	echo "expand-golden: DEBEZIUM_GIT is not set: the emptyArray lines keep their answers" >&2
fi
if [[ -n ${JAVA19_HOME:-} ]]; then
	"$JAVA19_HOME/bin/java" -cp "$tmp/tool:$cp" RouterExpand --only java19 <"$tmp/out.jsonl" >"$tmp/out2.jsonl" 2>>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
	mv "$tmp/out2.jsonl" "$tmp/out.jsonl"
else
	echo "expand-golden: JAVA19_HOME is not set: the java19 lines keep their Java 19 answers" >&2
fi
mv "$tmp/out.jsonl" "$golden"
