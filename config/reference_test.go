package config

import (
	"fmt"
	goparser "go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/internal/goldentest"
	"github.com/cdc-relay/cdc-relay/progress"
	"github.com/cdc-relay/cdc-relay/relay"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/webhook"
)

// configReferencePath is the config file's reference, in the repository.
const configReferencePath = "docs/reference/config.md"

// configReferenceRegen is the command that rewrites it.
const configReferenceRegen = "go test ./config/ -run TestConfigReference -update"

// configSection is a mapping of the file, as the reference shows it: its
// path ("" for the top level, "tables[].write_back"), what it is, and its
// keys, those of its key table in their order.
type configSection struct {
	path, intro string
	keys        []string
}

// configSections are the file's mappings, each with its key table. A key
// whose value is a mapping or a list of them (keyDoc.section) has one.
func configSections() []configSection {
	return []configSection{
		{"", "The file's top level. A file needs `tables`, `messages` or both. A flag or its environment variable overrides each setting " +
			"of the file's top level and of `kafka` (for the commands that have the flag).", names(fileKeys)},
		{"kafka", "The Kafka producer's settings.", names(kafkaKeys)},
		{"tables[]", "An outbox table and its mapping, from row to Kafka record: one entry per table, all on the one slot and publication. " +
			"`migrate --config` adds each to the publication (the tables must exist). The relay deletes none of their rows " +
			"unless `run --retention` is given.", names(tableKeys)},
		{"tables[].routes[]", "A route of a table that routes by tags: the events whose tags (`tags_column`) match it go to its topic, " +
			"one copy per topic, however many routes of that topic they match.", names(routeKeys)},
		{"tables[].write_back", "Each event's outcome, written back into its row, for the dashboards and runbooks that read the table's own status column: " +
			"delivered, to be tried again, given up on. The role needs SELECT and UPDATE on these columns (`migrate --config relay.yaml --print-grants ROLE` prints the grants); " +
			"`check-config` tries each value on a row, in a transaction it rolls back.", names(writeBackKeys)},
		{"tables[].progress", "The team's own progress table (an event store's `outbox_topic_progress`, say), whose rows of the relay's publisher " +
			"the relay keeps true while it runs: the position up to which each topic is delivered, and the error of its first held event. " +
			"It must have the topic, publisher and position columns and a unique index on (topic, publisher); the other columns are written when the table has them.", append(names(progressKeys), "publishers")},
		{"messages[]", "A prefix of the transactional logical decoding messages to relay, that an application writes with " +
			"`pg_logical_emit_message(true, prefix, content)` (PostgreSQL 14 or later): one entry per prefix. In the status table, " +
			"the metrics and the logs, the source is named `message:` and its prefix.", names(messageKeys)},
		{"publishers", "The publishers beside Kafka's, by name, that tables and routes send their events to, at least once, " +
			"each with its own key order, parked events, pauses and poller. `check-config` checks them; `recover` and `backfill` publish to Kafka " +
			"only, and refuse a file that routes events to one.", []string{"NAME"}},
		{"publishers.NAME", "A publisher, named by a table's or a route's `publishers`: its kind, `webhook`.", names(publisherKeys)},
		{"publishers.NAME.webhook", "An HTTP receiver, sent the events as Standard Webhooks requests: each signed with the secret " +
			"(`webhook-id`, `webhook-timestamp`, `webhook-signature`), one event as its payload or a batch as a JSON array. " +
			"`check-config` reads the secret and the TLS files and resolves the URL's host; it sends nothing.", names(webhookKeys)},
		{"publishers.NAME.webhook.tls", "The receiver's TLS, for an `https` URL.", names(webhookTLSKeys)},
	}
}

// keyDoc documents a key: the type of its value, its default (""
// when it has none) and what it does. section marks a key whose value
// is a mapping or a list of them, which has a section of its own.
type keyDoc struct {
	typ, def, doc string
	section       bool
}

// configKeyDocs documents every key of every section, by its path:
// "slot", "kafka.brokers", "tables[].write_back.pending". A key added to
// a key table needs its line here (TestConfigReference says which).
func configKeyDocs() map[string]keyDoc {
	def := relay.DefaultConfig()
	column := func(doc string) keyDoc { return keyDoc{typ: "column", doc: doc} }
	progressColumn := func(def, doc string) keyDoc { return keyDoc{typ: "column", def: code(def), doc: doc} }
	return map[string]keyDoc{
		"postgres_url": {typ: "string", doc: "The PostgreSQL connection string, such as `postgres://relay@db:5432/app`; required, here or by `--postgres-url`, " +
			"`--postgres-url-file` or `CDC_RELAY_POSTGRES_URL`, which override it. Keep the password out of the file: set it in `CDC_RELAY_POSTGRES_URL`, " +
			"or use `PGPASSWORD` or `~/.pgpass`."},
		"kafka": {typ: "mapping", section: true, doc: "The Kafka brokers and the producer's settings."},
		"slot": {typ: "string", def: code(def.Slot), doc: "The logical replication slot's name: lower-case letters, digits and underscores. " +
			"One relay streams it at a time, the others wait. `--slot`."},
		"publication": {typ: "string", def: code(def.Publication), doc: "The publication of the tables, which the slot streams; `migrate --config` creates it, " +
			"or adds the tables to it. `--publication`."},
		"tables":   {typ: "list of mappings", section: true, doc: "The outbox tables to relay, each with its mapping; may be left out, or empty, when `messages` lists a prefix."},
		"messages": {typ: "list of mappings", section: true, doc: "The prefixes of the logical decoding messages to relay, beside the tables or instead of them."},
		"status_table": {typ: "table (`schema.table`, or `table` in public)", def: code(def.StatusSchema + "." + def.StatusTable),
			doc: "The relay's status table, which keeps a copy of each event the relay could not deliver yet. `--status-table`."},
		"checkpoint_table": {typ: "table (`schema.table`, or `table` in public)", def: code(def.CheckpointSchema + "." + def.CheckpointTable),
			doc: "The relay's checkpoint table: the confirmed position, saved so that a lost slot is noticed. `--checkpoint-table`."},
		"allowed_topics": {typ: "Go regular expression", def: "every topic that does not start with `_` or `connect-`",
			doc: "An expression that an event's whole topic must match, or the event is parked DEAD; `.*` allows every topic. " +
				"It applies to every table, and to each entry of `messages` that sets no `allowed_topics` of its own. `--allowed-topics`."},
		"ordering": {typ: "`key`, `topic` or `none`", def: code(def.Ordering),
			doc: "What a parked event holds back: `key`, the later events of its topic and key (a key's events in commit order); " +
				"`topic`, every later event of its topic, with a key or without (for topics of one partition read as one log); " +
				"`none`, nothing (later events overtake it). A table's `ordering` overrides it for its topics. `--ordering`."},

		"kafka.brokers": {typ: "list of `host:port`", doc: "The brokers to bootstrap from, such as `[\"kafka-1:9092\", \"kafka-2:9092\"]`; required, here or by `--kafka-brokers`."},
		"kafka.compression": {typ: strings.Join(codes(sink.Compressions()), ", "), def: code("none"),
			doc: "The codec of every batch sent to Kafka; consumers decompress it themselves. `--kafka-compression`."},
		"kafka.batch_max_bytes": {typ: fmt.Sprintf("integer, %d to %d", sink.MinBatchMaxBytes, sink.MaxBatchMaxBytes), def: code(fmt.Sprint(sink.DefaultBatchMaxBytes)),
			doc: "The most bytes of records, before compression, in one batch to one partition: no more than the brokers' `message.max.bytes` " +
				"(or the topic's `max.message.bytes`). A record larger than this is parked in the status table. `--kafka-batch-max-bytes`."},

		"tables[].table": {typ: "table (`schema.table`, or `table` in public)", def: "required",
			doc: "The outbox table. Each table is listed once; every other problem of the entry names it."},
		"tables[].id": column("The column sent as the header `id`, the consumers' deduplication key. Needed by `write_back`, `adopt` and `progress`, " +
			"which find the rows by it."),
		"tables[].key":   column("The column that is the record key; without it, records have no key and Kafka spreads them over the topic's partitions."),
		"tables[].value": {typ: "column", def: "required", doc: "The column that is the record value: its bytes as PostgreSQL renders them."},
		"tables[].topic": {typ: "topic, or template", doc: "The record's topic: a name, or a template in which each `{column}` is that column's value " +
			"(`notifications.{template}`). Used when `topic_column` is absent or NULL. A table needs `topic`, `topic_column` or `routes`; " +
			"`routes` exclude it."},
		"tables[].topic_column": column("A column that, when not NULL, names the record's topic, instead of `topic`. `routes` exclude it."),
		"tables[].headers": {typ: "mapping of header name to column", doc: "Headers copied from columns, in the file's order: " +
			"`{event_type: type, recipient: recipient_id}`. The header `id` is the `id` column's."},
		"tables[].headers_column": column("A JSON or JSONB object column whose keys and values become headers."),
		"tables[].timestamp": column("The column that is the record timestamp: `timestamptz`, `timestamp` or `bigint` (the time since the epoch, " +
			"in `timestamp_unit`); without it, the producer sets the time. `recover`, `--on-slot-loss recover` and `--retention` read it."),
		"tables[].timestamp_unit": {typ: "`s`, `ms` or `us`", def: "judged by each value's magnitude",
			doc: "The unit of a `bigint` timestamp column: epoch seconds, milliseconds or microseconds. `recover` refuses a column it cannot judge."},
		"tables[].time_zone": {typ: "IANA time zone", def: "UTC", doc: "The zone whose wall time the table's `timestamp` (without time zone) columns hold, " +
			"such as `America/New_York`: the timestamp column is read in it, and `write_back` writes such columns in it."},
		"tables[].envelope": {typ: "mapping of field name to column", doc: "Columns placed beside the payload in the record's value, " +
			"which becomes the JSON object `{\"payload\": …, \"eventType\": …}`, as Debezium's outbox event router makes it with " +
			"`table.fields.additional.placement=type:envelope:eventType`: `{eventType: type}`. Needs `value_converter: json`, or " +
			"`json-with-schema` with `envelope_schema_name`."},
		"tables[].envelope_schema_name": {typ: "string (a template of the row's columns)", doc: "The name of the envelope's Connect schema " +
			"under `value_converter: json-with-schema`, as the router names it: `<topic.prefix>.<schema>.<table>.{<route.by.field>}.Value`, " +
			"such as `\"server1.public.outboxevent.{aggregatetype}.Value\"` (`cdc-relay config from-debezium` writes it). The router names " +
			"every envelope of one payload schema after the first row it routed since the connector started; the relay names each after its own " +
			"row, the same when a table's rows route one way. Needed with an envelope under that converter, refused otherwise; not with " +
			"`expand_json_payload` yet."},
		"tables[].tombstone_on_empty_payload": {typ: "boolean", def: "false", doc: "A row whose payload is NULL, or text of blanks only, " +
			"becomes a record with a null value (a tombstone, which a compacted topic reads as a delete), as the router's " +
			"`route.tombstone.on.empty.payload` does. Without it the record's value is what the converter writes for NULL."},
		"tables[].tracing_span_context": column("The column of the trace context of the transaction that wrote the row: a W3C " +
			"`traceparent`, or Java properties text with `traceparent` and `tracestate` entries (the router's `tracing.span.context.field`, " +
			"such as `tracingspancontext`). Its `traceparent` and `tracestate` become headers, so that consumers' OpenTelemetry " +
			"instrumentation continues the trace; a row without a valid `traceparent` gets neither."),
		"tables[].partition": column("The integer column (`smallint`, `integer` or `bigint`) whose value is the partition of the row's record, " +
			"as Debezium's outbox event router places it with a `partition` placement in `table.fields.additional.placement` " +
			"(`part:partition`). A NULL leaves the record to its key's hash. A row whose value is beyond its topic's partitions " +
			"is parked with the reason: add partitions to the topic, then retry it (`cdc-relay failed retry`). A negative one is parked `DEAD` " +
			"and never sent by its key's hash: correct the row and reset it, or skip it."),
		"tables[].expand_json_payload": {typ: "boolean", def: "false", doc: "The payload's JSON written as the structure it holds, as Debezium's outbox event router " +
			"writes it with `table.expand.json.payload=true` and `JsonConverter`: `{\"id\":123}` rather than the string `\"{\\\"id\\\": 123}\"`, " +
			"and with `json-with-schema` the Connect schema the router infers from it (a struct named after the `value` column, `int32`, `int64` " +
			"or `double` numbers, nulls and empty arrays left out). A `text`, `varchar`, `char`, `json` or `jsonb` payload the router would not expand " +
			"(not starting with `{` or `[`, not JSON) goes as the JSON string it is; one it expands but cannot make a record of (a number beyond 64 bits, " +
			"a top-level array, an array whose elements differ in type), on which the connector's task stops, is parked. " +
			"Needs `value_converter: json` or `json-with-schema`; with `envelope`, the structure is the envelope's payload. See docs/switching-from-debezium.md."},
		"tables[].json_payload_null_behavior": {typ: "`ignore` or `optional_bytes`", def: "`ignore`", doc: "What an expanded payload's JSON `null` becomes, " +
			"as the router's `table.json.payload.null.behavior`: `ignore` leaves the member out; `optional_bytes` keeps it, `null`, with an optional `bytes` schema. " +
			"Only with `expand_json_payload`."},
		"tables[].json_payload_empty_array_behavior": {typ: "`ignore` or `optional_string`", def: "`ignore`", doc: "What an expanded payload's empty array becomes, " +
			"as the router's `table.json.payload.empty.array.behavior` (Debezium 3.7 and later): `ignore` leaves the member out; `optional_string` keeps it, " +
			"`[]`, as an optional array of optional strings. Only with `expand_json_payload`."},
		"tables[].key_converter": {typ: "`raw`, `string`, `json` or `json-with-schema`", def: "`raw`",
			doc: "How the `key` column's value becomes the record key's bytes. `raw`: the column's text as PostgreSQL renders it, a `bytea` column's bytes. " +
				"The others write what the Kafka Connect converter behind Debezium's outbox event router writes (`key.converter`): " +
				"`string` is `StringConverter` (as `raw`, but a boolean is `true` or `false`); " +
				"`json` a JSON value, text as a JSON string (`JsonConverter` with `key.converter.schemas.enable=false`); " +
				"`json-with-schema` the `{\"schema\":…,\"payload\":…}` wrapper with the schema Debezium gives the column (`schemas.enable=true`; not optional when the column is `NOT NULL`). " +
				"They write text, varchar, char, uuid, integer, boolean, json, jsonb and bytea columns (`string` no bytea: use `raw`, as `ByteArrayConverter`); " +
				"a NULL is `null`, or no bytes with `string`. See docs/switching-from-debezium.md."},
		"tables[].value_converter": {typ: "`raw`, `string`, `json` or `json-with-schema`", def: "`raw`",
			doc: "How the `value` column's value becomes the record value's bytes, as `key_converter` says for the key (`value.converter`): " +
				"with `json`, a `jsonb` payload is a JSON string holding its text, as Debezium's consumers decode it twice."},
		"tables[].header_converter": {typ: "`raw`, `string`, `json` or `json-with-schema`", def: "`raw`",
			doc: "How the `id` header and the `headers` columns' values become header bytes, as Kafka Connect's `header.converter` writes them behind " +
				"Debezium's router: `string` is `SimpleHeaderConverter` (Connect's default; as `raw`, but a boolean is `true` or `false`), " +
				"`json` and `json-with-schema` `JsonConverter` (Debezium Server's JSON header format), with the column's schema as `key_converter` says. " +
				"A bytea header column takes `raw` only; the `headers_column`'s members are not converted."},
		"tables[].tags_column": column("The column of tags that `routes` match: a `text[]` (or `varchar[]`) of `\"key=value\"` or `\"key\"` tags, " +
			"or a JSONB array of such strings, or a JSONB object (each key a tag). Only with `routes`."),
		"tables[].routes": {typ: "list of mappings", section: true, doc: "Instead of `topic`: an event goes to the topic of every route its tags match, one copy per topic; " +
			"an event that matches none goes nowhere (counted in `cdc_relay_events_unrouted_total`). Needs `tags_column`; excludes `topic`, `topic_column` and `write_back`."},
		"tables[].write_back": {typ: "mapping", section: true, doc: "Write each event's outcome back into its row. Needs `id`; not with `routes`."},
		"tables[].adopt": {typ: "SQL predicate, or mapping of publisher to SQL predicate", doc: "Switching over from a poller that kept its position: the rows it selects (`position > 4000`) " +
			"as of the new slot's snapshot are sent once, by the poller, when the relay creates its slot (`migrate --config`, or the first `run`), " +
			"to every publisher of the table's events. A mapping gives each publisher its own (`{kafka: position > 4000, partner: position > 3500}`): " +
			"it names every publisher of the events, `false` adopting nothing for one. " +
			"Needs `id`. Ignored once the slot exists (`run` warns, `migrate` refuses it): remove it after the switch-over."},
		"tables[].progress": {typ: "mapping", section: true, doc: "The team's own progress table, kept true while the relay runs. Needs `id`, of an integer type."},
		"tables[].ordering": {typ: "`key` or `topic`", def: "the top level's `ordering`",
			doc: "What a parked event of this table holds back, overriding the top level's `ordering` for its topics (`none` is the top level's only). " +
				"`topic` needs the table's topics known at start: `routes`, or one fixed `topic`."},

		"tables[].routes[].topic": {typ: "topic", def: "required", doc: "The topic the matching events go to: a name, not a template."},
		"tables[].routes[].required_tags": {typ: "list of tags", doc: "The route matches an event that has every one of these tags. " +
			"A tag `key` matches `key` with any value, `key=value` only that value. A route needs `required_tags`, `any_of_tags` or both (then both must match)."},
		"tables[].routes[].any_of_tags": {typ: "list of tags", doc: "The route matches an event that has at least one of these tags."},
		"tables[].routes[].adopt": {typ: "SQL predicate, or mapping of publisher to SQL predicate", def: "the table's `adopt`", doc: "The route's own `adopt`: when the slot is created, " +
			"the rows it selects that match the route's tags are sent to the route's topic (a poller that kept its position per topic), for every publisher of the topic. " +
			"A mapping gives each publisher its own, as the table's does. Needs the table's `id`."},

		"tables[].write_back.status_column": {typ: "column (`text`, `varchar`, `char` or an enum)", def: "required", doc: "The column that takes each event's status value."},
		"tables[].write_back.delivered":     {typ: "string", def: "required", doc: "The status value once Kafka acknowledged the event."},
		"tables[].write_back.failed": {typ: "string", def: "required, unless `retrying` and `dead`",
			doc: "The status value of a parked event: while the relay will try it again, unless `retrying` is set, and once it is given up on, unless `dead` is set."},
		"tables[].write_back.retrying": {typ: "string", def: "`failed`'s value", doc: "The status value while the relay will try a refused event again. " +
			"It may be one of `pending` (a poller that kept a row `PENDING` with its retry count); the relay's own writes never fire the reset trigger."},
		"tables[].write_back.dead": {typ: "string", def: "`failed`'s value", doc: "The status value of an event given up on (`DEAD` in the status table: " +
			"its attempts ran out, or `failed skip` or `failed purge`)."},
		"tables[].write_back.pending": {typ: "list of strings", doc: "The status values that mean \"not delivered yet\" (`[PENDING, PROCESSING]`): " +
			"a row set back to one is sent again, once (by the trigger `cdc_relay_reset`, which `migrate --config` creates), and the rows in one " +
			"when the slot is created are adopted and sent once."},
		"tables[].write_back.delivered_at_column": {typ: "column (`timestamptz` or `timestamp`)", doc: "Takes `now()` with `delivered`."},
		"tables[].write_back.error_column":        {typ: "column (`text`, `varchar`, `char` or an enum)", doc: "Takes why the event was parked or given up on; cleared once it is delivered, unless `keep_error`."},
		"tables[].write_back.attempts_column": {typ: "column (`smallint`, `integer`, `bigint` or `numeric`)",
			doc: "Takes the failed delivery attempts so far, as a `retry_count` column counts them."},
		"tables[].write_back.next_attempt_column": {typ: "column (`timestamptz` or `timestamp`)", doc: "Takes when the poller tries a parked event next."},
		"tables[].write_back.last_attempt_column": {typ: "column (`timestamptz` or `timestamp`)",
			doc: "Takes `now()` with each delivery attempt's outcome: delivered, refused, given up on."},
		"tables[].write_back.keep_error": {typ: "boolean", def: code("false"), doc: "Keep the error column's last reason once the event is delivered."},

		"tables[].progress.table": {typ: "table (`schema.table`, or `table` in public)", def: "required", doc: "The team's progress table."},
		"tables[].progress.publisher": {typ: "string", def: "required unless `publishers`", doc: "The publisher column's value in the relay's rows (`KafkaPublisher`): " +
			"the rows of other publishers, and of topics the relay does not send to, are left alone. Leave it out when Kafka's rows are not kept in the table."},
		"tables[].progress.publishers": {typ: "mapping of publisher to string", def: "none", doc: "The publisher column's value in the rows of each webhook publisher " +
			"the table sends to (`{partner: WebhookPublisher}`): each gets its rows kept as Kafka's are, the topics of the routes that send to it, " +
			"its own position and errors, and its own pause (`status_column`)."},
		"tables[].progress.topic_column":     progressColumn(progress.DefaultTopicColumn, "The topic's column."),
		"tables[].progress.publisher_column": progressColumn(progress.DefaultPublisherColumn, "The publisher's column."),
		"tables[].progress.position_column": progressColumn(progress.DefaultPositionColumn, "Takes the highest id up to which every event of the topic was delivered; "+
			"an integer column at least as wide as the id. It only grows."),
		"tables[].progress.status_column": progressColumn(progress.DefaultStatusColumn, "The column the team pauses a topic with, by setting one of `paused`; "+
			"the relay never writes it."),
		"tables[].progress.paused": {typ: "list of strings", def: code("[" + strings.Join(progress.DefaultPaused, ", ") + "]"),
			doc: "The values of `status_column` that pause the topic for the relay, as `cdc-relay pause --topic` does."},
		"tables[].progress.error_count_column": progressColumn(progress.DefaultErrorCountColumn, "Takes the failed attempts of the topic's first held event that fails; "+
			"cleared when the position moves."),
		"tables[].progress.last_error_column":   progressColumn(progress.DefaultLastErrorColumn, "Takes that event's last error; cleared when the position moves."),
		"tables[].progress.published_at_column": progressColumn(progress.DefaultPublishedAtColumn, "Takes when the position last moved."),
		"tables[].progress.updated_at_column":   progressColumn(progress.DefaultUpdatedAtColumn, "Takes when the relay last changed the row."),

		"messages[].prefix": {typ: "string", def: "required", doc: "The prefix the application writes the messages with, matched exactly. A transactional message of a prefix " +
			"no entry lists is not relayed: it is warned of and counted in `cdc_relay_messages_ignored_total`."},
		"messages[].topic": {typ: "topic", doc: "The topic of an envelope that names none; with `payload_only`, the topic of every message (required then)."},
		"messages[].payload_only": {typ: "boolean", def: code("false"), doc: "The content is the record value, whole. Without it, the content is " +
			"a JSON envelope of `topic`, `key`, `id`, `headers` and `payload`; a message that does not fit is parked DEAD."},
		"messages[].key_field": {typ: "string", doc: "With `payload_only`: the content's member that is the record key."},
		"messages[].id_field":  {typ: "string", def: "the message's WAL position", doc: "With `payload_only`: the content's member that is the header `id`."},
		"messages[].allowed_topics": {typ: "Go regular expression", def: "the top level's `allowed_topics`",
			doc: "The topics this prefix's messages may go to, instead of the top level's `allowed_topics`."},

		"publishers": {typ: "mapping of name to publisher", section: true, doc: "Publishers beside Kafka's, which tables and routes name in their " +
			"`publishers` (`[kafka, partner]`); `kafka`, the Kafka producer, is never defined here. A publisher that no table or route names is warned of. " +
			"Not delivered yet by this version."},
		"publishers.NAME": {typ: "mapping", section: true, doc: "A publisher, by its name: lower-case letters, digits, `_` and `-`, starting with a letter, " +
			"not `kafka`. It has one kind: `webhook`."},
		"publishers.NAME.webhook": {typ: "mapping", section: true, doc: "An HTTP receiver of Standard Webhooks requests. Not delivered yet by this version: " +
			"`run`, `recover` and `backfill` refuse a file that routes events to one, and `--delivery exactly-once` always will (webhooks are at least once)."},
		"publishers.NAME.webhook.url": {typ: "`http` or `https` URL", def: "required", doc: "The receiver's absolute URL. Its query string and user information " +
			"are never shown in a log or an error."},
		"publishers.NAME.webhook.method": {typ: "`POST`, `PUT` or `PATCH`", def: code("POST"), doc: "The requests' method."},
		"publishers.NAME.webhook.headers": {typ: "mapping of header name to value", doc: "Static headers sent with every request, such as " +
			"`{Authorization: Bearer …}`; never `webhook-id`, `webhook-timestamp`, `webhook-signature`, `content-type` or HTTP's own. Their values are never shown."},
		"publishers.NAME.webhook.timeout": {typ: "duration", def: code("10s"), doc: "The longest a request may take, from connecting to reading the answer; at most `5m`."},
		"publishers.NAME.webhook.tls":     {typ: "mapping", section: true, doc: "The receiver's TLS: its CA, a client certificate, the name its certificate is checked for."},
		"publishers.NAME.webhook.secret_file": {typ: "file", def: "required, unless `secret_env`", doc: "The file holding the signing secret, `whsec_` and the base64 " +
			"of 24 to 64 random bytes (`echo \"whsec_$(head -c 32 /dev/urandom \\| base64)\"` makes one); keep it readable by the relay only."},
		"publishers.NAME.webhook.secret_env": {typ: "environment variable name", doc: "The environment variable holding the signing secret, instead of `secret_file`. " +
			"The secret itself is never in the file."},
		"publishers.NAME.webhook.batch_size": {typ: fmt.Sprintf("integer, 0 to %d", webhook.MaxBatchSize), def: code("0"), doc: "0 or 1 sends each event alone, " +
			"as its payload; N sends a JSON array of up to N events, each `{id, timestamp, content_type, headers, payload}`."},
		"publishers.NAME.webhook.tls.ca_file": {typ: "file", def: "the system's roots", doc: "The CA certificates (PEM) that sign the receiver's."},
		"publishers.NAME.webhook.tls.cert_file": {typ: "file", doc: "The client certificate (PEM, followed by its intermediates), for a receiver that requires one; " +
			"needs `key_file`."},
		"publishers.NAME.webhook.tls.key_file":    {typ: "file", doc: "The private key (PEM) of `cert_file`; keep it readable by the relay only."},
		"publishers.NAME.webhook.tls.server_name": {typ: "string", def: "the URL's host", doc: "The name the receiver's certificate must be valid for."},

		"tables[].publishers": {typ: "list of publisher names", def: code("[kafka]"), doc: "Where the table's events go: `kafka`, publishers of " +
			"`publishers`, or both, each once (an event goes to every one). With `routes`, the publishers of each route that names none of its own. " +
			"A table that writes back (`write_back`) says delivered once every publisher's copy is (see docs/webhooks.md); after adding a publisher, " +
			"run `cdc-relay migrate` so that a reset sends the event to each."},
		"tables[].routes[].publishers": {typ: "list of publisher names", def: "the table's `publishers`", doc: "Where the route's events go, " +
			"instead of the table's `publishers`."},
		"messages[].publishers": {typ: "list of publisher names", doc: "Refused: a message source goes to Kafka only in this version."},
	}
}

// code is s as a code span.
func code(s string) string { return "`" + s + "`" }

// codes is each of ss as a code span.
func codes(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = code(s)
	}
	return out
}

// keyPath is the path of key in the section at path: "slot",
// "tables[].write_back.pending".
func keyPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// sectionTitle is the heading of the section at path.
func sectionTitle(path string) string {
	if path == "" {
		return "Top level"
	}
	return path
}

// TestConfigReference fails when docs/reference/config.md is not what
// the key tables and configKeyDocs make of it, or when a key has no
// documentation; -update rewrites it.
func TestConfigReference(t *testing.T) {
	goldentest.Check(t, "..", configReferencePath, []byte(configReference(t)), configReferenceRegen)
}

// configReference generates docs/reference/config.md.
func configReference(t testing.TB) string {
	t.Helper()
	sections := configSections()
	docs := configKeyDocs()
	checkKeyDocs(t, sections, docs)

	var b strings.Builder
	fmt.Fprintf(&b, "<!-- generated by `%s`; do not edit -->\n\n", configReferenceRegen)
	b.WriteString("# Configuration file reference\n\n")
	b.WriteString("Every key of the YAML file that `--config relay.yaml` reads (`run`, `migrate`, `recover`, `backfill`, `status`, `failed`, " +
		"`pause`, `resume`; `check-config` checks it against the database). A key left out, or set to `null`, is unset: it takes the default " +
		"shown, and a key without one is not used. A flag or its environment variable overrides a top-level setting " +
		"([cli.md](cli.md)); a table's mapping is the file's alone, and a mapping flag beside `--config` is refused. " +
		"An unknown key, or a value of the wrong kind, is reported with its line and the key it may misspell: " +
		"`relay.yaml:7: unknown key \"tabel\" in tables[0] (did you mean \"table\"?)`.\n\n")
	b.WriteString("A file:\n\n")
	b.WriteString(goldentest.Fence("yaml", docExample(t)))

	for _, s := range sections {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", sectionTitle(s.path), s.intro)
		b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
		for _, key := range s.keys {
			d := docs[keyPath(s.path, key)]
			name := code(key)
			if d.section {
				name = fmt.Sprintf("[%s](#%s)", name, goldentest.Anchor(sectionOf(s.path, key, d)))
			}
			def := d.def
			if def == "" {
				def = "—"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, d.typ, def, d.doc)
		}
	}
	return b.String()
}

// sectionOf is the path of the section of key, in the section at path:
// a list's with "[]".
func sectionOf(path, key string, d keyDoc) string {
	p := keyPath(path, key)
	if strings.HasPrefix(d.typ, "list") {
		p += "[]"
	}
	return p
}

// checkKeyDocs fails t when a key of sections has no doc, a doc names no
// key, or a key whose value is a mapping has no section (or the other
// way round), each error saying what to add or remove.
func checkKeyDocs(t testing.TB, sections []configSection, docs map[string]keyDoc) {
	t.Helper()
	known := map[string]bool{}
	var paths []string
	for _, s := range sections {
		paths = append(paths, s.path)
		for _, key := range s.keys {
			p := keyPath(s.path, key)
			known[p] = true
			if _, ok := docs[p]; !ok {
				t.Errorf("config key %s has no documentation: add it to configKeyDocs in config/reference_test.go, then run `%s`", p, configReferenceRegen)
			}
		}
	}
	for p, d := range docs {
		if !known[p] {
			t.Errorf("configKeyDocs documents %s, which is no key of the file (configSections): remove it, or add its key table to configSections", p)
		}
		if d.typ == "" || d.doc == "" {
			t.Errorf("config key %s: its documentation needs a type and a description", p)
		}
		path, key := "", p
		if i := strings.LastIndex(p, "."); i >= 0 {
			path, key = p[:i], p[i+1:]
		}
		if d.section && !slices.Contains(paths, sectionOf(path, key, d)) {
			t.Errorf("config key %s holds a mapping, and configSections has no section %s: add one, with its key table", p, sectionOf(path, key, d))
		}
	}
	for _, p := range paths[1:] {
		parent, key := "", strings.TrimSuffix(p, "[]")
		if i := strings.LastIndex(key, "."); i >= 0 {
			parent, key = key[:i], key[i+1:]
		}
		if d := docs[keyPath(parent, key)]; !d.section {
			t.Errorf("configSections has a section %s, and configKeyDocs does not mark the key %s as one (section: true)", p, keyPath(parent, key))
		}
	}
}

// docExample returns the example of the package's doc (doc.go), the
// indented lines of its comment, after checking that Parse takes it.
func docExample(t testing.TB) string {
	t.Helper()
	f, err := goparser.ParseFile(token.NewFileSet(), "doc.go", nil, goparser.ParseComments|goparser.PackageClauseOnly)
	if err != nil || f.Doc == nil {
		t.Fatalf("reading the package doc of doc.go: %v", err)
	}
	var lines []string
	for _, line := range strings.Split(f.Doc.Text(), "\n") {
		if rest, ok := strings.CutPrefix(line, "\t"); ok {
			lines = append(lines, rest)
		} else if len(lines) > 0 {
			break
		}
	}
	example := strings.Join(lines, "\n") + "\n"
	if len(lines) == 0 {
		t.Fatal("the package doc of doc.go has no example (indented lines) for the reference")
	}
	if _, err := Parse("doc.go's example", []byte(example)); err != nil {
		t.Fatalf("the package doc's example, which the reference shows, does not parse: fix it in doc.go\n%v", err)
	}
	return example
}
