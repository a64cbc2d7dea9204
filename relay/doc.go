// Package relay runs one relay: it checks that the database is prepared,
// takes leadership of the slot, and wires the pipeline
// replication → decoder → sink → checkpoint until it is told to stop.
//
// One concern per file:
//
//	relay.go     Run: the reconnect loop and one replication session's wiring,
//	             with the parts beside the stream (packages poller and
//	             retention)
//	config.go    Config and its defaults: one or more outbox tables, each
//	             with its mapping and, optionally, write-back
//	leader.go    leadership: the slot's advisory lock, standing by
//	resume.go    where a session resumes: the slot, created when missing,
//	             checked against the checkpoint table
//	pipeline.go  per event: decode, produce (one copy per matching route),
//	             ack, or park in the status table
//	tablewatch.go  beside the stream: each outbox table stays in the
//	             publication with its OID, or the session ends; the positions
//	             the watches vouch for bound what is confirmed
//	writeback.go beside the stream: each event's outcome, for the tables
//	             that write it back to their rows (package writeback)
//	columns.go   a Relation message whose columns no longer fit the mapping
//	progress.go  the periodic progress log line
//	errors.go    which errors end Run and which a reconnect cures
//
// Everything per event happens on the goroutine that reads the replication
// stream, except the producer's acknowledgements, which come back on
// franz-go's goroutines and touch the checkpoint tracker; records a broker
// refused with their batch, which one goroutine produces again alone, in
// order; and the status-table writes of undeliverable events, which run on
// goroutines of their own so that the stream never waits for them. The
// poller produces with a Kafka client of its own.
package relay
