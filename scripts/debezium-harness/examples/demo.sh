#!/usr/bin/env bash
# Runs the harness on each example case against a PostgreSQL with
# wal_level=logical, and prints its records with key, value and headers
# decoded. Drops and re-creates the table outboxevent and the slots
# debezium_harness_<case>: use a throwaway database.
#   PGHOST=127.0.0.1 PGPORT=54376 PGUSER=postgres examples/demo.sh [case ...]
# A case is one or more example files joined by +, e.g.
# json-schemas-off+expand-json-payload.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cases=("$@")
if ((${#cases[@]} == 0)); then
	cases=(json-schemas-off json-schemas-on string
		json-schemas-off+expand-json-payload json-schemas-on+expand-json-payload
		json-schemas-off+type-in-envelope)
fi
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }
slot() { echo "debezium_harness_${1//[^a-z0-9]/_}"; }

psql -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'debezium\_harness\_%'" >/dev/null
psql -c 'DROP TABLE IF EXISTS outboxevent; DROP PUBLICATION IF EXISTS debezium_harness' 2>/dev/null
psql -f "$here/outbox.sql"
for c in "${cases[@]}"; do
	psql -c "SELECT 1 FROM pg_create_logical_replication_slot('$(slot "$c")', 'pgoutput')" >/dev/null
done
psql -f "$here/rows.sql"
rows=$(psql -Atc 'SELECT count(*) FROM outboxevent')

for c in "${cases[@]}"; do
	configs=(--config "$here/base.properties")
	IFS=+ read -ra files <<<"$c"
	for f in "${files[@]}"; do configs+=(--config "$here/$f.properties"); done
	echo "== $c"
	"$here/../run.sh" "${configs[@]}" --max "$rows" --timeout 120 \
		database.hostname="${PGHOST:-127.0.0.1}" database.port="${PGPORT:-5432}" \
		database.user="${PGUSER:-postgres}" database.password="${PGPASSWORD:-}" \
		database.dbname="${PGDATABASE:-postgres}" slot.name="$(slot "$c")" |
		python3 -c '
import base64, json, sys
def show(b):
    return "null (no bytes)" if b is None else repr(base64.b64decode(b))[1:]
for line in sys.stdin:
    r = json.loads(line)
    print("topic %s partition %s timestamp %s" % (r["topic"], r["partition"], r["timestamp"]))
    print("  key   " + show(r["key"]))
    print("  value " + show(r["value"]))
    for h in r["headers"]:
        print("  header %s: %s" % (h["key"], show(h["value"])))
'
done
