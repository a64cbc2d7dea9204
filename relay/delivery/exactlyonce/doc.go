// Package exactlyonce is the exactly-once delivery: a session's records go
// into Kafka transactions, each holding one or more whole PostgreSQL
// transactions and a record of the slot's position in the checkpoint
// topic, committed by Batcher.Run beside the stream.
//
// It guarantees that a PostgreSQL transaction stays held in the tracker
// until the Kafka transaction that holds it committed, so PostgreSQL is
// never told a position Kafka has not committed; that a transaction with a
// record Kafka did not take never commits (the session ends with ErrRedo,
// or a fatal.Error, and the next one produces the same
// transactions again, leaving out what State learnt was parked); and that
// nothing on the stream's goroutine waits for Kafka.
//
// A session starts with Start: its transactional producer fences any
// earlier one of the transactional id, and the checkpoint topic's record
// of the slot is read, refused when another database wrote it;
// OwnPosition and OnServerTimeline decide whether its position is this
// stream's and this server's.
package exactlyonce
