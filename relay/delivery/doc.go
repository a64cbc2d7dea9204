// Package delivery is the seam between a session's pipeline and Kafka:
// the Delivery interface the pipeline hands each event to, the Inflight
// that carries one event (record, headers, checkpoint place) in one
// allocation, and the Ledger that the pipeline and either delivery share
// to settle it: the tracker, the counters and metrics, write-back, and
// parking in the status table (ParkInOrder).
//
// It guarantees that an event leaves the tracker's count only once it is
// delivered (and its row written back, where its table asks) or its
// status row is committed, never before; that the parks of one key commit
// in stream order (through keyorder); and that a status table refusing
// every write ends the session (Ledger.Stop), fatally (fatal.Error) unless
// a privilege is missing, which can be granted while the relay runs.
// Nothing in it waits for Kafka, and it imports nothing of relay.
package delivery
