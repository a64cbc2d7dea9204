// Package outboxrow is what a parked event's outbox row is to say: the
// [Outcome] the status table's store (package status) decides and the
// write-back (package writeback) writes to the row. It lies beneath both,
// so that neither imports the other.
package outboxrow
