// Package replication reads a PostgreSQL logical replication slot.
//
// [Connect] opens a replication connection; [LookupSlot] reads a slot's
// state and [Conn.CreateSlot] creates a pgoutput slot, a failover slot on
// PostgreSQL 17+ ([Conn.EnableFailover] and [LookupFailover] for one that
// exists). [Conn.TimelineHistory] reads where the server's timeline's
// ancestors ended. [Conn.Stream] runs
// START_REPLICATION (with pgoutput's messages option when
// [Options.Messages] asks for logical decoding messages) and hands each
// XLogData message, in order, to a handler;
// server keepalives go into the checkpoint tracker (between transactions
// only, so a keepalive's position never overtakes an event), and standby
// status updates carry the tracker's safe position at a steady interval and
// whenever the server asks for one. Reading pauses while the tracker's
// in-flight limits are reached, and a stop waits for the end of the
// transaction being read, so that a clean restart sends no event twice.
//
// One goroutine reads and writes the connection; see [Conn.Stream].
package replication
