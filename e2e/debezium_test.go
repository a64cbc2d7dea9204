package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/sink"
)

// The comparison with Debezium's outbox event router (issue 49: a team
// switches from Debezium to the relay without touching a consumer). The
// router runs for real: scripts/debezium-harness (Debezium 3.6.1.Final's
// PostgreSQL connector, pgoutput, the EventRouter SMT, the Kafka Connect
// converters a worker would use) prints each record's bytes; the relay
// produces the same rows to Kafka; every record must match.

// debeziumHarness is the harness's launcher, from e2e/.
var debeziumHarness = filepath.Join("..", "scripts", "debezium-harness", "run.sh")

// debeziumPublication is the one publication of a case's tables: the
// relay's (migrate --config creates it) and the harness's.
const debeziumPublication = "debezium_e2e"

// debeziumTable is an outbox table of the router's default layout (id,
// aggregatetype, aggregateid, type, payload), with aggregateid and payload
// of the types its name says, and its rows. Each table's rows have
// aggregatetype its name, so a table's rows go to a topic of their own.
type debeziumTable struct {
	name        string
	keyType     string // aggregateid's type, NOT NULL or not
	payloadType string
	rows        [][2]string // aggregateid and payload, as SQL expressions
	// extra, when set, is one more column of the table ("part int4"),
	// and extras its values (SQL expressions), row by row. A table with
	// a part column has its topic made with 4 partitions before the rows.
	extra  string
	extras []string
}

// debeziumTables cover every payload type the router passes on (jsonb,
// json, text, bytea) and the key types of aggregateid (varchar, text,
// uuid, int2, int4, int8, bool), with the edges of each: a JSON string, a
// JSON null, unicode with a character outside the BMP, an empty value, a
// NULL payload, a NULL and an empty key.
var debeziumTables = []debeziumTable{
	{name: "ob_varchar_jsonb", keyType: "varchar(255) NOT NULL", payloadType: "jsonb", rows: [][2]string{
		{`'123'`, `'{"id": 123, "name": "Jo Lindqvist", "email": "jo@example.com"}'`},
		{`'1'`, `'"a text payload: a JSON string"'`},
		{`'Ærø-7 ☕'`, `'{"name":"Jö Lindqvist ☕ 😀","tags":["ünïcødé", "\u00e9"],"n":1.50}'`},
		{`'1'`, `NULL`},
		{`'2'`, `'null'`},
		{`'3'`, `'[1, 2.50, null, true, "x"]'`},
	}},
	{name: "ob_text_text", keyType: "text", payloadType: "text", rows: [][2]string{
		{`'k1'`, `'plain text, not JSON'`},
		{`'k2 ☕ 😀'`, `E'unicode ☕ 😀, a "quote", a backslash \\ and a newline\n'`},
		{`'k3'`, `''`},
		{`''`, `'an empty key'`},
		{`NULL`, `'no key'`},
		{`'k4'`, `NULL`},
	}},
	{name: "ob_varchar_json", keyType: "varchar(64) NOT NULL", payloadType: "json", rows: [][2]string{
		{`'j1'`, `'{"b": 1,   "a": [1, 2], "a": "twice"}'`},
		{`'j2'`, `'"😀"'`},
	}},
	{name: "ob_uuid_bytea", keyType: "uuid NOT NULL", payloadType: "bytea", rows: [][2]string{
		{`'5f0c6e2a-1b3d-4c5e-8f7a-9b0c1d2e3f40'`, `'\x000aff10e29880'::bytea`},
		{`'5f0c6e2a-1b3d-4c5e-8f7a-9b0c1d2e3f41'`, `''::bytea`},
		{`'5f0c6e2a-1b3d-4c5e-8f7a-9b0c1d2e3f42'`, `NULL`},
		{`'5f0c6e2a-1b3d-4c5e-8f7a-9b0c1d2e3f43'`, `convert_to('{"a": "😀"}', 'UTF8')`},
	}},
	{name: "ob_int2_jsonb", keyType: "int2 NOT NULL", payloadType: "jsonb", rows: [][2]string{
		{`7`, `'{"n": 7}'`},
		{`-32768`, `'{}'`},
	}},
	{name: "ob_int4_jsonb", keyType: "int4 NOT NULL", payloadType: "jsonb", rows: [][2]string{
		{`123`, `'{"n": 123}'`},
		{`-2147483648`, `'{"n": "min"}'`},
	}},
	{name: "ob_int8_text", keyType: "int8 NOT NULL", payloadType: "text", rows: [][2]string{
		{`9007199254740993`, `'past 2^53'`},
		{`-1`, `'minus one'`},
	}},
	{name: "ob_uuid_jsonb", keyType: "uuid NOT NULL", payloadType: "jsonb", rows: [][2]string{
		{`'2E9B7C1A-5D3F-4A8E-9B6C-1F0E2D3C4B5A'`, `'{"upper": "the literal was upper case"}'`},
	}},
	{name: "ob_bool_jsonb", keyType: "bool NOT NULL", payloadType: "jsonb", rows: [][2]string{
		{`true`, `'{"b": true}'`},
		{`false`, `'{"b": false}'`},
	}},
	// The payloads of the router's table.expand.json.payload (the expand
	// cases), which the other cases write as strings. jsonb renders its
	// numbers as numeric's text (1e7 is 10000000) and orders its keys;
	// json keeps the text as written, exponents and repeated keys too.
	{name: "ob_jsonb_expand", keyType: "varchar(64) NOT NULL", payloadType: "jsonb", rows: [][2]string{
		{`'e1'`, `'{"order": {"id": 123, "total": 1.50, "lines": [{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 1, "gift": true}], ` +
			`"tags": ["a", "b"], "notes": null, "none": [], "meta": {}}, "big": 3000000000, "neg": -42, "negd": -0.5, "ok": true, "no": false, ` +
			`"d": [1.50, 0.001, 10000000, 0.000015, 123456789.123, -2.5], ` +
			`"text": "q\"uote \\ back\nnewline\ttab ☕ é 😀 \u0001 /", "deep": {"a": {"b": {"c": null, "d": [null, 1]}}}}'`},
		{`'e2'`, `'{}'`},
		{`'e3'`, `'"a JSON string"'`},
		{`'e4'`, `'{"objs": [{"a": 1}, {"a": 2, "b": "x"}], "first empty": [{}, {"z": [1, 2]}], "nulls": [null, "s", null], ` +
			`"nested": [[1], []], "of empty": [{"e": []}, {"e": [{"f": true}]}], "bools": [true, false]}'`},
		{`'e5'`, `'null'`},
		{`'e6'`, `NULL`},
		{`'e7'`, `'{"mixed": [1, "a"]}'`},             // not a homogenous array: not expanded
		{`'e8'`, `'{"ints": [1, 3000000000]}'`},       // int32 and int64: not expanded
		{`'e9'`, `'{"a": {"": 1}, "b": 2}'`},          // a field without a name: not expanded
		{`'e10'`, `'{"only": [null, null], "x": 1}'`}, // no element schema: not expanded
		{`'e11'`, `'{"min": -9223372036854775808, "max": 9223372036854775807, "i": -2147483648}'`},
	}},
	{name: "ob_json_expand", keyType: "varchar(64) NOT NULL", payloadType: "json", rows: [][2]string{
		{`'j1'`, `'{"b": 1,   "a": [1, 2], "a": "twice", "d": [1.50, 0.001, 1e7, 1.5e-5, 123456789.123, -1E+2, 0.00099, 1e21, 1.0], "inf": 1e400}'`},
		{`'j2'`, `'{"s": "\ud83d\ude00 \u00e9 \u0000 \ud800", "k": 1, "k": {"x": 1}}'`},
		{`'j3'`, `' {"a": 1}'`},
		{`'j4'`, `'{"whitespace" : [ 1 , 2 ] , "o" : { } }'`},
	}},
	{name: "ob_text_expand", keyType: "text", payloadType: "text", rows: [][2]string{
		{`'t1'`, `' {"leading": "space"}'`},
		{`'t2'`, `E'\n{"leading": "newline"}'`},
		{`'t3'`, `'{"truncated": 1'`},
		{`'t4'`, `'{"then": "text"} trailing'`},
		{`'t5'`, `'plain text, not JSON'`},
		{`'t6'`, `'{unquoted: 1}'`},
		{`'t7'`, `'{"a": 01}'`},
		{`'t8'`, `'{"a": 1}{"b": 2}'`},
	}},
	{name: "ob_text_expand_empty_array", keyType: "text", payloadType: "text", rows: [][2]string{
		{`'a1'`, `'[]'`}, // the router gives up after it made the schema null: the string, with schema null
	}},
	// Payloads the router expands but makes no record of (JsonConverter,
	// or the router with an envelope, throws: the connector's task
	// stops): the expand cases leave this table out of the harness, and
	// want the relay to park each row.
	{name: "ob_jsonb_expand_fails", keyType: "varchar(64) NOT NULL", payloadType: "jsonb", rows: [][2]string{
		{`'f1'`, `'{"beyond 2^63": 99999999999999999999}'`},
		{`'f2'`, `'[1, 2]'`},
		{`'f3'`, `'[{"a": 1}]'`},
		{`'f4'`, `'{"x": [{"a": 1}, {"a": "text"}]}'`},
		{`'f5'`, `'{"x": [{"a": 1}, {"a": 1, "b": 2}, null]}'`},
	}},
	// A partition column (the router's table.fields.additional.placement
	// part:partition): one key on two partitions, partition 0, and a NULL
	// that leaves the record to its key's hash.
	{name: "ob_partitioned", keyType: "varchar(64) NOT NULL", payloadType: "jsonb", rows: [][2]string{
		{`'p1'`, `'{"p": 3}'`},
		{`'p2'`, `'{"p": 0}'`},
		{`'p3'`, `'{"p": null}'`},
		{`'p1'`, `'{"p": 1}'`},
	}, extra: "part int4", extras: []string{"3", "0", "NULL", "1"}},
	// A tracing column (the router's tracing.span.context.field, by
	// default tracingspancontext) as Debezium's outbox extensions write it,
	// Java properties text: with and without tracestate, a comment line,
	// spaces around the separator; a NULL, text without a traceparent and
	// an upper-case one (not W3C's) give no header.
	{name: "ob_traced", keyType: "varchar(64) NOT NULL", payloadType: "jsonb", rows: [][2]string{
		{`'t1'`, `'{"n": 1}'`}, {`'t2'`, `'{"n": 2}'`}, {`'t3'`, `'{"n": 3}'`},
		{`'t4'`, `'{"n": 4}'`}, {`'t5'`, `'{"n": 5}'`}, {`'t6'`, `'{"n": 6}'`},
	}, extra: "tracingspancontext text", extras: []string{
		`E'#Mon Nov 30 12:00:00 UTC 2026\ntraceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\ntracestate=congo=t61rcWkgMzE\n'`,
		`'traceparent=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00'`,
		`'traceparent : 00-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-01'`,
		`NULL`,
		`'not a trace context'`,
		`'traceparent=00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01'`,
	}},
	// Not compared: an array of objects whose fields differ other than by
	// the later objects' adding fields at the end ([{"a":1},{"b":2}]).
	// The router merges their schemas in the order of a Java HashSet,
	// which follows identity hash codes and so changes with the JVM; the
	// relay merges them in the objects' order (docs/switching-from-debezium.md).
}

// debeziumCase is one converter setup: the harness's example property
// files (after base.properties) and overrides. The relay's config is what
// `cdc-relay config from-debezium` makes of the same connector config.
type debeziumCase struct {
	name    string
	files   []string // scripts/debezium-harness/examples/<name>.properties
	harness []string // more key=value properties
	tables  []string // names of debeziumTables; none: every one
	// parked are tables of the case whose rows the router makes no record
	// of (its connector's task would stop on the first): the harness
	// leaves them out, and the relay must park each of their rows.
	parked []string
}

// Router properties of the cases.
const (
	// placeTypeInEnvelope puts the type in the envelope and a header, as
	// the relay's envelope: {eventType: type} beside its headers.
	placeTypeInEnvelope = "transforms.outbox.table.fields.additional.placement=type:envelope:eventType,type:header:eventType"
	tombstoneOnEmpty    = "transforms.outbox.route.tombstone.on.empty.payload=true"
	expandJSONPayload   = "transforms.outbox.table.expand.json.payload=true"
)

// expandTables are the tables of the expand cases.
var expandTables = []string{"ob_jsonb_expand", "ob_json_expand", "ob_text_expand", "ob_text_expand_empty_array", "ob_jsonb_expand_fails",
	"ob_varchar_jsonb", "ob_varchar_json", "ob_uuid_bytea", "ob_int4_jsonb"}

var debeziumCases = []debeziumCase{
	// StringConverter: text as its UTF-8 bytes, a boolean true or false;
	// every table but bytea's (StringConverter writes a byte array's Java
	// toString()).
	{name: "string", files: []string{"string"},
		tables: []string{"ob_varchar_jsonb", "ob_text_text", "ob_varchar_json", "ob_int2_jsonb", "ob_int4_jsonb",
			"ob_int8_text", "ob_uuid_jsonb", "ob_bool_jsonb"}},
	// The relay's default, raw: the column's text, and a bytea payload's
	// bytes as ByteArrayConverter writes them; the key by StringConverter
	// (a uuid's text).
	{name: "raw-bytea", files: []string{"string"}, tables: []string{"ob_uuid_bytea"},
		harness: []string{"value.converter=org.apache.kafka.connect.converters.ByteArrayConverter"}},
	{name: "json-schemas-off", files: []string{"json-schemas-off"}},
	{name: "json-schemas-on", files: []string{"json-schemas-on"}},
	// A common worker setup: StringConverter keys, JSON values without
	// schemas.
	{name: "string-key-json-value", files: []string{"string"},
		harness: []string{"value.converter=org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable=false"},
		tables: []string{"ob_varchar_jsonb", "ob_text_text", "ob_varchar_json", "ob_uuid_bytea",
			"ob_int2_jsonb", "ob_int4_jsonb", "ob_int8_text", "ob_uuid_jsonb", "ob_bool_jsonb"}},
	// The type in the envelope beside the payload, and NULL or blank
	// payloads as tombstones.
	{name: "json-envelope-tombstones", files: []string{"json-schemas-off"},
		harness: []string{placeTypeInEnvelope, tombstoneOnEmpty}},
	// Header values as JSON (Debezium Server's JSON header format, or a
	// worker's header.converter), with schemas and without.
	{name: "json-headers", files: []string{"json-schemas-off"}, tables: []string{"ob_varchar_jsonb", "ob_text_text", "ob_int4_jsonb"},
		harness: []string{"header.converter=org.apache.kafka.connect.json.JsonConverter", "header.converter.schemas.enable=false"}},
	{name: "json-headers-with-schema", files: []string{"json-schemas-on"}, tables: []string{"ob_varchar_jsonb", "ob_text_text", "ob_int4_jsonb"},
		harness: []string{"header.converter=org.apache.kafka.connect.json.JsonConverter"}},
	// The payload's JSON expanded into a structure (with schemas, the
	// schema the router infers from it); a bytea payload is not expanded.
	{name: "json-schemas-off-expand", files: []string{"json-schemas-off"},
		harness: []string{expandJSONPayload},
		tables:  expandTables, parked: []string{"ob_jsonb_expand_fails"}},
	{name: "json-schemas-on-expand", files: []string{"json-schemas-on"},
		harness: []string{expandJSONPayload},
		tables:  expandTables, parked: []string{"ob_jsonb_expand_fails"}},
	// The envelope under JsonConverter with schemas: a struct named
	// after the table and the row's routed value. The router names every
	// envelope of one payload schema after the first row it routed since
	// it started: one table of each payload schema (jsonb, text, bytea),
	// each routed one way, names them as the relay does.
	{name: "json-schemas-on-envelope", files: []string{"json-schemas-on"}, tables: []string{"ob_varchar_jsonb", "ob_text_text", "ob_uuid_bytea"},
		harness: []string{placeTypeInEnvelope}},
	// A tracing column's context as the traceparent and tracestate
	// headers (the router under OpenTelemetry's propagation alone).
	{name: "json-tracing", files: []string{"json-schemas-off"}, tables: []string{"ob_traced"},
		harness: []string{"--otel-propagation", "transforms.outbox.tracing.span.context.field=tracingspancontext"}},
	// The same headers written by JsonConverter as the header converter,
	// with its schemas: the router's trace headers are Connect strings of
	// a schema that is not optional.
	{name: "json-tracing-json-headers", files: []string{"json-schemas-on"}, tables: []string{"ob_traced"},
		harness: []string{"--otel-propagation", "transforms.outbox.tracing.span.context.field=tracingspancontext",
			"header.converter=org.apache.kafka.connect.json.JsonConverter"}},
	// A partition placement: each record on the partition its row's
	// column names, or by its key's hash for a NULL.
	{name: "json-partition", files: []string{"json-schemas-off"}, tables: []string{"ob_partitioned"},
		harness: []string{"transforms.outbox.table.fields.additional.placement=part:partition,type:header:eventType"}},
	// The expanded payload in the envelope, beside the type; there the
	// router throws on a top-level empty array too.
	{name: "json-envelope-expand", files: []string{"json-schemas-off"},
		harness: []string{expandJSONPayload, placeTypeInEnvelope},
		tables:  expandTables, parked: []string{"ob_jsonb_expand_fails", "ob_text_expand_empty_array"}},
}

// TestDebeziumOutboxRouterBytes proves that a consumer of Debezium's outbox
// event router sees no difference when the relay takes over: for each
// converter setup (StringConverter, ByteArrayConverter for bytea,
// JsonConverter with and without schemas), the real router (Debezium
// 3.6.1.Final through scripts/debezium-harness) and the relay read the
// same outbox rows, jsonb, json, text and bytea payloads with keys of
// every supported column type, and every record's topic, key, value and
// headers are the same bytes, and so is its partition (Kafka's murmur2 of
// the key, the relay's own placement checked against it too). Only the
// timestamp is left out: Debezium's is the time it processed the change.
// The relay's relay.yaml is what `cdc-relay config from-debezium` makes of
// the case's connector config: the command is checked by the same bytes.
//
// It needs Java 17 and Maven: it runs with CDC_RELAY_TEST_DEBEZIUM=1 (make
// test-debezium, make e2e-kfake), and skips elsewhere.
func TestDebeziumOutboxRouterBytes(t *testing.T) {
	parallel(t)
	requireDebeziumHarness(t)

	// One case after the other: each mostly waits on its JVM's start.
	for _, c := range debeziumCases {
		t.Run(c.name, func(t *testing.T) {
			runDebeziumCase(t, c)
		})
	}
}

// requireDebeziumHarness skips the test unless CDC_RELAY_TEST_DEBEZIUM=1
// (make test-debezium, and CI's kfake step, make e2e-kfake), and builds
// the harness (once, into its cache): it runs Debezium in a JVM, and needs
// Java 17 and Maven. The tests' subject is the relay's records and the
// slot, not the broker: CI runs them once, beside the kfake tests, off
// the Apache Kafka step, the longest.
func requireDebeziumHarness(t *testing.T) {
	t.Helper()
	if harnessEnv["CDC_RELAY_TEST_DEBEZIUM"] != "1" {
		t.Skip("runs Debezium in a JVM: make test-debezium (CDC_RELAY_TEST_DEBEZIUM=1)")
	}
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the Debezium harness needs Java 17 and Maven: %s: %v (make deps-kafka installs them)", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	build := exec.CommandContext(ctx, debeziumHarness, "--build-only")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s --build-only: %v\n%s", debeziumHarness, err, out)
	}
	t.Logf("the Debezium harness was ready in %s (built once into its cache)", time.Since(began).Round(100*time.Millisecond))
}

// runDebeziumCase runs one case in a database of its own: the tables in
// one publication, a slot for the harness and the relay's own, the rows,
// then the harness and the relay; and compares their records.
func runDebeziumCase(t *testing.T, c debeziumCase) {
	e := newEnv(t)
	tables := debeziumTables
	if len(c.tables) > 0 {
		tables = nil
		for _, name := range c.tables {
			i := indexOfTable(name)
			if i < 0 {
				t.Fatalf("case %s names table %s, not one of debeziumTables", c.name, name)
			}
			tables = append(tables, debeziumTables[i])
		}
	}
	topicPrefix := e.prefix + ".outbox.event."

	// newEnv's table, slot and checkpoint give way to the case's:
	// migrate --config makes the publication and the relay's slot.
	e.dropOutbox()
	var include, all []string
	parked := map[string]bool{}
	for _, name := range c.parked {
		parked[name] = true
	}
	for _, tbl := range tables {
		part := ""
		if tbl.extra != "" {
			part = ",\n\t\t\t" + tbl.extra
		}
		if strings.HasPrefix(tbl.extra, "part ") {
			e.createTopic(topicPrefix+tbl.name, nil)
		}
		mustExec(t, e.conn, fmt.Sprintf(`CREATE TABLE %s (
			id            uuid         NOT NULL PRIMARY KEY,
			aggregatetype varchar(255) NOT NULL,
			aggregateid   %s,
			type          varchar(255) NOT NULL,
			payload       %s%s)`, tbl.name, tbl.keyType, tbl.payloadType, part))
		all = append(all, "public."+tbl.name)
		if !parked[tbl.name] {
			include = append(include, "public."+tbl.name)
		}
	}
	path := relayConfigFromConnector(t, e, c, topicPrefix, all)
	e.migrateConfig(path)

	// The harness's slot, made before the rows: Debezium streams from it.
	// It is dropped before newEnv's cleanup drops the database, which a
	// slot would keep.
	harnessSlot := e.slot + "_debezium"
	mustExec(t, e.conn, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", harnessSlot)
	t.Cleanup(func() { dropSlotWhenIdle(t, e, harnessSlot) })

	type rowRef struct{ table, key, payload string }
	rows := map[string]rowRef{} // by id
	var ids []string            // in insert order
	var parkedIDs []string      // the rows of the parked tables
	for i, tbl := range tables {
		var values []string
		for j, r := range tbl.rows {
			id := fmt.Sprintf("00000000-0000-4000-8000-%06d%06d", i+1, j+1)
			if parked[tbl.name] {
				parkedIDs = append(parkedIDs, id)
			} else {
				ids = append(ids, id)
			}
			rows[id] = rowRef{tbl.name, r[0], r[1]}
			part := ""
			if tbl.extra != "" {
				part = ", " + tbl.extras[j]
			}
			values = append(values, fmt.Sprintf("('%s', '%s', %s, '%s', %s%s)", id, tbl.name, r[0], "Event"+tbl.name, r[1], part))
		}
		columns := "id, aggregatetype, aggregateid, type, payload"
		if tbl.extra != "" {
			columns += ", " + strings.Fields(tbl.extra)[0]
		}
		mustExec(t, e.conn, fmt.Sprintf("INSERT INTO %s (%s) VALUES %s", tbl.name, columns, strings.Join(values, ",\n")))
	}

	end := e.lsn(currentLSN)

	// The relay streams while the harness's JVM starts.
	relay := e.startRelayArgs(relayBin, e.configArgs(path)...)
	began := time.Now()
	dbz := runHarness(t, e, c, harnessSlot, include, topicPrefix, len(ids))
	t.Logf("Debezium's %d records in %s", len(dbz), time.Since(began).Round(100*time.Millisecond))
	e.waitFor("the relay confirms every row", 60*time.Second, func() bool { return e.lsn(slotLSN) >= end })
	produced := relay.status().EventsProduced
	relay.stop(30 * time.Second)
	got, partitions := readRelayRecords(t, e, topicPrefix, append(slices.Clone(ids), parkedIDs...), int(produced), 30*time.Second)
	checkParkedRows(t, e, parkedIDs, got, func(id string) string {
		row := rows[id]
		return fmt.Sprintf("row %s (%s, aggregateid %s, payload %s)", id, row.table, row.key, row.payload)
	})

	const n = 12 // Kafka's default partitioner's choice among 12 partitions
	for _, id := range ids {
		row := rows[id]
		what := fmt.Sprintf("row %s (%s, aggregateid %s, payload %s)", id, row.table, row.key, row.payload)
		d, inDbz := dbz[id]
		r, inRelay := got[id]
		switch {
		case !inDbz && !inRelay:
			t.Errorf("%s: no record from Debezium nor from the relay", what)
			continue
		case !inDbz:
			t.Errorf("%s: the relay produced a record, Debezium none", what)
			continue
		case !inRelay:
			t.Errorf("%s: Debezium produced a record, the relay none (parked? its log follows)", what)
			continue
		}
		diffs := recordDiffs(d, r)
		if d.Partition != nil {
			// Placed by a partition column: the relay's must be there.
			if r.Partition != *d.Partition {
				diffs = append(diffs, fmt.Sprintf("partition: debezium's record names partition %d, the relay put it in %d", *d.Partition, r.Partition))
			}
			if len(diffs) > 0 {
				t.Errorf("%s:\n\t%s", what, strings.Join(diffs, "\n\t"))
			}
			continue
		}
		if d.Key != nil && r.Key != nil {
			if dp, rp := sink.Partition(d.Key, n), sink.Partition(r.Key, n); dp != rp {
				diffs = append(diffs, fmt.Sprintf("partition of %d: debezium's key %d, relay's %d", n, dp, rp))
			}
		}
		if np := partitions[r.Topic]; r.Key != nil && np > 0 {
			if want := int32(sink.Partition(r.Key, np)); r.Partition != want {
				diffs = append(diffs, fmt.Sprintf("partition: the relay put it in %d of %d, Kafka's murmur2 of the key says %d",
					r.Partition, np, want))
			}
		}
		if len(diffs) > 0 {
			t.Errorf("%s:\n\t%s", what, strings.Join(diffs, "\n\t"))
		}
	}
}

// recordDiffs says how the relay's record r differs from Debezium's d in
// its topic, key, value and headers (each byte); none when they are the
// same.
func recordDiffs(d dbzRecord, r *kgo.Record) []string {
	var diffs []string
	if d.Topic != r.Topic {
		diffs = append(diffs, fmt.Sprintf("topic: debezium %q, relay %q", d.Topic, r.Topic))
	}
	if !sameBytes(d.Key, r.Key) {
		diffs = append(diffs, fmt.Sprintf("key: debezium %s, relay %s", quoteBytes(d.Key), quoteBytes(r.Key)))
	}
	if !sameBytes(d.Value, r.Value) {
		diffs = append(diffs, fmt.Sprintf("value: debezium %s, relay %s", quoteBytes(d.Value), quoteBytes(r.Value)))
	}
	if dh, rh := showHeaders(d.Headers), showHeaders(relayHeaders(r)); dh != rh {
		diffs = append(diffs, fmt.Sprintf("headers: debezium %s, relay %s", dh, rh))
	}
	return diffs
}

// checkParkedRows wants each row of ids, whose payload the router makes no
// record of, parked by the relay, with a last error that says why, and
// no record of it in got.
func checkParkedRows(t *testing.T, e *env, ids []string, got map[string]*kgo.Record, what func(id string) string) {
	t.Helper()
	if len(ids) == 0 {
		return
	}
	failed := map[string]failedListRow{}
	for _, f := range e.failedList() {
		if f.EventID != nil {
			failed[*f.EventID] = f
		}
	}
	for _, id := range ids {
		if r, ok := got[id]; ok {
			t.Errorf("%s: the router makes no record of it, the relay produced %q", what(id), r.Value)
		}
		f, ok := failed[id]
		switch {
		case !ok:
			t.Errorf("%s: the router makes no record of it, and the relay did not park it", what(id))
		case !strings.Contains(f.LastError, "cannot make a record of it"):
			t.Errorf("%s: parked for another reason: %s", what(id), f.LastError)
		}
	}
}

func indexOfTable(name string) int {
	for i, tbl := range debeziumTables {
		if tbl.name == name {
			return i
		}
	}
	return -1
}

// dbzRecord is one line of the harness's output: the bytes a Kafka
// Connect worker would produce (nil for null).
type dbzRecord struct {
	Topic     string   `json:"topic"`
	Partition *int32   `json:"partition"`
	Key       []byte   `json:"key"`
	Value     []byte   `json:"value"`
	Headers   []dbzHdr `json:"headers"`
	Timestamp *int64   `json:"timestamp"` // not compared: when Debezium read the change
}

type dbzHdr struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// runHarness runs Debezium on slot, for the tables of include, until it
// yields want records, and returns them by their id header.
func runHarness(t *testing.T, e *env, c debeziumCase, slot string, include []string, topicPrefix string, want int) map[string]dbzRecord {
	t.Helper()
	args := harnessArgs(t, e, c.files, topicPrefix, "--max", fmt.Sprint(want), "--timeout", "120",
		"slot.name="+slot, "publication.name="+debeziumPublication,
		"table.include.list="+strings.Join(include, ","))
	args = append(args, c.harness...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, debeziumHarness, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	out, _ := parseHarnessRecords(t, stdout.Bytes())
	if runErr != nil {
		t.Fatalf("the harness: %v (%d of %d records)\nrun.sh %s\n%s", runErr, len(out), want,
			strings.Join(args, " "), stderr.String())
	}
	return out
}

// relayConfigFromConnector writes the relay.yaml that `cdc-relay config
// from-debezium` makes of the case's connector config (the harness's
// properties, with tables as its table.include.list, as Kafka Connect's
// JSON), on the test's slot and the publication the harness reads, and
// returns its path: the relay the test compares with the router runs on
// what the command made. The command must exit 0 and list no property
// as one the relay cannot honour.
func relayConfigFromConnector(t *testing.T, e *env, c debeziumCase, topicPrefix string, tables []string) string {
	t.Helper()
	args := harnessArgs(t, e, c.files, topicPrefix, "slot.name="+e.slot+"_debezium", "publication.name="+debeziumPublication,
		"table.include.list="+strings.Join(tables, ","))
	args = append(args, c.harness...)
	props := map[string]string{}
	for i := 0; i < len(args); i++ {
		if args[i] == "--config" {
			i++
			b, err := os.ReadFile(args[i])
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(b), "\n") {
				line = strings.TrimSpace(line)
				if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "!") {
					props[strings.TrimSpace(k)] = strings.TrimSpace(v)
				}
			}
			continue
		}
		if k, v, ok := strings.Cut(args[i], "="); ok {
			props[k] = v
		}
	}
	body, err := json.Marshal(map[string]any{"name": "e2e-" + c.name, "config": props})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	connector := filepath.Join(dir, "connector.json")
	if err := os.WriteFile(connector, body, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(relayBin, "config", "from-debezium", "--slot", e.slot, "--publication", debeziumPublication, connector)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cdc-relay config from-debezium: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "cannot be honoured:") {
		t.Fatalf("cdc-relay config from-debezium lists properties the relay cannot honour:\n%s", stderr.String())
	}
	path := filepath.Join(dir, "relay.yaml")
	if err := os.WriteFile(path, stdout.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// harnessArgs are the harness's arguments for the test's database: the
// example properties base.properties and files
// (scripts/debezium-harness/examples/<file>.properties), then extra (a
// key=value overrides the files), then the settings every comparison
// with the relay needs: no __debezium.context.* headers, the topics under
// topicPrefix, the type as a header.
func harnessArgs(t *testing.T, e *env, files []string, topicPrefix string, extra ...string) []string {
	t.Helper()
	cfg, err := pgconn.ParseConfig(e.url)
	if err != nil {
		t.Fatal(err)
	}
	examples := filepath.Join(filepath.Dir(debeziumHarness), "examples")
	args := []string{"--config", filepath.Join(examples, "base.properties")}
	for _, f := range files {
		args = append(args, "--config", filepath.Join(examples, f+".properties"))
	}
	args = append(args, "database.hostname="+cfg.Host, fmt.Sprintf("database.port=%d", cfg.Port),
		"database.user="+cfg.User, "database.password="+cfg.Password, "database.dbname="+cfg.Database)
	args = append(args, extra...)
	return append(args,
		// Without the connector's __debezium.context.* headers: one of
		// them is a UUID new each run, and the relay has no such header.
		"extended.headers.enabled=false",
		// The relay's topics: this test's own on a broker tests share.
		"transforms.outbox.route.topic.replacement="+topicPrefix+"${routedByValue}",
		// The type as a header, as the relay's headers: {eventType: type}.
		"transforms.outbox.table.fields.additional.placement=type:header:eventType")
}

// parseHarnessRecords reads the harness's output: its records by their id
// header, and the ids in the order it printed them. A row printed twice
// fails the test.
func parseHarnessRecords(t *testing.T, stdout []byte) (map[string]dbzRecord, []string) {
	t.Helper()
	out := map[string]dbzRecord{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r dbzRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("the harness printed a line that is not a record (%v): %q", err, sc.Bytes())
		}
		id, ok := dbzHeader(r, "id")
		id = headerID(id)
		if !ok {
			t.Fatalf("a Debezium record without an id header: %+v", r)
		}
		if _, dup := out[id]; dup {
			t.Errorf("Debezium yielded the row %s twice", id)
		}
		out[id] = r
		order = append(order, id)
	}
	return out, order
}

func dbzHeader(r dbzRecord, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// readRelayRecords reads every topic whose name begins with topicPrefix
// until n records arrived, and returns them by their id header (each of
// ids), with each topic's partitions; it fails the test after timeout.
func readRelayRecords(t *testing.T, e *env, topicPrefix string, ids []string, n int, timeout time.Duration) (map[string]*kgo.Record, map[string]int) {
	t.Helper()
	// A regex consumer learns of topics as it refreshes its metadata.
	cl := e.fromStart("^"+regexp.QuoteMeta(topicPrefix), kgo.ConsumeRegex(), kgo.MetadataMaxAge(500*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	out := map[string]*kgo.Record{}
	for read := 0; read < n; {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read the relay's topics %s*: %d of the %d records it produced within %s", topicPrefix, read, n, timeout)
		}
		f.EachError(func(topic string, p int32, err error) {
			if !kerr.IsRetriable(err) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("fetch %s[%d]: %v", topic, p, err)
			}
		})
		f.EachRecord(func(r *kgo.Record) {
			read++
			id := headerID(header(r, "id"))
			if !want[id] {
				t.Errorf("the relay produced a record of no row of the test: %s key %q", r.Topic, r.Key)
				return
			}
			if _, dup := out[id]; dup {
				t.Errorf("the relay produced the row %s twice", id)
			}
			out[id] = r
		})
	}
	partitions := map[string]int{}
	for _, r := range out {
		if _, ok := partitions[r.Topic]; !ok {
			partitions[r.Topic] = len(e.endOffsets(e.client(), r.Topic))
		}
	}
	return out, partitions
}

// sameBytes tells null from empty: Kafka keeps the difference.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func quoteBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%q", b)
}

// showHeaders shows headers in their order, each value quoted (or null).
func showHeaders(hs []dbzHdr) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = fmt.Sprintf("%q: %s", h.Key, quoteBytes(h.Value))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// relayHeaders are a Kafka record's headers as the harness prints them.
func relayHeaders(r *kgo.Record) []dbzHdr {
	hs := make([]dbzHdr, len(r.Headers))
	for i, h := range r.Headers {
		hs[i] = dbzHdr{Key: h.Key, Value: h.Value}
	}
	return hs
}

// headerID is the event id an id header's value holds: the text, or the
// JSON string or {"schema":…,"payload":"…"} a JSON header converter
// writes of it.
func headerID(v string) string {
	var s string
	if json.Unmarshal([]byte(v), &s) == nil {
		return s
	}
	var wrapped struct{ Payload string }
	if json.Unmarshal([]byte(v), &wrapped) == nil && wrapped.Payload != "" {
		return wrapped.Payload
	}
	return v
}

// dropSlotWhenIdle drops slot once no walsender streams it any more (the
// harness's JVM may still be closing its connection).
func dropSlotWhenIdle(t *testing.T, e *env, slot string) {
	e.waitFor("the harness's slot is idle", 30*time.Second, func() bool {
		var active bool
		err := e.conn.QueryRow(context.Background(), "SELECT active FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&active)
		return err != nil || !active // gone, or idle
	})
	if _, err := e.conn.Exec(context.Background(), "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", slot); err != nil {
		t.Errorf("drop the harness's slot %s: %v", slot, err)
	}
}
