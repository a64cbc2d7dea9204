// Package retention keeps the outbox table and the status table small: it
// deletes outbox rows older than the retention period (by the mapped
// timestamp column) and DELIVERED and DEAD status rows older than theirs,
// in batches small enough that no statement holds locks for long. It never
// deletes FAILED rows.
//
// Deleting a committed outbox row never loses its event: the insert is
// already in the WAL, and the publication publishes inserts only.
package retention
