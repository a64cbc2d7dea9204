// Package replication reads a PostgreSQL logical replication slot.
//
// It opens a replication connection, creates the pgoutput slot when asked,
// and streams: START_REPLICATION, XLogData in order to a handler, server
// keepalives into the checkpoint tracker (between transactions only), and
// standby status updates carrying the tracker's safe position at a steady
// interval and whenever the server asks for one. Reading pauses while the
// tracker's in-flight limits are reached, and a stop waits for the end of the
// transaction being read, so that a clean restart sends no event twice.
package replication
