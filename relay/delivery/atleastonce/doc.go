// Package atleastonce is the default delivery: each record is produced on
// its own with the idempotent producer and settled through the session's
// delivery.Ledger once Kafka acks it, or once it is parked in the status
// table when Kafka refuses it for good.
//
// It guarantees that a record refused with its batch is produced again
// alone, and that a key's records that go alone (and the events queued
// behind them) are produced or parked in stream order, each once no
// earlier record of its key is left in the producer; that a producer
// Kafka refuses ends the session (fatal.Error); and that nothing
// on the stream's goroutine waits for Kafka.
package atleastonce
