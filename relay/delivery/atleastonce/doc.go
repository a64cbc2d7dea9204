// Package atleastonce is the default delivery: each record is produced on
// its own with the idempotent producer and settled through the session's
// delivery.Ledger once Kafka acks it, or once it is parked in the status
// table when Kafka refuses it for good.
//
// It guarantees that a record Kafka would refuse, as the producer knows
// before producing it (too large), is parked without being produced, its
// key held at once; that a record refused with its batch is produced
// again beside the stream, in halves of its round down to alone if it is
// refused again, so that it is parked only for its own fault; that a
// key's records that go again (and the events queued behind them) are
// produced or parked in stream order, together into the key's partition,
// once no earlier record of its key is left in the producer, and that one
// refused for good there is parked ahead of the key's later records; that a producer Kafka refuses ends the session
// (fatal.Error); and that nothing on the stream's goroutine waits for
// Kafka.
package atleastonce
