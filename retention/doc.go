// Package retention keeps the outbox table and the status table small: it
// deletes outbox rows older than the retention period (by the mapped
// timestamp column) and DELIVERED and DEAD status rows older than theirs,
// in batches small enough that no statement holds locks for long. It never
// deletes FAILED, WAITING or PAUSED rows, nor a DEAD row, not skipped,
// that held rows of its key follow (FAILED, DEAD not skipped, WAITING or
// PAUSED: it holds them in order). Nor does it delete an outbox row,
// however old, whose event the poller is still to send: a FAILED, WAITING
// or PAUSED status row holds its id (an adopted or reset row, which the
// poller reads from the outbox row at each attempt).
//
// Deleting a committed outbox row never loses its event: the insert is
// already in the WAL, and the publication publishes inserts only.
//
// A [Cleaner] does the work: [New] names the tables, [Cleaner.RunOnce]
// does one cleanup and reports it in a [Result], and [Cleaner.Run] cleans
// up every [Config.Interval] until its context ends. A cleanup is cheap
// when the outbox table has an index on its timestamp column; see
// [Cleaner] for why, and for the statement that creates one.
package retention
