// Package decoder turns pgoutput messages into outbox events.
//
// It keeps a cache of the Relation messages PostgreSQL sends ahead of the
// first change to each table, and decodes an INSERT on the mapped outbox
// table straight from pgoutput's tuple format into an [Event]: topic, key,
// value, headers and timestamp, as the [Mapping] says. Transaction
// boundaries (Begin, Commit) are reported so the caller can track them, and
// so is each Relation message for the outbox table ([Relation]: its OID,
// and whether its columns fit the mapping).
//
// It also decodes the transactional logical decoding messages of the
// prefixes a [MessageMapping] names (pg_logical_emit_message(true, …),
// sent by pgoutput with its messages option) into events, in their place
// among the transaction's rows: the content is an envelope (a JSON object
// of topic, key, id, headers and payload) or, payload-only, the value
// itself. The record's timestamp is the transaction's commit time, and its
// id, without one in the content, the message's WAL position. A message
// that cannot become a record is Poison with its payload as the value, or
// its whole content when the content could not be read.
// [NewSources] makes a decoder of tables and messages, or of messages only.
//
// A transactional message of a prefix no mapping names decodes to
// [KindUnmappedMessage] with its prefix, so that the caller can say it
// went nowhere; a non-transactional message of a mapped prefix to
// [KindNonTransactionalMessage]. Every other message (UPDATE, DELETE,
// TRUNCATE, inserts on other tables, non-transactional messages of other
// prefixes) decodes to [KindIgnored].
//
// A Decoder is not safe for concurrent use: it is fed by the single goroutine
// that reads the replication stream, in stream order.
package decoder
