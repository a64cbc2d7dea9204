package main

import (
	"strings"
)

// What the Debezium PostgreSQL connector's and Kafka Connect's other
// properties are to the relay, for `config from-debezium`: each one that
// the router's mapping (configfromdebezium.go) does not read is listed on
// standard error with why, as classify says. The properties are those of
// Debezium 3.x's PostgresConnectorConfig, RelationalDatabaseConnectorConfig
// and CommonConnectorConfig, and Kafka Connect's ConnectorConfig and
// SourceConnectorConfig.

// propertyGroup is properties that are not needed by the relay for one
// reason: each name is a property, or a prefix when it ends with ".".
type propertyGroup struct {
	names []string
	why   string
}

// notNeededGroups are the properties that change nothing the relay does
// or the consumers read, by reason. classify reads them in order: a
// prefix of a later group does not take a name of an earlier one.
var notNeededGroups = []propertyGroup{
	{[]string{"name"}, "the connector's name in Kafka Connect"},
	{[]string{"tasks.max", "config.action.reload"}, "how Kafka Connect runs the connector (the PostgreSQL connector runs one task): " +
		"one relay streams its slot at a time, others standing by"},
	{[]string{"topic.creation."}, "how the connector creates its topics: they exist; the relay asks the broker to create a missing one " +
		"(run --kafka-create-topics), with the broker's defaults"},
	{[]string{"topic.prefix", "topic.naming.strategy", "topic.delimiter", "topic.cache.size", "topic.transaction", "topic.heartbeat.prefix"},
		"names the connector's own topics (change events, heartbeats, transactions); the router's topics are route.topic.replacement's (topic: in relay.yaml)"},
	{[]string{"schema.include.list", "schema.exclude.list", "table.exclude.list", "table.ignore.builtin", "column.include.list", "column.exclude.list"},
		"chooses what the connector captures: the relay reads the tables of tables: and the columns relay.yaml names"},
	{[]string{"message.key.columns"}, "the change events' key, which the router replaces with table.field.event.key's column"},
	{[]string{"tombstones.on.delete", "skipped.operations", "replica.identity.autoset.values"},
		"deletes and updates: the router sends the outbox table's inserts only, as the relay does"},
	{[]string{"snapshot.", "incremental.snapshot.", "read.only"},
		"the connector's snapshots: the relay sends the rows committed after its slot's position; for rows written before it, cdc-relay backfill"},
	{[]string{"signal.", "notification."}, "the connector's signals and notifications: cdc-relay backfill sends rows again, cdc-relay status says how the relay is doing"},
	{[]string{"heartbeat."}, "the relay confirms its slot's position on the server's keepalives, so an idle outbox holds no WAL, without a heartbeat table"},
	{[]string{"slot.drop.on.stop"}, "the relay keeps its slot when it stops"},
	{[]string{"slot.failover"}, "the relay makes its slot a failover slot itself, on PostgreSQL 17 and later"},
	{[]string{"slot.max.retries", "slot.retry.delay.ms"}, "the relay waits for its slot, and retries, by itself (cdc-relay run --help)"},
	{[]string{"slot.stream.params"}, "the relay sets pgoutput's options itself"},
	{[]string{"offset.mismatch.strategy", "slot.seek.to.known.offset.on.start"},
		"the relay keeps its position in its checkpoint table, and refuses a gap in its slot (cdc-relay recover repairs one)"},
	{[]string{"publication.autocreate.mode", "publish.via.partition.root"},
		"'cdc-relay migrate --config relay.yaml' creates the relay's publication, for the tables of tables:, or adds them to it"},
	{[]string{"include.schema.changes", "include.schema.comments"}, "schema change events, which the PostgreSQL connector does not write"},
	{[]string{"message.prefix.include.list", "message.prefix.exclude.list"},
		"logical decoding messages: the relay relays those of the prefixes of messages: in relay.yaml (docs/reference/config.md)"},
	{[]string{"decimal.handling.mode", "time.precision.mode", "interval.handling.mode", "hstore.handling.mode", "money.fraction.digits",
		"include.unknown.datatypes", "unavailable.value.placeholder", "schema.name.adjustment.mode", "field.name.adjustment.mode"},
		"how Debezium represents numeric, time, interval, hstore and other columns: the relay's JSON converters take text, uuid, integer, boolean, " +
			"json, jsonb and bytea key and value columns, as Debezium's defaults write them (check-config refuses another type)"},
	{[]string{"errors.", "event.processing.failure.handling.mode", "event.converting.failure.handling.mode"},
		"the relay skips no event: one it cannot deliver is parked in its status table (cdc-relay failed)"},
	{[]string{"exactly.once.support", "transaction.boundary", "transaction.boundary.interval.ms", "offsets.storage.topic", "offset.flush.interval.ms"},
		"Kafka Connect's offsets and exactly-once: the relay keeps its own position, and delivers exactly once with run --delivery exactly-once (docs/exactly-once.md)"},
	{[]string{"statistics.metrics.enabled", "custom.metric.tags", "advanced.metrics.enable", "openlineage.", "guardrail."},
		"the connector's metrics, lineage and guardrails: the relay's metrics are in docs/reference/metrics.md"},
	{[]string{"predicates"}, "names the transforms' predicates: each predicate is listed with the transform that uses it"},
	{[]string{"predicates."}, "a predicate that no transform uses: Kafka Connect applies it to nothing"},
	{[]string{"consumer.override.", "admin.override."}, "a setting of a client of the connector's own: the relay's have their own (cdc-relay run --help)"},
	{[]string{"poll.interval.ms", "max.batch.size", "max.queue.size", "max.queue.size.in.bytes", "query.fetch.size", "status.update.interval.ms",
		"lsn.flush.timeout.ms", "lsn.flush.timeout.action", "lsn.flush.mode", "xmin.fetch.interval.ms", "retriable.restart.connector.wait.ms",
		"streaming.delay.ms", "connection.validation.timeout.ms", "executor.shutdown.timeout.ms", "queue.provider.type", "schema.refresh.mode",
		"sourceinfo.struct.maker", "transaction.metadata.factory", "custom.sanitize.pattern", "create.slot.command.timeout",
		"log.position.check.enable", "offset.activity.monitor.interval.ms"},
		"the connector's own batching, timing and internals: the relay's are run's flags (cdc-relay run --help)"},
}

// inGroup reports whether key is one of names: equal to one, or under a
// prefix (a name ending with ".").
func inGroup(key string, names []string) bool {
	for _, n := range names {
		if key == n || strings.HasSuffix(n, ".") && strings.HasPrefix(key, n) {
			return true
		}
	}
	return false
}

// classify says what key, a property the mapping did not read, is to
// the relay, and why.
func (d *fromDebezium) classify(key string) (findingKind, string) {
	v := strings.ToLower(strings.TrimSpace(d.conn.values[key]))
	switch {
	case key == "binary.handling.mode" && v != "bytes":
		return cannotHonour, "Debezium writes a bytea column as " + v + " text; the relay writes its bytes (string), or their base64 (json), " +
			"as Debezium's default, bytes, does: a bytea key, value or header column's bytes differ"
	case key == "provide.transaction.metadata" && v == "true":
		return cannotHonour, "the connector writes each transaction's BEGIN and END to the topic <topic.prefix>.transaction, which the relay does not"
	case key == "flush.lsn.source" && v == "false" && d.takeover:
		return cannotHonour, "the connector never confirmed its position on its slot: taking the slot over, the relay sends again every event " +
			"the slot still holds; give the relay a slot of its own (--slot) instead"
	case key == "converters" || d.customConverterSetting(key):
		return cannotHonour, "custom converters change how Debezium represents the columns they match: the relay writes each column as its converter says (key_converter, value_converter); " +
			"check that they match no key, value or header column of the outbox tables"
	case key == "post.processors":
		return cannotHonour, "post processors change the change events before the router reads them: the relay applies none; check what they change"
	case strings.HasPrefix(key, "column.mask.") || strings.HasPrefix(key, "column.truncate."):
		return cannotHonour, "changes the values of the columns it matches: the relay writes each column as it is; check that it matches no column of the outbox tables"
	case key == "column.propagate.source.type" || key == "datatype.propagate.source.type":
		if d.writesSchemas {
			return cannotHonour, "adds the columns' PostgreSQL types to the schema a converter writes (__debezium.source.column.type): the relay's json-with-schema does not"
		}
		return notNeeded, "adds the columns' PostgreSQL types to the schema, which the connector's converters do not write"
	case key == "flush.lsn.source" && v == "false":
		return notNeeded, "the position of the connector's slot: the relay's own slot (--slot) keeps its own"
	case key == "binary.handling.mode", key == "provide.transaction.metadata", key == "flush.lsn.source":
		return notNeeded, "Debezium's default, which the relay matches"
	}
	for _, g := range notNeededGroups {
		if inGroup(key, g.names) {
			return notNeeded, g.why
		}
	}
	return toCheck, "not known to this command: check that it changes nothing the consumers read"
}

// customConverterSetting reports whether key is a setting of one of the
// custom converters that converters names (NAME.type, NAME.*).
func (d *fromDebezium) customConverterSetting(key string) bool {
	for _, name := range splitList(d.conn.values["converters"]) {
		if strings.HasPrefix(key, name+".") {
			return true
		}
	}
	return false
}
