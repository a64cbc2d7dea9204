// Package writeback writes a delivery's outcome back to the outbox row the
// event came from, for teams whose dashboards and runbooks read a status
// column of their own: after Kafka acknowledged the event, the row's status
// becomes the delivered value and its timestamp column now; after the event
// was parked, the failed value and the error.
//
// Write-back runs beside the stream, never in it: updates are batched (one
// UPDATE … WHERE id = ANY($1) per table and outcome per flush), retried when
// they fail, split to find a row that refuses, and each outcome's [Done] is
// told once its row is written: the relay confirms the event's position
// only then, so a crash loses no outcome, and the relay's in-flight limits
// bound how many wait. The publication publishes inserts only, so these
// updates never come back to the relay.
//
// [Writer.Delivered] and [Writer.Failed], called on the producer's ack
// path, append to a queue (queue.go) and do nothing else; [Writer.Run]
// flushes (flush.go): it takes the queue, keeps the latest outcome of each
// id (held.go), and writes them (write.go) with statements built from the
// table's column types (sql.go), splitting a statement a row refuses; a
// failure is retried with backoff and logged at most once a minute per
// table and cause, and a refused row given up (failure.go).
// writer.go holds the API; columns.go the columns a table's outcome goes
// to.
package writeback
