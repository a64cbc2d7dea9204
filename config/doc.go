// Package config reads the relay's YAML config file: the database, the
// Kafka brokers, the slot and the publication, the outbox tables to relay
// with the mapping of each, and the logical decoding messages to relay:
//
//	postgres_url: postgres://relay@db/app
//	kafka: {brokers: ["kafka:9092"]}
//	slot: cdc_relay
//	publication: cdc_relay
//	tables:
//	  - table: public.notification_outbox
//	    id: id
//	    key: deal_id
//	    value: payload
//	    topic: "notifications.{template}"
//	    headers: {template: template, recipient_id: recipient_id}
//	    timestamp: created_at
//	    write_back: {status_column: status, delivered: DELIVERED, failed: FAILED}
//	  - table: public.events
//	    id: position
//	    value: data
//	    tags_column: tags
//	    routes:
//	      - {topic: wallet-events, required_tags: [wallet_id]}
//	      - topic: payment-events
//	        any_of_tags: [payment_id]
//	        adopt: position > 550  # this route's own: adopted for its topic
//	    adopt: position > 4000   # adopted when the relay creates its slot
//	    progress: {table: outbox_topic_progress, publisher: KafkaPublisher}  # kept true
//	    ordering: topic          # key or topic: this table's topics' order
//	messages:                    # pg_logical_emit_message, beside or instead of tables
//	  - prefix: outbox           # an envelope: topic, key, id, headers, payload
//	    topic: orders.events     # for an envelope that names no topic
//	  - prefix: audit
//	    payload_only: true       # the content is the record value
//	    topic: audit.events
//	    key_field: account_id
//
// A file lists tables, messages or both; with messages, tables may be
// absent or empty. The top-level allowed_topics applies to every table
// and to every message source that sets no allowed_topics of its own. A
// table's ordering (key or topic) overrides the top-level ordering for
// its topics; topic needs the table's topics known (routes, or one fixed
// topic), and none is the top level's only.
//
// The top-level publishers names publishers beside Kafka's, each a
// webhook ([Publisher]); a table, or one of its routes, lists where its
// events go in publishers: [kafka, partner], kafka (the Kafka producer,
// never defined) alone when it lists none. [File.PublisherUses] says
// where each is named. The relay does not deliver to webhooks yet: the
// command refuses a file that routes events to one.
//
// [Load] refuses a file over 1 MiB before it reads it (a config file is a
// few KB). [Parse] checks everything that can be checked without the
// database and reports every mistake with the file name and line, as
// "relay.yaml:7: unknown key "tabel" in tables[0] (did you mean "table"?)".
// Columns, types and the publication are checked against the database by
// `cdc-relay check-config`.
//
// Each entry of tables is parsed into an [outbox.Table], the one table
// type of the relay, which takes it as it is. Only the command imports
// this package: no engine links the YAML parser.
//
// The package only reads: it applies no defaults (an absent key is "" or
// nil) and knows nothing of flags; the caller lets flags and environment
// variables override the top-level settings, and fills in its defaults.
package config
