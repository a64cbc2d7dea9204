// Package decoder turns pgoutput messages into outbox events.
//
// It keeps a cache of the Relation messages PostgreSQL sends ahead of the
// first change to each table, and decodes an INSERT on the mapped outbox
// table straight from pgoutput's tuple format into an [Event]: topic, key,
// value, headers and timestamp, as the [Mapping] says. Transaction
// boundaries (Begin, Commit) are reported so the caller can track them, and
// so is each Relation message for the outbox table ([Relation]: its OID,
// and whether its columns fit the mapping); every other message (UPDATE,
// DELETE, TRUNCATE, inserts on other tables) decodes to [KindIgnored].
//
// Files: decoder.go has the public types and [New]; pgoutput.go reads the
// messages (and their rows and columns); resolve.go resolves a Relation
// against the mapping; event.go
// makes an insert's event and values.go parses its column values;
// mapping.go, topics.go and tags.go are the mapping, the topic cache and
// routing by tags; rows.go decodes rows read with SQL.
//
// A Decoder is not safe for concurrent use: it is fed by the single goroutine
// that reads the replication stream, in stream order.
package decoder
